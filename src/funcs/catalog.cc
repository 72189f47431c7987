// The function catalog: nop, accumulate, the synthetic `work` functions of the thesis, and the
// kernels with Verilog accelerators (kernels.hpp).
#include <array>
#include <cstring>

#include "funcs/function.hpp"
#include "funcs/kernels.hpp"
#include "funcs/ref/list_walk_ref.hpp"

namespace tandem::funcs {

namespace {

int64_t add(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }

void slice_nothing(const Call& whole, uint64_t begin, uint64_t end, Call& part) {
  part = whole;
  part.workload = end - begin;
}

// ---- nop: the null accelerator of the dispatch benchmarks ----
Status nop_describe(std::span<const uint64_t>, uint64_t& workload, BufferList&) {
  workload = 0;
  return Status::ok;
}
int64_t nop_run(const Call&, uint64_t, uint64_t) { return 0; }

// ---- accumulate: int32 array -> int64 sum (thesis Ch4). args: address, element count. Units: bytes.
constexpr uint64_t kMaxAccumulateElements = uint64_t{1} << 40;

Status accumulate_describe(std::span<const uint64_t> args, uint64_t& workload, BufferList& buffers) {
  const uint64_t count = args[1];
  if (count > kMaxAccumulateElements) return Status::invalid_argument;
  workload = count * sizeof(int32_t);
  if (count > 0) buffers.add(0, workload, false);
  return Status::ok;
}

// GCC spells "keep this loop scalar" and "one clone per vector width" as attributes; other compilers
// (clang builds the fuzzers) get the plain loops. Sanitized builds get no clones: the clones' ifunc
// resolver runs before the sanitizer's run-time is initialised (TSan crashes in it).
#if defined(__GNUC__) && !defined(__clang__)
#define TANDEM_SCALAR_LOOP __attribute__((optimize("no-tree-vectorize")))
#else
#define TANDEM_SCALAR_LOOP
#endif
#if defined(__GNUC__) && !defined(__clang__) && !defined(TANDEM_SANITIZED)
#define TANDEM_WIDE_LOOP __attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3")))
#else
#define TANDEM_WIDE_LOOP
#endif

// The software path: the portable loop, one element per iteration (like the thesis's CPU loop); kept
// scalar on purpose so that X_c is the library's software throughput, not the vector unit's.
TANDEM_SCALAR_LOOP int64_t accumulate_sw(const Call& call, uint64_t begin, uint64_t end) {
  const auto* data = static_cast<const int32_t*>(call.buffers[0]);
  int64_t sum = 0;
  for (uint64_t i = begin / sizeof(int32_t); i < end / sizeof(int32_t); ++i) sum += data[i];
  return sum;
}

// The emulated accelerator's datapath: as wide as this CPU allows, so that computing the real result
// takes less than the modelled time at X_a = 2.6 x X_c (the dispatcher reports any lateness).
TANDEM_WIDE_LOOP int64_t sum_wide(const int32_t* data, uint64_t n) {
  int64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += data[i];
  return sum;
}

int64_t accumulate_accel(const Call& call, uint64_t begin, uint64_t end) {
  const auto* data = static_cast<const int32_t*>(call.buffers[0]);
  return sum_wide(data + begin / sizeof(int32_t), end / sizeof(int32_t) - begin / sizeof(int32_t));
}

void accumulate_slice(const Call& whole, uint64_t begin, uint64_t end, Call& part) {
  part = whole;
  part.workload = end - begin;
  part.args[0] = whole.args[0] + begin;
  part.args[1] = (end - begin) / sizeof(int32_t);
  if (whole.buffers[0] != nullptr) part.buffers[0] = static_cast<char*>(whole.buffers[0]) + begin;
}

// ---- work: spend N CPU cycles (thesis 5.5.2). args: units. The accelerator does the same work
// `speedup` times faster; its result is the number of units processed.
constexpr uint64_t kMaxWorkUnits = uint64_t{1} << 50;

Status work_describe(std::span<const uint64_t> args, uint64_t& workload, BufferList&) {
  if (args[0] > kMaxWorkUnits) return Status::invalid_argument;
  workload = args[0];
  return Status::ok;
}

int64_t work_sw(const Call&, uint64_t begin, uint64_t end) {
  burn_cycles(end - begin);
  return static_cast<int64_t>(end - begin);
}

int64_t work_accel(const Call&, uint64_t begin, uint64_t end) { return static_cast<int64_t>(end - begin); }

void work_slice(const Call& whole, uint64_t begin, uint64_t end, Call& part) {
  part = whole;
  part.workload = end - begin;
  part.args[0] = end - begin;
}

// ---- copy: a copy engine's transfer between host and device-local memory (either side may be a device
// address). args: destination, source, bytes. Units: bytes. It runs on copy engines only (the devices
// that offer local memory), never in an accelerator slot.
constexpr uint64_t kMaxCopyBytes = uint64_t{1} << 40;

Status copy_describe(std::span<const uint64_t> args, uint64_t& workload, BufferList& buffers) {
  const uint64_t bytes = args[2];
  if (bytes > kMaxCopyBytes) return Status::invalid_argument;
  workload = bytes;
  if (bytes > 0) {
    buffers.add(0, bytes, true);   // destination
    buffers.add(1, bytes, false);  // source
  }
  return Status::ok;
}

int64_t copy_run(const Call& call, uint64_t begin, uint64_t end) {
  if (end > begin) {
    std::memmove(static_cast<char*>(call.buffers[0]) + begin, static_cast<const char*>(call.buffers[1]) + begin,
                 end - begin);
  }
  return static_cast<int64_t>(end - begin);
}

void copy_slice(const Call& whole, uint64_t begin, uint64_t end, Call& part) {
  part = whole;
  part.workload = end - begin;
  part.args[0] = whole.args[0] + begin;
  part.args[1] = whole.args[1] + begin;
  part.args[2] = end - begin;
  for (int i = 0; i < 2; ++i) {
    if (whole.buffers[i] != nullptr) part.buffers[i] = static_cast<char*>(whole.buffers[i]) + begin;
  }
}

// ---- list_walk: follow a linked list in client memory (seed 004 Table 1). args: head address, max nodes.
// Units: nodes. Its nodes are found only by walking, so it names no buffers: the accelerator reads each
// node through Call::memory (translation, TLB, demand paging), one dependent access after the other.
constexpr uint64_t kMaxListNodes = uint64_t{1} << 32;

Status list_walk_describe(std::span<const uint64_t> args, uint64_t& workload, BufferList&) {
  if (args[1] > kMaxListNodes) return Status::invalid_argument;
  workload = args[0] == 0 ? 0 : args[1];
  return Status::ok;
}

int64_t list_walk_sw(const Call& call, uint64_t, uint64_t end) {
  return ref::list_walk(reinterpret_cast<const tandem_list_node_t*>(static_cast<uintptr_t>(call.args[0])), end);
}

int64_t list_walk_accel(const Call& call, uint64_t begin, uint64_t end) {
  (void)begin;
  if (call.memory == nullptr) return 0;  // never dereferences an untranslated client pointer
  uint64_t sum = 0;
  uint64_t at = call.args[0];
  for (uint64_t i = 0; i < end && at != 0; ++i) {
    tandem_list_node_t node;
    if (!call.memory->read(at, &node, sizeof node)) return 0;  // the port's status() says why
    sum += static_cast<uint64_t>(node.value);
    at = node.next;
  }
  return static_cast<int64_t>(sum);
}

// ---- service_chain: a chain of service requests to the client (FastPath). args: service id, steps, seed.
// Units: requests. Its workload is 0: its time is the client's answers, which no device model predicts,
// so neither the job-size limit nor the modelled time applies (the steps travel in args[1]). Its value comes from the client's answers (funcs/ref/service_chain_ref.hpp), so the
// catalog's run functions cannot compute it: the device asks through DeviceJob::service, the client
// library's software path calls the callback itself.
constexpr uint64_t kMaxServiceSteps = uint64_t{1} << 24;

Status service_chain_describe(std::span<const uint64_t> args, uint64_t& workload, BufferList&) {
  if (args[0] >= TANDEM_SERVICE_IDS || args[1] > kMaxServiceSteps) return Status::invalid_argument;
  workload = 0;
  return Status::ok;
}

int64_t service_chain_none(const Call&, uint64_t, uint64_t) { return 0; }

constexpr FunctionInfo kNop{TANDEM_FN_NOP, "nop", "none", 0, 0, 1, nop_describe, nop_run, nop_run, add,
                            slice_nothing, 1.0, 0, 0};
constexpr FunctionInfo kAccumulate{TANDEM_FN_ACCUMULATE, "accumulate", "bytes", 2, 2, 8,
                                   accumulate_describe, accumulate_sw, accumulate_accel, add,
                                   accumulate_slice, 2.6, 400e-9, 1e-3};

// Speedup 2.5: seed 004 Table 1's software over AISLE time at 128K nodes (68.3 / 27.4 ms).
constexpr FunctionInfo kListWalk{TANDEM_FN_LIST_WALK, "list_walk", "nodes", 2, 2, kNotSplittable,
                                 list_walk_describe, list_walk_sw, list_walk_accel, add, slice_nothing,
                                 2.5, 1e-6, 1e-3, true};

constexpr FunctionInfo kServiceChain{TANDEM_FN_SERVICE_CHAIN, "service_chain", "requests", 3, 3, kNotSplittable,
                                     service_chain_describe, service_chain_none, service_chain_none, add,
                                     slice_nothing, 1.0, 1e-6, 1e-3, false, true};

constexpr FunctionInfo kCopy{TANDEM_FN_COPY, "copy", "bytes", 3, 3, 1, copy_describe, copy_run, copy_run, add,
                             copy_slice, 1.0, 0, 0};

constexpr FunctionInfo make_work(uint16_t id, std::string_view name) {
  return FunctionInfo{id, name, "cycles", 1, 1, 1, work_describe, work_sw, work_accel, add, work_slice,
                      4.0, 1e-6, 1e-3};
}

constexpr std::array<std::string_view, TANDEM_WORK_FUNCTIONS> kWorkNames{
    "work0", "work1", "work2",  "work3",  "work4",  "work5",  "work6",  "work7",
    "work8", "work9", "work10", "work11", "work12", "work13", "work14", "work15"};

struct Catalog {
  std::array<FunctionInfo, TANDEM_WORK_FUNCTIONS> work_variants{};
  FunctionInfo work = make_work(TANDEM_FN_WORK, "work");
  std::array<const FunctionInfo*, TANDEM_FN_MAX> by_id{};
  static constexpr std::array<const FunctionInfo*, 4> kKernels{&kernels::kSobel, &kernels::kMatmul,
                                                                &kernels::kDctQuant, &kernels::kPriorityQueue};
  std::array<const FunctionInfo*, 6 + kKernels.size() + TANDEM_WORK_FUNCTIONS> list{};

