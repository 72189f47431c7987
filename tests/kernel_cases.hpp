// Catalog calls with random inputs for the device backends' bit-exactness tests (OpenCL, CUDA): each
// case owns its inputs, a device output and a reference output (each followed by guard bytes that
// must stay untouched), a Call for the device and one for the software reference, and compares.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "funcs/function.hpp"
#include "funcs/ref/dct_quant_ref.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::testing {

class KernelCase {
 public:
  static constexpr size_t kGuard = 64;
  // Where cases put their buffers: plain memory by default; a runtime's session memory (alloc/free)
  // for jobs that go through tandem (the engine translates only registered memory).
  struct Memory {
    std::function<void*(size_t)> alloc;
    std::function<void(void*)> free;
  };
  static Memory& memory() {
    static Memory m;
    return m;
  }
  KernelCase() = default;
  ~KernelCase() {
    for (void* p : placed_) memory().free(p);
  }
  KernelCase(const KernelCase&) = delete;
  KernelCase& operator=(const KernelCase&) = delete;
  static constexpr uint8_t kFill = 0xa5;

  std::string name;
  uint16_t function = 0;

  // The call the device runs (outputs into device buffers) and the reference's twin.
  funcs::Call device_call() const { return calls_[0]; }
  // The reference's value (runs the software path once).
  int64_t reference_value() {
    if (!ref_done_) {
      ref_value_ = funcs::run_sw(*funcs::find_function(function), calls_[1]);
      ref_done_ = true;
    }
    return ref_value_;
  }
  // Every output byte equal to the reference's, and the guard bytes after each output untouched.
  ::testing::AssertionResult outputs_match() {
    (void)reference_value();
    for (const Output& o : outputs_) {
      for (size_t i = 0; i < o.bytes; ++i) {
        if (o.device[i] != o.reference[i]) {
          return ::testing::AssertionFailure() << name << ": output byte " << i << " of " << o.bytes << " is "
                                               << int{o.device[i]} << ", the reference's " << int{o.reference[i]};
        }
      }
      for (size_t i = o.bytes; i < o.bytes + kGuard; ++i) {
        if (o.device[i] != kFill) return ::testing::AssertionFailure() << name << ": wrote past its output (byte " << i << ")";
      }
    }
    return ::testing::AssertionSuccess();
  }

