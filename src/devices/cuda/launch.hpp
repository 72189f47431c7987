// The CUDA kernels of the catalog (kernels.cu) as the host layer sees them: plain C++, no CUDA
// syntax. Every kernel body is written once, over "virtual blocks" of kCudaBlock threads, and runs
// two ways: launched per job (one grid, each block taking virtual blocks grid-stride), or inside the
// persistent kernel (one resident block per slot that polls a ring in mapped pinned memory and runs
// every virtual block of a job itself: the lowest start latency, for small jobs).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/kernel_plan.hpp"

namespace tandem::devices::cuda {

inline constexpr uint32_t kCudaBlock = 256;  // threads per block (matmul: 16 x 16)
inline constexpr uint32_t kCudaTile = 16;

// A job as a kernel takes it: device-visible pointers and the decoded arguments (POD: it is copied
// into the ring and passed by value to a launch).
struct CudaJobParams {
  uint32_t kernel = 0;  // KernelId
  uint32_t groups = 0;  // reduction blocks (accumulate, work)
  const void* in0 = nullptr;
  const void* in1 = nullptr;
  void* out = nullptr;
  int64_t* partials = nullptr;  // reduction results, partial_words(kernel, groups) words
  uint64_t count = 0;           // accumulate: elements; work: units; dct_quant: blocks
  uint64_t chunk = 0;           // accumulate: elements per reduction block
  uint32_t width = 0, rows = 0, above = 0, below = 0;
  uint32_t m = 0, k = 0, n = 0;
  uint32_t mode = 0;
  uint64_t virtual_blocks = 0;  // how many blocks of work the job is
};

// Fills in groups, chunk and virtual_blocks for `job` (reduction_groups: the most reduction blocks).
void shape_job(const KernelJob& job, uint32_t reduction_groups, CudaJobParams& params);

// Launches the job's kernel on `stream` (launch-per-job mode). Returns the launch's error.
cudaError_t launch_job(const CudaJobParams& params, cudaStream_t stream);
// The raw baseline of the benchmarks: an empty kernel, one thread.
cudaError_t launch_empty(cudaStream_t stream);

// Faults a test injects in place of a job (CudaSlot::inject): a launch the runtime refuses
// (cudaErrorInvalidConfiguration: the slot serves on), a kernel that traps (an error that loses the
// context: every slot of the process leaves service), and a device allocation that fails
// (cudaErrorMemoryAllocation: the job gets NO_MEMORY).
enum class CudaFault : uint8_t { none, bad_launch, trap, no_memory };
// Launches bad_launch's or trap's kernel on `stream`. Returns the launch's error.
cudaError_t launch_fault(CudaFault fault, cudaStream_t stream);

// ---- persistent mode: a ring in mapped pinned host memory, polled by one resident block ----
inline constexpr uint32_t kRingDepth = 64;

// Shared between the host and the resident block. The host writes an entry, then publishes it by
// storing head = its sequence + 1 (release: the entry before the index); the block reads head,
// then the entry (acquire: __threadfence_system between), runs the job, makes its writes visible
// (__threadfence_system in every thread, then a barrier) and stores done = sequence + 1. stop ends
// the block after the jobs already posted. Sequence numbers never wrap (64-bit).
struct alignas(64) CudaRing {
  uint64_t head = 0;
  uint8_t pad0[56];
  uint64_t done = 0;
  uint8_t pad1[56];
  uint32_t stop = 0;
  uint32_t running = 0;  // set by the block when it starts polling
  uint8_t pad2[56];
  CudaJobParams entries[kRingDepth];
};

// Starts the resident block on `stream` (which it then occupies until stop). `ring` is the
// device-side address of the mapped pinned CudaRing.
cudaError_t launch_persistent(CudaRing* ring, cudaStream_t stream);

}  // namespace tandem::devices::cuda
