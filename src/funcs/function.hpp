// Accelerated library functions: what a packet's arguments mean, how a call splits over a range of
// work units, how partial results combine, and how the emulated accelerator computes a result.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "model/accel_model.hpp"
#include "abi/status.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::funcs {

inline constexpr uint32_t kMaxBuffers = 4;
// The granularity of a function whose calls cannot be split (e.g. priority_queue): no split point
// but 0 and the end exists for any workload the function accepts.
inline constexpr uint64_t kNotSplittable = uint64_t{1} << 40;

// A buffer argument: args[arg] is a client address of `bytes` bytes.
struct BufferUse {
  uint32_t arg = 0;
  uint64_t bytes = 0;
  bool write = false;
};

struct BufferList {
  std::array<BufferUse, kMaxBuffers> items{};
  uint32_t count = 0;
  void add(uint32_t arg, uint64_t bytes, bool write) { items[count++] = BufferUse{arg, bytes, write}; }
};

// How a function that follows pointers (list_walk) reaches client memory while it runs: reads of client
// virtual addresses through the session's translation (windows, the device's TLB, pages faulted in on
// demand). Without one (the software path) the addresses are this process's own.
class MemoryPort {
 public:
  // Copies `bytes` at client `address` into `dst`; false when it cannot, and status() says why
  // (TRANSLATION_FAULT for memory the session does not own, DISCONNECTED when the client is gone).
  virtual bool read(uint64_t address, void* dst, uint32_t bytes) = 0;
  Status status() const { return status_; }
  // Pages that were not translatable and were made available on demand (faults served), and the time
  // serving them took: the job stalled meanwhile.
  uint64_t faults() const { return faults_; }
  int64_t fault_ns() const { return fault_ns_; }

 protected:
  ~MemoryPort() = default;
  Status status_ = Status::ok;
  uint64_t faults_ = 0;
  int64_t fault_ns_ = 0;
};

// A call as the device sees it: argument words, and every buffer argument already translated into
// an address of the executing process.
struct Call {
  uint16_t function = 0;
  uint64_t workload = 0;
  std::array<uint64_t, TANDEM_MAX_ARG_WORDS> args{};
  uint32_t arg_count = 0;
  std::array<void*, kMaxBuffers> buffers{};  // in BufferList order
  MemoryPort* memory = nullptr;               // functions that follow pointers: how they read (see above)

  // Copies what is in use (a whole Call is over 300 bytes, a typical one under 100): the
  // dispatcher stores one per packet.
  void copy_from(const Call& other) {
    function = other.function;
    workload = other.workload;
    arg_count = other.arg_count;
    std::copy_n(other.args.begin(), std::min<size_t>(other.arg_count, args.size()), args.begin());
    buffers = other.buffers;
    memory = other.memory;
  }
};

// How the software path and the emulated accelerator run a function.
struct FunctionInfo {
  uint16_t id = 0;
  std::string_view name;
  std::string_view units;      // what one work unit is ("bytes", "cycles")
  uint32_t min_args = 0;
  uint32_t max_args = 0;
  uint64_t granularity = 1;    // a split point must be a multiple of this (except the end)
  // Validates argument values; yields the workload they imply and the buffers they reference.
  Status (*describe)(std::span<const uint64_t> args, uint64_t& workload, BufferList& buffers) = nullptr;
  // Software implementation over work units [begin, end) of the call; returns the partial value.
  int64_t (*run_sw)(const Call& call, uint64_t begin, uint64_t end) = nullptr;
  // The value the accelerator computes for units [begin, end) (emulated fabric): real results,
  // without spending the modelled time (e.g. `work` does not burn cycles here).
  int64_t (*run_accel)(const Call& call, uint64_t begin, uint64_t end) = nullptr;
  int64_t (*combine)(int64_t a, int64_t b) = nullptr;
  // Arguments for the sub-range [begin, end) of a call (what a split job carries).
  void (*slice)(const Call& whole, uint64_t begin, uint64_t end, Call& part) = nullptr;
  // Accelerator speed relative to the CPU's software throughput, before calibration.
  double default_speedup = 1.0;
  double default_latency_s = 0;
  double default_reconfig_s = 0;
  // It follows pointers in client memory at run time (through Call::memory), beyond its buffers.
  bool follows_pointers = false;
  // Its jobs ask the client to run callbacks while they run (service_chain): the device drives them
  // through DeviceJob::service; run_sw/run_accel cannot (the client library runs its software path).
  bool uses_service = false;
  // Whether a part that returned `value` wrote its outputs (nullptr: every part does). A copy of an
  // output back from staging (the copy method, a scatter-gather scatter) happens only if it did, so
  // that a part that refused to run (dct_quant's invalid table) leaves the caller's buffer as the
  // software path does: untouched.
  bool (*wrote_outputs)(int64_t value) = nullptr;
};

inline bool wrote_outputs(const FunctionInfo& fn, int64_t value) { return fn.wrote_outputs == nullptr || fn.wrote_outputs(value); }

// The catalog. nullptr for ids that name no function.
const FunctionInfo* find_function(uint16_t id);
const FunctionInfo* find_function(std::string_view name);
std::span<const FunctionInfo* const> all_functions();

// Builds a Call from argument words (client addresses left untranslated in args; buffers empty).
Status describe_call(const FunctionInfo& fn, std::span<const uint64_t> args, Call& call, BufferList& buffers);

// Runs the whole call in software.
inline int64_t run_sw(const FunctionInfo& fn, const Call& call) { return fn.run_sw(call, 0, call.workload); }

// ---- the `work` function's calibrated loop (thesis 5.5.2: one unit is one CPU cycle) ----
// CPU cycles per second that define a work unit (the TSC rate, measured once per process, about 2 ms,
// unless adopted: tandemd's figure, from its hello; false for a figure already known or outside
// [1e6, 1e11] ticks/s).
double cycles_per_second();
bool adopt_cycles_per_second(double ticks_per_second);
// Spends `units` CPU cycles of computation on this thread (progresses only while it runs).
void burn_cycles(uint64_t units);
// Measures the loop's speed now (under 1 ms; each process its own), so that the first `work` call does not.
void prepare_work_loop();

}  // namespace tandem::funcs