  Catalog() {
    by_id[kNop.id] = &kNop;
    by_id[kAccumulate.id] = &kAccumulate;
    by_id[work.id] = &work;
    list[0] = &kNop;
    list[1] = &kAccumulate;
    list[2] = &work;
    for (size_t i = 0; i < kKernels.size(); ++i) {
      by_id[kKernels[i]->id] = kKernels[i];
      list[3 + i] = kKernels[i];
    }
    for (uint16_t i = 0; i < TANDEM_WORK_FUNCTIONS; ++i) {
      work_variants[i] = make_work(static_cast<uint16_t>(TANDEM_FN_WORK_BASE + i), kWorkNames[i]);
      by_id[work_variants[i].id] = &work_variants[i];
      list[3 + kKernels.size() + i] = &work_variants[i];
    }
    by_id[kListWalk.id] = &kListWalk;
    list[list.size() - 3] = &kListWalk;
    by_id[kServiceChain.id] = &kServiceChain;
    list[list.size() - 2] = &kServiceChain;
    by_id[kCopy.id] = &kCopy;
    list.back() = &kCopy;
  }
};

const Catalog& catalog() {
  static const Catalog c;
  return c;
}

}  // namespace

const FunctionInfo* find_function(uint16_t id) { return id < TANDEM_FN_MAX ? catalog().by_id[id] : nullptr; }

const FunctionInfo* find_function(std::string_view name) {
  for (const FunctionInfo* f : catalog().list) {
    if (f->name == name) return f;
  }
  return nullptr;
}

std::span<const FunctionInfo* const> all_functions() { return catalog().list; }

Status describe_call(const FunctionInfo& fn, std::span<const uint64_t> args, Call& call, BufferList& buffers) {
  if (args.size() < fn.min_args || args.size() > TANDEM_MAX_ARG_WORDS) return Status::invalid_argument;
  buffers.count = 0;
  uint64_t workload = 0;
  Status s = fn.describe(args, workload, buffers);
  if (s != Status::ok) return s;
  call.function = fn.id;
  call.workload = workload;
  call.arg_count = static_cast<uint32_t>(args.size());
  if (!args.empty()) std::memcpy(call.args.data(), args.data(), args.size() * sizeof(uint64_t));  // memcpy of null is UB even for 0 bytes
  call.buffers.fill(nullptr);
  return Status::ok;
}

}  // namespace tandem::funcs
