// Random high-level calls of the catalog's data functions against their software references, for the
// differential tests of every runtime (embedded, tandemd) and device (emulated fabric, OpenCL): random
// sizes (empty ones too), every mode (sw, hw, a random alpha, auto) and every method a client can force.
// Each buffer sits at a random offset inside its allocation (as aligned as its function requires, no
// more) with guard bytes around it, and its bytes are random, outputs included. After the call every byte
// of every allocation must equal the reference run's: outputs computed, inputs and guards untouched, and
// nothing written at all by a call that fails.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "client/access.hpp"
#include "client/runtime.hpp"
#include "funcs/function.hpp"
#include "funcs/ref/pq_ref.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::testing {

class RandomCall {
 public:
  struct Memory {
    std::function<void*(size_t)> alloc = [](size_t n) { return ::operator new(n); };
    std::function<void(void*)> free = [](void* p) { ::operator delete(p); };
  };
  static constexpr size_t kGuard = 64;

  // `priority_queue`: the runtime has that function's accelerator too (the fabric, RTL; not OpenCL).
  RandomCall(std::mt19937_64& rng, Memory memory, bool priority_queue = false) : rng_(rng), memory_(std::move(memory)) {
    switch (rng_() % (priority_queue ? 5 : 4)) {
      case 0: accumulate(); break;
      case 1: sobel(); break;
      case 2: matmul(); break;
      case 3: dct_quant(); break;
      default: this->priority_queue(); break;
    }
  }
  ~RandomCall() {
    for (Allocation& a : allocations_) {
      memory_.free(a.mine);
      if (a.device != 0) (void)local_rt_->free_local(a.device);
    }
  }
  // Moves buffer i (with its guards) to device-local memory of `rt` (tandem_buffer_alloc): the call then
  // names its device address. False if the runtime has no room (the buffer stays on the host).
  bool move_to_device(client::Runtime& rt, size_t i) {
    Allocation& a = allocations_[i];
    auto device = rt.alloc_local(a.ref.size());
    if (!device.ok()) return false;
    local_rt_ = &rt;
    a.device = device.value();
    EXPECT_EQ(rt.copy_local(a.device, reinterpret_cast<uintptr_t>(a.mine), a.ref.size()), Status::ok);
    return true;
  }
  // After the call: device-local buffers (guards included) back into host memory for the comparison.
  void fetch_from_device() {
    for (Allocation& a : allocations_) {
      if (a.device != 0) {
        EXPECT_EQ(local_rt_->copy_local(reinterpret_cast<uintptr_t>(a.mine), a.device, a.ref.size()), Status::ok);
      }
    }
  }
  size_t buffer_count() const { return allocations_.size(); }
  bool on_device(size_t i) const { return allocations_[i].device != 0; }
  RandomCall(const RandomCall&) = delete;
  RandomCall& operator=(const RandomCall&) = delete;

  const std::string& name() const { return name_; }
  const funcs::FunctionInfo& function() const { return *funcs::find_function(function_); }

  // The call on this side's buffers (mine = true) or the reference's.
  funcs::Call call(bool mine) const {
    std::vector<uint64_t> args = args_;
    for (const Placed& p : placed_) {
      const Allocation& a = allocations_[p.allocation];
      const uint64_t base = mine && a.device != 0 ? a.device : reinterpret_cast<uintptr_t>(mine ? a.mine : a.ref.data());
      args[p.arg] = base + kGuard + p.offset;
    }
    funcs::Call call;
    funcs::BufferList buffers;
    EXPECT_EQ(funcs::describe_call(function(), args, call, buffers), Status::ok) << name_;
    for (uint32_t i = 0; i < buffers.count; ++i) {
      call.buffers[i] = reinterpret_cast<void*>(static_cast<uintptr_t>(call.args[buffers.items[i].arg]));
    }
    return call;
  }
  int64_t run_reference() { return funcs::run_sw(function(), call(false)); }
  // "" if every byte of every allocation equals the reference's, else where the first differs.
  std::string first_difference() const {
    for (size_t i = 0; i < allocations_.size(); ++i) {
      const Allocation& a = allocations_[i];
      for (size_t b = 0; b < a.ref.size(); ++b) {
        if (a.mine[b] != a.ref[b]) {
          const int64_t at = static_cast<int64_t>(b) - static_cast<int64_t>(kGuard + placed_[i].offset);
          return fmt::format("buffer {} (argument {}), byte {} of {}{}: {} where the reference has {}", i, placed_[i].arg,
                             at, placed_[i].bytes, at < 0 || at >= static_cast<int64_t>(placed_[i].bytes) ? " (a guard)" : "",
                             int{a.mine[b]}, int{a.ref[b]});
        }
      }
    }
    return "";
  }

 private:
  struct Allocation {
    uint8_t* mine = nullptr;
    std::vector<uint8_t> ref;
    uint64_t device = 0;  // device-local copy of `mine` (0: none)
  };
  struct Placed {
    uint32_t arg = 0;
    size_t allocation = 0;
    size_t offset = 0;  // from the end of the leading guard
    size_t bytes = 0;
  };