  // ---- the cases ----
  static std::unique_ptr<KernelCase> nop() {
    auto c = std::make_unique<KernelCase>();
    c->init(TANDEM_FN_NOP, "nop", {});
    return c;
  }
  static std::unique_ptr<KernelCase> work(uint64_t units, uint16_t function = TANDEM_FN_WORK) {
    auto c = std::make_unique<KernelCase>();
    c->init(function, "work/" + std::to_string(units), {units});
    return c;
  }
  // `offset` elements into the allocation: unaligned starts (4-byte aligned, not 128).
  static std::unique_ptr<KernelCase> accumulate(uint64_t count, uint64_t offset, uint64_t seed, bool extremes = false) {
    auto c = std::make_unique<KernelCase>();
    auto* data = c->input((count + offset) * 4);
    std::mt19937_64 rng(seed);
    for (uint64_t i = 0; i < count + offset; ++i) {
      int32_t v = static_cast<int32_t>(rng());
      if (extremes) v = (i % 3 == 0) ? INT32_MIN : (i % 3 == 1 ? INT32_MAX : INT32_MIN + 1);
      std::memcpy(data + i * 4, &v, 4);
    }
    c->init(TANDEM_FN_ACCUMULATE, "accumulate/" + std::to_string(count) + "+" + std::to_string(offset),
            {reinterpret_cast<uint64_t>(data + offset * 4), count});
    return c;
  }
  static std::unique_ptr<KernelCase> sobel(uint64_t width, uint64_t rows, bool above, bool below, uint64_t seed) {
    auto c = std::make_unique<KernelCase>();
    const uint64_t in_rows = rows + above + below;
    auto* in = c->input(width * in_rows);
    std::mt19937_64 rng(seed);
    for (uint64_t i = 0; i < width * in_rows; ++i) in[i] = static_cast<uint8_t>(rng() >> 56);
    const size_t out = c->output(width * rows);
    c->init(TANDEM_FN_SOBEL,
            "sobel/" + std::to_string(width) + "x" + std::to_string(rows) + (above ? "+above" : "") + (below ? "+below" : ""),
            {reinterpret_cast<uint64_t>(in), c->output_address(out), width,
             rows | (above ? TANDEM_SOBEL_HALO_ABOVE : 0) | (below ? TANDEM_SOBEL_HALO_BELOW : 0)});
    return c;
  }
  static std::unique_ptr<KernelCase> matmul(uint64_t m, uint64_t k, uint64_t n, uint64_t seed, bool extremes = false) {
    auto c = std::make_unique<KernelCase>();
    auto* a = reinterpret_cast<int16_t*>(c->input(std::max<uint64_t>(m * k, 1) * 2));
    auto* b = reinterpret_cast<int16_t*>(c->input(std::max<uint64_t>(k * n, 1) * 2));
    std::mt19937_64 rng(seed);
    for (uint64_t i = 0; i < m * k; ++i) a[i] = extremes ? INT16_MIN : static_cast<int16_t>(rng());
    for (uint64_t i = 0; i < k * n; ++i) b[i] = extremes ? INT16_MIN : static_cast<int16_t>(rng());
    const size_t out = c->output(m * n * 4);
    c->init(TANDEM_FN_MATMUL,
            "matmul/" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n),
            {reinterpret_cast<uint64_t>(a), reinterpret_cast<uint64_t>(b), c->output_address(out), TANDEM_MATMUL_DIMS(m, k, n)});
    return c;
  }
  // quality: of the JPEG luma table; 0: a table with an invalid entry (the call returns 1).
  static std::unique_ptr<KernelCase> dct(uint64_t blocks, uint32_t mode, int quality, uint64_t seed) {
    auto c = std::make_unique<KernelCase>();
    const uint64_t in_bytes = blocks * (mode == TANDEM_DCT_MODE_QUANTIZE ? 128 : 64);
    auto* in = c->input(std::max<uint64_t>(in_bytes, 2));
    std::mt19937_64 rng(seed);
    if (mode == TANDEM_DCT_MODE_QUANTIZE) {
      auto* coefs = reinterpret_cast<int16_t*>(in);  // the DCT's range: |c| < 2^14 (and the extremes)
      for (uint64_t i = 0; i < blocks * 64; ++i) coefs[i] = static_cast<int16_t>(static_cast<int64_t>(rng() % 32768) - 16384);
      if (blocks > 0) coefs[0] = INT16_MIN + 1, coefs[1] = INT16_MAX;
    } else {
      for (uint64_t i = 0; i < in_bytes; ++i) in[i] = static_cast<uint8_t>(rng() >> 56);
      if (blocks > 1) std::memset(in + 64, 255, 64), (blocks > 2 ? (void)std::memset(in + 128, 0, 64) : (void)0);
    }
    auto* table = reinterpret_cast<uint16_t*>(c->input(128));
    const funcs::ref::QuantTable t = funcs::ref::jpeg_luma_quant_table(quality == 0 ? 50 : quality, false);
    std::memcpy(table, t.data(), 128);
    if (quality == 0) table[17] = 0;
    const size_t out = c->output(blocks * 128);
    std::vector<uint64_t> args{reinterpret_cast<uint64_t>(in), c->output_address(out), TANDEM_DCT_ARG(blocks, mode)};
    if (mode != TANDEM_DCT_MODE_DCT) args.push_back(reinterpret_cast<uint64_t>(table));
    c->init(TANDEM_FN_DCT_QUANT,
            "dct_quant/" + std::to_string(blocks) + "/mode" + std::to_string(mode) + "/q" + std::to_string(quality), args);
    return c;
  }

 private:
  struct Output {
    size_t bytes = 0;
    uint8_t* device = nullptr;
    uint8_t* reference = nullptr;
  };

  uint8_t* input(size_t bytes) {
    if (memory().alloc) {
      placed_.push_back(memory().alloc(bytes + 128));
      return static_cast<uint8_t*>(placed_.back());
    }
    // 128-byte aligned storage (what OpenCL devices want for zero-copy); cases offset into it.
    storage_.push_back(std::make_unique<Block[]>(bytes / sizeof(Block) + 1));
    return reinterpret_cast<uint8_t*>(storage_.back().get());
  }
  size_t output(size_t bytes) {
    Output o;
    o.bytes = bytes;
    o.device = input(bytes + kGuard);
    o.reference = input(bytes + kGuard);
    std::memset(o.device, kFill, bytes + kGuard);
    std::memset(o.reference, kFill, bytes + kGuard);
    outputs_.push_back(o);
    return outputs_.size() - 1;
  }
  uint64_t output_address(size_t index) const { return reinterpret_cast<uint64_t>(outputs_[index].device); }

  void init(uint16_t fn, std::string case_name, const std::vector<uint64_t>& args) {
    function = fn;
    name = std::move(case_name);
    const funcs::FunctionInfo* info = funcs::find_function(fn);
    ASSERT_NE(info, nullptr);
    funcs::BufferList list;
    ASSERT_EQ(funcs::describe_call(*info, args, calls_[0], list), Status::ok) << name;
    for (uint32_t i = 0; i < list.count; ++i) calls_[0].buffers[i] = reinterpret_cast<void*>(args[list.items[i].arg]);
    calls_[1] = calls_[0];
    for (uint32_t i = 0; i < list.count; ++i) {
      for (const Output& o : outputs_) {
        if (calls_[0].buffers[i] == o.device) calls_[1].buffers[i] = o.reference;
      }
    }
  }

  struct alignas(128) Block {
    uint8_t bytes[128];
  };
  std::vector<std::unique_ptr<Block[]>> storage_;
  std::vector<void*> placed_;
  std::vector<Output> outputs_;
  std::array<funcs::Call, 2> calls_{};
  bool ref_done_ = false;
  int64_t ref_value_ = 0;
};

}  // namespace tandem::testing
