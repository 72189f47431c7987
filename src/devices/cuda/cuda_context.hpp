// The CUDA host layer: device discovery and selection, and slots, each a CUDA stream running one
// catalog job at a time. Two ways to start a job:
//   launch      one kernel launch per job (launch.hpp's job kernels) on the slot's stream;
//   persistent  a resident block per slot polls a ring in mapped pinned memory (launch.hpp): the
//               host posts a job with two stores and the block starts it without a launch.
// Two ways for data to reach the device:
//   copy        device-local buffers (cudaMalloc, reused and grown), cudaMemcpyAsync in and out;
//   zero_copy   the kernel reads and writes host memory in place: directly where the device has
//               pageable-memory access (HMM/ATS), else through cudaHostRegister'ed (pinned, mapped) pages.
// In persistent mode both methods stage through per-slot pinned mapped buffers (memcpy on the host),
// since the resident block occupies the stream that copies would use and nothing may be freed (or
// unregistered) while it runs (only zero-copy on a device with pageable access works in place). A buffer in device-local
// memory (CudaContext::attach_local) is used in place by either method and mode.
// Set-up (constructors) throws tandem::Error; everything a job passes through returns a Status.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "abi/status.hpp"
#include "devices/cuda/launch.hpp"
#include "devices/kernel_plan.hpp"
#include "devices/local_memory.hpp"
#include "funcs/function.hpp"

namespace tandem::devices::cuda {

// "what: message (cudaErrorName)", and the status an error maps to (no_memory, device_error).
std::string cuda_message(std::string_view what, cudaError_t error);
Status status_from_cuda(cudaError_t error);
// An error after which the process's context is unusable ("the process must be terminated and
// relaunched", driver_types.h): an illegal address, a trap or assert, a launch timeout... Every later
// call of the process on that device fails, so the device cannot be rebuilt slot by slot.
bool cuda_error_loses_context(int error);

// A set-up that failed in CUDA (a slot's stream or persistent block, a copy engine's bounce buffer),
// with CUDA's error: a slot's rebuild that fails tells a lost context from a passing shortage by it.
class CudaError : public Error {
 public:
  CudaError(cudaError_t error, std::string_view what) : Error(status_from_cuda(error), cuda_message(what, error)), error_(error) {}
  cudaError_t cuda_error() const { return error_; }

 private:
  cudaError_t error_;
};

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
  uint64_t global_mem_bytes = 0;
  bool can_map_host_memory = false;
  bool pageable_memory_access = false;  // kernels may use any host pointer
  int driver_version = 0, runtime_version = 0;
};

// Every CUDA device; a failure (no driver, no device, a driver older than the runtime) is a status
// with CUDA's message, e.g. "cuda: no device (cudaGetDeviceCount: CUDA driver version is insufficient
// for CUDA runtime version)".
Result<std::vector<CudaDeviceInfo>> discover_cuda_devices();
std::string describe_cuda_device(const CudaDeviceInfo& device);
// A decimal index or a case-insensitive part of the name ("" = the first).
Result<CudaDeviceInfo> select_cuda_device(const std::vector<CudaDeviceInfo>& devices, std::string_view selector);

enum class CudaAccess : uint8_t { copy, zero_copy };
enum class CudaMode : uint8_t { launch, persistent };
std::string_view access_name(CudaAccess access);
std::string_view mode_name(CudaMode mode);

struct CudaOptions {
  std::string device;             // selector
  uint32_t reduction_groups = 0;  // blocks of a reduction job; 0: 4 per multiprocessor
};

class CudaContext {
 public:
  // Selects the device and makes it current (its primary context). Throws tandem::Error.
  explicit CudaContext(const CudaOptions& options);
  const CudaDeviceInfo& device() const { return device_; }
  // Every device discovery found, one line each ("device 0: NVIDIA H200 [sm_90, ...]"), for `tandem status`.
  const std::vector<std::string>& found() const { return found_; }
  uint32_t reduction_groups() const { return reduction_groups_; }
  // Makes this device current on the calling thread (the runtime API's device is per thread).
  Status make_current() const;
  // The same, with CUDA's error (a cudaError_t; cudaSuccess is 0): a lost context's sticky error may
  // first show here, and CudaSlot::check classifies it like any other call's.
  int select_device() const;

  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;
  // Device-local memory (the runtime's LocalMemory, docs/devices.md): one cudaMalloc allocation of
  // `bytes` that the host addresses [base, base + bytes) stand for; they are never touched. Throws.
  // reserve_local() makes the allocation ahead (before persistent blocks start); attach_local() uses
  // it when it is large enough, else allocates.
  void reserve_local(uint64_t bytes);
  void attach_local(const char* base, uint64_t bytes);
  const LocalWindow& local() const { return local_window_; }
  char* local_device() const { return local_device_; }  // the device address of offset 0

  // Persistent blocks resident on the device. cudaFree and cudaFreeHost wait for the whole device,
  // which a resident block never leaves idle: while one is resident, frees are deferred until the
  // last one stops (or the context ends). The count is this object's: a process must not free CUDA
  // memory through another CudaContext of the same GPU while this one's blocks are resident.
  void block_started();
  void block_stopped();
  void free_host(void* pinned);   // cudaFreeHost, now or deferred
  void free_device(void* memory); // cudaFree, now or deferred