  // Sizes spread over orders of magnitude, with 0 and 1 likely.
  uint64_t log_uniform(uint64_t max) {
    const double x = std::uniform_real_distribution<double>(0, std::log(static_cast<double>(max) + 1))(rng_);
    return std::min<uint64_t>(max, static_cast<uint64_t>(std::exp(x)) - 1 + rng_() % 2);
  }
  // A buffer of `bytes` for argument `arg` at a random multiple of `align` within a cache line.
  void place(uint32_t arg, size_t bytes, size_t align) {
    Placed p;
    p.arg = arg;
    p.allocation = allocations_.size();
    p.offset = rng_() % 64 / align * align;
    p.bytes = bytes;
    Allocation a;
    a.ref.resize(kGuard + p.offset + bytes + kGuard);
    for (auto& b : a.ref) b = static_cast<uint8_t>(rng_());
    a.mine = static_cast<uint8_t*>(memory_.alloc(a.ref.size()));
    std::memcpy(a.mine, a.ref.data(), a.ref.size());
    allocations_.push_back(std::move(a));
    placed_.push_back(p);
  }
  uint8_t* ref_data(size_t i) { return allocations_[i].ref.data() + kGuard + placed_[i].offset; }
  void sync_mine(size_t i) { std::memcpy(allocations_[i].mine, allocations_[i].ref.data(), allocations_[i].ref.size()); }

  void accumulate() {
    function_ = TANDEM_FN_ACCUMULATE;
    const uint64_t count = log_uniform(300'000);
    args_ = {0, count};
    place(0, count * 4, 4);
    name_ = fmt::format("accumulate of {}", count);
  }
  void sobel() {
    function_ = TANDEM_FN_SOBEL;
    const uint64_t width = 1 + log_uniform(900), rows = log_uniform(400);
    const bool above = rng_() % 4 == 0, below = rng_() % 4 == 0;
    args_ = {0, 0, width, rows | (above ? TANDEM_SOBEL_HALO_ABOVE : 0) | (below ? TANDEM_SOBEL_HALO_BELOW : 0)};
    place(0, width * (rows + above + below), 1);
    place(1, width * rows, 1);
    name_ = fmt::format("sobel {}x{}{}{}", width, rows, above ? " +above" : "", below ? " +below" : "");
  }
  void matmul() {
    function_ = TANDEM_FN_MATMUL;
    const uint64_t m = log_uniform(90), k = log_uniform(90), n = log_uniform(90);
    args_ = {0, 0, 0, TANDEM_MATMUL_DIMS(m, k, n)};
    place(0, m * k * 2, 2);
    place(1, k * n * 2, 2);
    place(2, m * n * 4, 4);
    name_ = fmt::format("matmul {}x{}x{}", m, k, n);
  }
  void dct_quant() {
    function_ = TANDEM_FN_DCT_QUANT;
    const uint64_t blocks = log_uniform(2000);
    const uint32_t mode = 1 + static_cast<uint32_t>(rng_() % 3);
    const bool invalid = mode != TANDEM_DCT_MODE_DCT && rng_() % 6 == 0;  // DCT alone reads no table
    args_ = {0, 0, TANDEM_DCT_ARG(blocks, mode), 0};
    place(0, blocks * (mode == TANDEM_DCT_MODE_QUANTIZE ? 128 : 64), 2);
    place(1, blocks * 128, 2);
    place(3, 128, 2);
    uint8_t* table = ref_data(2);
    for (int i = 0; i < 64; ++i) {
      const uint16_t q = invalid && i == 17 ? 0 : static_cast<uint16_t>(1 + rng_() % 255);
      std::memcpy(table + 2 * i, &q, 2);
    }
    sync_mine(2);
    if (mode == TANDEM_DCT_MODE_QUANTIZE) {  // coefficients within the DCT's range, as the reference requires
      auto* coefs = ref_data(0);
      for (uint64_t i = 0; i < blocks * 64; ++i) {
        const int16_t c = static_cast<int16_t>(static_cast<int64_t>(rng_() % 32768) - 16384);
        std::memcpy(coefs + 2 * i, &c, 2);
      }
      sync_mine(0);
    }
    name_ = fmt::format("dct_quant of {} blocks, mode {}{}", blocks, mode, invalid ? ", invalid table" : "");
  }

  // Commands of every kind (mostly pushes and pops over few priorities, so many ties; some peeks,
  // unknown opcodes and reserved bits), as the RTL tests draw them.
  void priority_queue() {
    function_ = TANDEM_FN_PRIORITY_QUEUE;
    const uint64_t count = log_uniform(3000);
    args_ = {0, 0, count};
    place(0, count * 8, 8);
    place(1, count * 8, 8);
    uint8_t* commands = ref_data(0);
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t r = rng_();
      const uint8_t op = r % 10 < 5 ? 1 : r % 10 < 8 ? 2 : r % 10 == 8 ? 3 : 9;
      uint64_t word = funcs::ref::encode_pq_command({op, static_cast<uint32_t>(r >> 8), static_cast<uint8_t>((r >> 40) % 4 * 60),
                                                     ((r >> 50) & 1) != 0, ((r >> 51) % 4) != 0});
      if (r % 61 == 0) word |= uint64_t{1} << 44;
      std::memcpy(commands + 8 * i, &word, 8);
    }
    sync_mine(0);
    name_ = fmt::format("priority_queue of {} commands", count);
  }

