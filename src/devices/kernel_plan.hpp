// What a catalog call asks of a data-parallel device (OpenCL, CUDA): which kernel, which of the
// call's buffers it reads and writes and how large they are, and the decoded arguments. Both
// backends plan a job with plan_kernel_job() and only map the buffers and launch differently, so
// argument decoding, size checks and the value a call returns live in one place.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "abi/status.hpp"
#include "devices/local_memory.hpp"
#include "funcs/function.hpp"

namespace tandem::devices {

// The kernels a data-parallel device has; the work variants (work0..15) share `work`'s.
enum class KernelId : uint8_t { nop, accumulate, work, sobel, matmul, dct_quant };
inline constexpr size_t kKernelCount = 6;

std::string_view kernel_name(KernelId id);  // "accumulate"

// The kernel that runs catalog function `function`; false for a function without one
// (priority_queue: a sequential command stream gains nothing on a data-parallel device).
bool kernel_for_function(uint16_t function, KernelId& out);

struct KernelBuffer {
  uint32_t slot = 0;      // index into funcs::Call::buffers
  uint64_t bytes = 0;
  bool read = false;      // the kernel reads it (copied in)
  bool write = false;     // the kernel writes it (copied out)
  uint32_t element = 1;   // element size in bytes: its address must be a multiple for zero-copy
};

// Kernel roles of the buffers, in the order the kernels take them.
struct KernelJob {
  KernelId kernel = KernelId::nop;
  std::array<KernelBuffer, 3> buffers{};
  uint32_t buffer_count = 0;
  // Nothing to launch: the call's value is `value` (an empty workload, or a dct_quant table that
  // the reference rejects: value 1, nothing written).
  bool launch = true;
  int64_t value = 0;
  // Decoded arguments (the ones the kernel uses).
  uint64_t count = 0;     // accumulate: elements; work: units; dct_quant: blocks
  uint32_t width = 0, rows = 0, above = 0, below = 0;  // sobel
  uint32_t m = 0, k = 0, n = 0;                          // matmul
  uint32_t mode = 0;                                     // dct_quant
};

// Plans `call` (already validated by the catalog's describe(); buffers translated). invalid_argument
// for a function without a kernel. `table`: dct_quant's quantization table where the host can read it
// (a copy of one in a device's own memory); null: call.buffers[2].
Status plan_kernel_job(const funcs::Call& call, KernelJob& job, const void* table = nullptr);

// plan_kernel_job on a device whose own local memory (`local`) the host cannot read: dct_quant's table,
// when it lies there, is read first by `read(offset, dst, bytes)` (waited for: 128 bytes) and the plan
// validates that copy. The status of a read that failed (`read_failed` set), else of the plan.
template <class Read>
Status plan_device_job(const funcs::Call& call, const LocalWindow& local, KernelJob& job, bool& read_failed, Read&& read) {
  read_failed = false;
  std::array<uint16_t, 64> copy{};
  const void* table = nullptr;
  if (call.function == TANDEM_FN_DCT_QUANT && call.buffers[2] != nullptr) {
    if (const uint64_t offset = local.offset_of(call.buffers[2], sizeof copy); offset != LocalWindow::kNotLocal) {
      if (Status s = read(offset, copy.data(), sizeof copy); s != Status::ok) {
        read_failed = true;
        return s;
      }
      table = copy.data();
    }
  }
  return plan_kernel_job(call, job, table);
}

// Reductions: the partial words a reduction kernel writes for `groups` work-groups, and the call's
// value from them (accumulate: the wrapping sum; work: the total steps; the state words are skipped).
uint32_t partial_words(KernelId kernel, uint32_t groups);
int64_t reduce_partials(KernelId kernel, const int64_t* partials, uint32_t groups);

}  // namespace tandem::devices