 private:
  void free_when_idle(void* memory, bool pinned);  // now, or once no block is resident
  void free_deferred();  // with mutex_ held and no block resident

  CudaDeviceInfo device_;
  std::vector<std::string> found_;
  uint32_t reduction_groups_ = 0;
  LocalWindow local_window_;
  char* local_device_ = nullptr;
  uint64_t local_reserved_ = 0;
  std::mutex mutex_;
  int resident_blocks_ = 0;
  std::vector<std::pair<void*, bool>> deferred_;  // (memory, pinned host memory)
};

class CudaSlot {
 public:
  // A non-blocking stream; in persistent mode also the ring, the reduction partials and
  // `persistent_staging_bytes` of pinned staging per buffer role, all allocated before the resident
  // block starts (nothing is allocated or freed while it runs). Throws.
  CudaSlot(CudaContext& context, uint32_t index, CudaMode mode, uint64_t persistent_staging_bytes = uint64_t{8} << 20);
  ~CudaSlot();
  CudaSlot(const CudaSlot&) = delete;
  CudaSlot& operator=(const CudaSlot&) = delete;

  CudaMode mode() const { return mode_; }
  cudaStream_t stream() const { return stream_; }
  uint32_t index() const { return index_; }

  // Starts `job` (planned from `call`) and returns at once.
  Status enqueue(const funcs::Call& call, const KernelJob& job, CudaAccess access);
  // Never blocks: ok with *finished set once the job is done, or the failure (device_error,
  // no_memory) with last_error() saying what happened.
  Status query(bool& finished);
  // After query() said finished: copies staged results out (persistent mode), releases per-job
  // registrations, and returns the call's value.
  int64_t finish();
  const std::string& last_error() const { return last_error_; }
  // The CUDA error behind the last failure (cudaSuccess when it was not CUDA's: a refused buffer...).
  int last_cuda_error() const { return last_cuda_error_; }
  // Tests: the next job enqueued (launch mode) does `fault` instead of its work (launch.hpp).
  void inject(CudaFault fault) { injected_ = fault; }

  // The whole job synchronously, waiting at most `timeout_ns` (tests, calibration, raw baselines).
  Result<int64_t> run(const funcs::Call& call, CudaAccess access, int64_t timeout_ns = 60'000'000'000);

  // Raw baselines for the benchmarks: an empty kernel launched and synchronized on this slot's
  // stream (launch mode only), and its round trip through the ring (persistent mode only).
  Status raw_empty_launch();

  // A copy engine's transfer (a launch-mode slot serves as its stream): host to device-local memory,
  // back, or within it (overlapping allowed), waited for at most `timeout_ns`: past it, TIMEOUT, and
  // the stream is abandoned for a new one. Host to host is a memmove.
  Status transfer(void* dst, const void* src, uint64_t bytes, int64_t timeout_ns);
  // Reads [offset, offset + bytes) of device-local memory into `dst` (dct_quant's table), waited for.
  Status read_local(uint64_t offset, void* dst, uint64_t bytes);
  // Allocates the bounce buffer of overlapping transfers now (a copy engine made before persistent
  // blocks start). Throws.
  void reserve_bounce();

 private:
  Status fail(Status status, std::string message);
  Status check(int error, const char* what);
  Status device_pointer(uint32_t role, const KernelBuffer& buffer, void* host, CudaAccess access, void*& out);
  Status ensure_device_buffer(uint32_t role, uint64_t bytes);  // launch mode's copy method, grown
  void release_registrations();
  void stop_persistent();

  CudaContext& context_;
  uint32_t index_;
  CudaMode mode_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  // Per role of the job in flight: its buffer is in device-local memory (the kernel works in place).
  std::array<bool, 3> in_local_{};
  void* bounce_ = nullptr;  // overlapping copies within local memory go through it (kBounceBytes)
  static constexpr uint64_t kBounceBytes = uint64_t{1} << 20;
  // Device buffers (copy in launch mode) and pinned mapped staging (persistent mode, either method
  // without pageable-memory access).
  std::array<void*, 3> device_buffers_{};
  std::array<uint64_t, 3> device_sizes_{};
  std::array<void*, 3> pinned_buffers_{};
  std::array<uint64_t, 3> pinned_sizes_{};
  // Reduction partials in pinned mapped memory (the kernels write them in place).
  int64_t* partials_ = nullptr;
  uint32_t partial_capacity_ = 0;
  // cudaHostRegister'ed ranges of the job in flight (zero-copy without pageable access).
  std::array<void*, 3> registered_{};
  // Persistent mode.
  CudaRing* ring_ = nullptr;         // host address (pinned, mapped)
  CudaRing* ring_device_ = nullptr;  // the same memory as the device addresses it
  uint64_t posted_ = 0;              // sequence number of the job in flight + 1
  bool block_resident_ = false;      // counted in the context's resident blocks
  // The job in flight.
  KernelJob job_{};
  CudaJobParams params_{};
  funcs::Call call_{};
  CudaAccess access_ = CudaAccess::copy;
  bool in_flight_ = false;
  std::string last_error_;
  int last_cuda_error_ = 0;
  CudaFault injected_ = CudaFault::none;
  Status enqueue_fault(CudaFault fault);
};

// The CUDA runtime's answer to "is there a usable GPU?": "" if yes, else why not (the tests print
// it when they skip).
std::string cuda_unavailable_reason();

}  // namespace tandem::devices::cuda