  std::mt19937_64& rng_;
  Memory memory_;
  client::Runtime* local_rt_ = nullptr;  // whose device-local memory holds buffers (move_to_device)
  uint16_t function_ = 0;
  std::string name_;
  std::vector<uint64_t> args_;
  std::vector<Allocation> allocations_;
  std::vector<Placed> placed_;
};

// What run_random_calls may do, and what the runtime can serve.
struct RandomCallOptions {
  // Zero-copy can serve the buffers (the embedded runtime, or session memory under tandemd); where it
  // cannot, a call that forces it may fail with ACCESS_UNSUPPORTED, and then must have written nothing.
  bool zero_copy_reaches = true;
  // A quarter of the calls also have some or all of their buffers in the runtime's device-local memory
  // (tandem_buffer_alloc), and device_local is among the methods forced.
  bool device_local = false;
  // Other threads set the runtime's mode and method too, so a call with host buffers may meet a forced
  // method that refuses them.
  bool choice_shared = false;
  bool priority_queue = false;  // calls of priority_queue too (RandomCall)
};

// `count` random calls through `rt` from `seed`, each in a random mode with a random method forced (or
// the runtime's choice), buffers from `memory`. Returns the calls that went wrong, described in
// `report`; `accelerated` counts the calls with units on the accelerators.
// $TANDEM_RANDOM_CALLS replaces `count` (longer runs); $TANDEM_RANDOM_SEED is added to `seed` (other
// calls; threads with seeds of their own keep them apart).
inline int run_random_calls(client::Runtime& rt, uint64_t seed, int count, const RandomCall::Memory& memory,
                            const RandomCallOptions& options, std::string& report, int* accelerated = nullptr) {
  using client::AccessChoice;
  using client::Mode;
  if (const char* env = std::getenv("TANDEM_RANDOM_CALLS")) count = std::atoi(env);
  if (const char* env = std::getenv("TANDEM_RANDOM_SEED")) seed += std::strtoull(env, nullptr, 10);
  std::mt19937_64 rng(seed);
  int failures = 0;
  const AccessChoice choices[] = {AccessChoice::automatic, AccessChoice::zero_copy, AccessChoice::copy,
                                  AccessChoice::scatter_gather, AccessChoice::device_local};
  for (int i = 0; i < count; ++i) {
    RandomCall c(rng, memory, options.priority_queue);
    const Mode mode = static_cast<Mode>(rng() % 4);
    const double alpha = std::uniform_real_distribution<double>(0, 1)(rng);
    AccessChoice choice = choices[rng() % 4];
    size_t local_buffers = 0;
    if (options.device_local && rng() % 4 == 0) {  // all buffers, or each with even odds
      const bool all = rng() % 2 == 0;
      for (size_t b = 0; b < c.buffer_count(); ++b) {
        if ((all || rng() % 2 == 0) && c.move_to_device(rt, b)) ++local_buffers;
      }
      if (rng() % 3 == 0) choice = AccessChoice::device_local;
    }
    const bool all_local = local_buffers == c.buffer_count();
    rt.set_mode(mode, alpha);
    rt.set_access_choice(choice);
    funcs::Call call = c.call(true);
    int64_t value = -1;
    client::CallReport call_report;
    const Status s = rt.run(c.function(), call, value, &call_report);
    c.fetch_from_device();
    // Where zero-copy cannot serve the buffers, or device_local is forced on buffers not all on the
    // device, the call fails if the runtime plans to accelerate it (a call it runs in software needs no
    // method); a refused call writes nothing.
    const bool refusable = (choice == AccessChoice::zero_copy && !options.zero_copy_reaches) ||
                           (choice == AccessChoice::device_local && !all_local) || (options.choice_shared && !all_local);
    const bool refused = s == Status::access_unsupported && refusable;
    const Status want = refused ? Status::access_unsupported : Status::ok;
    const int64_t ref_value = refused ? value : c.run_reference();
    const std::string difference = c.first_difference();
    if (s != want || value != ref_value || !difference.empty()) {
      ++failures;
      report += fmt::format("call {} of seed {}: {} in mode {}, method choice {}, {} of {} buffers device-local: "
                            "status {} (want {}), value {} (the reference's {}){}{}\n",
                            i, seed, c.name(), client::mode_name(mode, alpha), static_cast<int>(choice), local_buffers,
                            c.buffer_count(), to_string(s), to_string(want), value, ref_value,
                            difference.empty() ? "" : "; ", difference);
    }
    if (accelerated != nullptr && call_report.counters.hw_units > 0) ++*accelerated;
  }
  rt.set_mode(Mode::auto_mode);
  rt.set_access_choice(AccessChoice::automatic);
  return failures;
}

}  // namespace tandem::testing
