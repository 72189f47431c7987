#include "devices/cuda/cuda_context.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <algorithm>
#include <cstring>
#include <thread>

#include "base/clock.hpp"
#include "devices/copy_engines.hpp"
#include "devices/selector.hpp"

namespace tandem::devices::cuda {

std::string cuda_message(std::string_view what, cudaError_t error) {
  return fmt::format("{}: {} ({})", what, cudaGetErrorString(error), cudaGetErrorName(error));
}

Status status_from_cuda(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return Status::ok;
    case cudaErrorMemoryAllocation: return Status::no_memory;
    default: return Status::device_error;
  }
}

bool cuda_error_loses_context(int error) {
  switch (static_cast<cudaError_t>(error)) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorMpsClientTerminated:
      return true;
    default:
      // Newer toolkits' (by number, so that older headers compile): cudaErrorContained (226),
      // cudaErrorTensorMemoryLeak (721), cudaErrorExternalDevice (911).
      return error == 226 || error == 721 || error == 911;
  }
}

namespace {

// Waits for the resident block or a stream with a bound: the device may be hung.
bool wait_stream(cudaStream_t stream, int64_t timeout_ns) {
  const int64_t deadline = now_ns() + timeout_ns;
  while (cudaStreamQuery(stream) == cudaErrorNotReady) {
    if (now_ns() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

}  // namespace

std::string_view access_name(CudaAccess access) { return access == CudaAccess::copy ? "copy" : "zero_copy"; }
std::string_view mode_name(CudaMode mode) { return mode == CudaMode::launch ? "launch" : "persistent"; }

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda_message("cudaGetDeviceCount", error);
  }
  return count > 0 ? std::string() : "cudaGetDeviceCount: no CUDA device";
}

Result<std::vector<CudaDeviceInfo>> discover_cuda_devices() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return Result<std::vector<CudaDeviceInfo>>(Status::device_error, "cuda: no device (" + cuda_message("cudaGetDeviceCount", error) + ")");
  }
  if (count == 0) return Result<std::vector<CudaDeviceInfo>>(Status::device_error, "cuda: no device (cudaGetDeviceCount: 0)");
  std::vector<CudaDeviceInfo> devices;
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    CudaDeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.major = prop.major;
    d.minor = prop.minor;
    d.multiprocessors = prop.multiProcessorCount;
    d.global_mem_bytes = prop.totalGlobalMem;
    d.can_map_host_memory = prop.canMapHostMemory != 0;
    d.pageable_memory_access = prop.pageableMemoryAccess != 0;
    d.driver_version = driver;
    d.runtime_version = runtime;
    devices.push_back(std::move(d));
  }
  return devices;
}

std::string describe_cuda_device(const CudaDeviceInfo& d) {
  return fmt::format("{} [sm_{}{}, {} multiprocessors, {:.1f} GiB, {}{}, driver {}, runtime {}]", d.name, d.major, d.minor,
                     d.multiprocessors, static_cast<double>(d.global_mem_bytes) / (1u << 30),
                     d.can_map_host_memory ? "maps host memory" : "cannot map host memory",
                     d.pageable_memory_access ? ", pageable memory access" : "", d.driver_version, d.runtime_version);
}

Result<CudaDeviceInfo> select_cuda_device(const std::vector<CudaDeviceInfo>& devices, std::string_view selector) {
  // Digits are an index up to the highest the discovery saw (it leaves out a device it cannot query).
  size_t indexes = 0;
  for (const CudaDeviceInfo& d : devices) indexes = std::max(indexes, static_cast<size_t>(d.index) + 1);
  for (const CudaDeviceInfo& d : devices) {
    if (selector_matches(selector, static_cast<uint32_t>(d.index), indexes, {d.name})) return d;
  }
  std::string found;
  for (const CudaDeviceInfo& d : devices) found += fmt::format("\n  device {}: {}", d.index, describe_cuda_device(d));
  return Result<CudaDeviceInfo>(Status::device_error,
                                fmt::format("cuda: no device matches \"{}\"; found:{}", selector, found.empty() ? " none" : found));
}

// ---------------------------------------------------------------------------------------------------
// CudaContext

CudaContext::CudaContext(const CudaOptions& options) {
  auto devices = discover_cuda_devices();
  for (const CudaDeviceInfo& d : devices.expect()) found_.push_back(fmt::format("device {}: {}", d.index, describe_cuda_device(d)));
  device_ = select_cuda_device(devices.expect(), options.device).expect();
  if (const auto e = static_cast<cudaError_t>(select_device()); e != cudaSuccess) {
    (void)cudaGetLastError();
    throw CudaError(e, "cuda: making device " + device_.name + " current");
  }
  reduction_groups_ = options.reduction_groups != 0 ? options.reduction_groups
                                                    : static_cast<uint32_t>(std::max(device_.multiprocessors, 1) * 4);
}

int CudaContext::select_device() const { return cudaSetDevice(device_.index); }

Status CudaContext::make_current() const { return select_device() == cudaSuccess ? Status::ok : Status::device_error; }

CudaContext::~CudaContext() {
  if (make_current() != Status::ok) return;
  std::lock_guard lock(mutex_);
  if (resident_blocks_ > 0) return;  // a block that never stopped: its memory cannot be freed
  free_deferred();
  if (local_device_ != nullptr) (void)cudaFree(local_device_);
}

void CudaContext::reserve_local(uint64_t bytes) {
  void* p = nullptr;
  cudaError_t e = static_cast<cudaError_t>(select_device());
  if (e == cudaSuccess) e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw CudaError(e, fmt::format("cuda: device-local memory of {} MiB", bytes >> 20));
  }
  if (local_device_ != nullptr) free_device(local_device_);
  local_device_ = static_cast<char*>(p);
  local_reserved_ = bytes;
}

void CudaContext::attach_local(const char* base, uint64_t bytes) {
  if (local_device_ == nullptr || local_reserved_ < bytes) reserve_local(bytes);
  local_window_ = LocalWindow{base, bytes};
}

void CudaContext::block_started() {
  std::lock_guard lock(mutex_);
  ++resident_blocks_;
}

void CudaContext::block_stopped() {
  std::lock_guard lock(mutex_);
  if (--resident_blocks_ == 0) free_deferred();
}

void CudaContext::free_host(void* pinned) { free_when_idle(pinned, true); }

void CudaContext::free_device(void* memory) { free_when_idle(memory, false); }

void CudaContext::free_when_idle(void* memory, bool pinned) {
  if (memory == nullptr) return;
  std::lock_guard lock(mutex_);
  if (resident_blocks_ > 0) {
    deferred_.emplace_back(memory, pinned);
    return;
  }
  (void)(pinned ? cudaFreeHost(memory) : cudaFree(memory));
}

void CudaContext::free_deferred() {
  for (auto [memory, pinned] : deferred_) (void)(pinned ? cudaFreeHost(memory) : cudaFree(memory));
  deferred_.clear();
}

// ---------------------------------------------------------------------------------------------------
// CudaSlot

CudaSlot::CudaSlot(CudaContext& context, uint32_t index, CudaMode mode, uint64_t persistent_staging_bytes)
    : context_(context), index_(index), mode_(mode) {
  cudaError_t e = static_cast<cudaError_t>(context.select_device());
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw CudaError(e, fmt::format("cuda slot {}: making the device current", index));
  }
  e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&done_, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
    throw CudaError(e, fmt::format("cuda slot {}: stream", index));
  }
  if (mode == CudaMode::persistent) {
    // Everything the block's jobs use is allocated before it starts, so that nothing of it is ever
    // freed (or grown) while a block is resident: cudaFreeHost would wait for an idle device.
    void* ring = nullptr;
    e = cudaHostAlloc(&ring, sizeof(CudaRing), cudaHostAllocMapped);
    if (e == cudaSuccess) {
      ring_ = new (ring) CudaRing();
      e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&ring_device_), ring, 0);
    }
    const uint32_t groups = context.reduction_groups();
    const uint32_t words = std::max(partial_words(KernelId::accumulate, groups), partial_words(KernelId::work, groups));
    void* partials = nullptr;
    if (e == cudaSuccess) e = cudaHostAlloc(&partials, words * sizeof(int64_t), cudaHostAllocMapped);
    if (e == cudaSuccess) {
      partials_ = static_cast<int64_t*>(partials);
      partial_capacity_ = words;
    }
    for (uint32_t role = 0; role < 3 && e == cudaSuccess; ++role) {
      e = cudaHostAlloc(&pinned_buffers_[role], persistent_staging_bytes, cudaHostAllocMapped);
      if (e == cudaSuccess) pinned_sizes_[role] = persistent_staging_bytes;
    }
    if (e == cudaSuccess) e = launch_persistent(ring_device_, stream_);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      for (void*& p : pinned_buffers_) context.free_host(std::exchange(p, nullptr));
      context.free_host(std::exchange(partials_, nullptr));
      context.free_host(std::exchange(ring_, nullptr));
      (void)cudaEventDestroy(done_);
      (void)cudaStreamDestroy(stream_);
      throw CudaError(e, fmt::format("cuda slot {}: persistent block", index));
    }
    block_resident_ = true;
    context.block_started();
  }
}

void CudaSlot::stop_persistent() {
  if (!block_resident_) return;
  std::atomic_ref<uint32_t>(ring_->stop).store(1, std::memory_order_release);
  if (!wait_stream(stream_, 2'000'000'000)) {
    // Still resident: the context keeps counting it, so its memory (and every later free) is never released.
    last_error_ = fmt::format("cuda slot {}: the persistent block did not stop", index_);
    return;
  }
  block_resident_ = false;
  context_.block_stopped();
}

CudaSlot::~CudaSlot() {
  (void)context_.make_current();
  if (in_flight_ && mode_ == CudaMode::launch) (void)wait_stream(stream_, 2'000'000'000);
  stop_persistent();
  release_registrations();
  for (void* p : device_buffers_) context_.free_device(p);
  context_.free_device(bounce_);
  for (void* p : pinned_buffers_) context_.free_host(p);
  context_.free_host(partials_);
  context_.free_host(ring_);
  (void)cudaEventDestroy(done_);
  (void)cudaStreamDestroy(stream_);
}

Status CudaSlot::fail(Status status, std::string message) {
  last_error_ = fmt::format("cuda slot {}: {}", index_, message);
  last_cuda_error_ = cudaSuccess;
  release_registrations();
  in_flight_ = false;
  return status;
}

Status CudaSlot::check(int error, const char* what) {
  const auto e = static_cast<cudaError_t>(error);
  if (e == cudaSuccess) return Status::ok;
  (void)cudaGetLastError();
  const Status s = fail(status_from_cuda(e), cuda_message(what, e));
  last_cuda_error_ = e;
  return s;
}

Status CudaSlot::ensure_device_buffer(uint32_t role, uint64_t bytes) {
  if (device_buffers_[role] != nullptr && device_sizes_[role] >= bytes) return Status::ok;
  const uint64_t size = std::max(bytes, device_sizes_[role] + device_sizes_[role] / 2);
  context_.free_device(std::exchange(device_buffers_[role], nullptr));
  device_sizes_[role] = 0;
  void* p = nullptr;
  if (Status s = check(cudaMalloc(&p, size), "cudaMalloc (device buffer)"); s != Status::ok) return s;
  device_buffers_[role] = p;
  device_sizes_[role] = size;
  return Status::ok;
}

Status CudaSlot::device_pointer(uint32_t role, const KernelBuffer& b, void* host, CudaAccess access, void*& out) {
  if (host == nullptr) return fail(Status::invalid_argument, fmt::format("buffer {} has no address", b.slot));
  if (const uint64_t offset = context_.local().offset_of(host, b.bytes); offset != LocalWindow::kNotLocal) {
    // Device-local data: the kernel works on it in place. Its start must suit the kernel's elements
    // (tandem_buffer_alloc's buffers do; an offset into one may not).
    if (offset % b.element != 0) {
      return fail(Status::invalid_argument,
                  fmt::format("device-local buffer at offset {} is not aligned to its {}-byte elements", offset, b.element));
    }
    in_local_[role] = true;
    out = context_.local_device() + offset;
    return Status::ok;
  }
  if (access == CudaAccess::zero_copy && context_.device().pageable_memory_access) {
    out = host;
    return Status::ok;
  }
  if (mode_ == CudaMode::persistent) {
    // Staged in the slot's pinned memory, which the resident block reads in place; zero-copy too,
    // without pageable access (unregistering memory, like freeing it, may wait for an idle device).
    if (b.bytes > pinned_sizes_[role]) {
      return fail(Status::job_too_large,
                  fmt::format("a buffer of {} bytes is more than a persistent slot stages ({} MiB, [device.cuda] "
                              "persistent_staging_mib); launch mode takes any size",
                              b.bytes, pinned_sizes_[role] >> 20));
    }
    if (b.read) std::memcpy(pinned_buffers_[role], host, b.bytes);
    return check(cudaHostGetDevicePointer(&out, pinned_buffers_[role], 0), "cudaHostGetDevicePointer (staging)");
  }
  if (access == CudaAccess::zero_copy) {
    cudaError_t e = cudaHostRegister(host, b.bytes, cudaHostRegisterMapped);
    if (e == cudaSuccess) {
      registered_[role] = host;
    } else if (e == cudaErrorHostMemoryAlreadyRegistered) {
      (void)cudaGetLastError();  // pinned already (by its owner, or an earlier buffer of this job sharing a page)
    } else {
      return check(e, "cudaHostRegister");
    }
    return check(cudaHostGetDevicePointer(&out, host, 0), "cudaHostGetDevicePointer");
  }
  if (Status s = ensure_device_buffer(role, b.bytes); s != Status::ok) return s;
  out = device_buffers_[role];
  if (b.read) return check(cudaMemcpyAsync(out, host, b.bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync in");
  return Status::ok;
}

void CudaSlot::release_registrations() {
  for (void*& p : registered_) {
    if (p != nullptr) (void)cudaHostUnregister(p);
    p = nullptr;
  }
}

Status CudaSlot::enqueue(const funcs::Call& call, const KernelJob& job, CudaAccess access) {
  if (in_flight_) return fail(Status::device_error, "a job is already in flight on this slot");
  last_error_.clear();
  last_cuda_error_ = cudaSuccess;
  if (injected_ != CudaFault::none) return enqueue_fault(std::exchange(injected_, CudaFault::none));
  job_ = job;
  call_.copy_from(call);
  access_ = access;
  params_ = CudaJobParams{};
  in_local_.fill(false);
  if (!job.launch) {
    in_flight_ = true;
    return Status::ok;
  }
  if (Status s = check(context_.select_device(), "making the device current"); s != Status::ok) return s;
  shape_job(job, context_.reduction_groups(), params_);
  const uint32_t words = partial_words(job.kernel, params_.groups);
  if (words > partial_capacity_) {
    if (mode_ == CudaMode::persistent) return fail(Status::job_too_large, "more reduction groups than the slot was made for");
    context_.free_host(partials_);
    partials_ = nullptr;
    partial_capacity_ = 0;
    void* p = nullptr;
    if (Status s = check(cudaHostAlloc(&p, words * sizeof(int64_t), cudaHostAllocMapped), "cudaHostAlloc (partials)"); s != Status::ok) {
      return s;
    }
    partials_ = static_cast<int64_t*>(p);
    partial_capacity_ = words;
  }
  if (words > 0) {
    void* device_partials = nullptr;
    if (Status s = check(cudaHostGetDevicePointer(&device_partials, partials_, 0), "cudaHostGetDevicePointer (partials)");
        s != Status::ok) {
      return s;
    }
    params_.partials = static_cast<int64_t*>(device_partials);
  }
  // Inputs take in0 then in1 in the kernels' order; the written buffer is out.
  const void** next_input = &params_.in0;
  for (uint32_t i = 0; i < job.buffer_count; ++i) {
    void* p = nullptr;
    if (Status s = device_pointer(i, job.buffers[i], call.buffers[job.buffers[i].slot], access, p); s != Status::ok) return s;
    if (job.buffers[i].write) {
      params_.out = p;
    } else {
      *next_input = p;
      next_input = &params_.in1;
    }
  }
  if (mode_ == CudaMode::persistent) {
    ring_->entries[posted_ % kRingDepth] = params_;
    ++posted_;
    std::atomic_ref<uint64_t>(ring_->head).store(posted_, std::memory_order_release);  // publishes the entry
    in_flight_ = true;
    return Status::ok;
  }
  if (Status s = check(launch_job(params_, stream_), "kernel launch"); s != Status::ok) return s;
  if (access == CudaAccess::copy) {
    for (uint32_t i = 0; i < job.buffer_count; ++i) {
      const KernelBuffer& b = job.buffers[i];
      if (!b.write || in_local_[i]) continue;
      if (Status s = check(cudaMemcpyAsync(call.buffers[b.slot], device_buffers_[i], b.bytes, cudaMemcpyDeviceToHost, stream_),
                           "cudaMemcpyAsync out");
          s != Status::ok) {
        return s;
      }
    }
  }
  in_flight_ = true;  // the stream holds only this job: query() asks the stream, no event needed
  return Status::ok;
}

// An injected fault in place of a job, through the real API: the launch's or the allocation's error
// returns here; a trap is in flight until query() finds the device stopped.
Status CudaSlot::enqueue_fault(CudaFault fault) {
  if (mode_ != CudaMode::launch) return fail(Status::invalid_argument, "faults are injected in launch mode only");
  if (Status s = check(context_.select_device(), "making the device current"); s != Status::ok) return s;
  if (fault == CudaFault::no_memory) {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, context_.device().global_mem_bytes * 2);  // twice what the GPU has
    if (e == cudaSuccess) (void)cudaFree(p);
    return check(e == cudaSuccess ? cudaErrorMemoryAllocation : e, "cudaMalloc (injected by a test)");
  }
  if (Status s = check(launch_fault(fault, stream_), "kernel launch (injected by a test)"); s != Status::ok) return s;
  job_ = KernelJob{};
  params_ = CudaJobParams{};
  in_flight_ = true;
  return Status::ok;
}

Status CudaSlot::query(bool& finished) {
  finished = false;
  if (!in_flight_) return fail(Status::device_error, "no job in flight");
  if (!job_.launch) {
    finished = true;
    return Status::ok;
  }
  if (mode_ == CudaMode::persistent) {
    if (std::atomic_ref<uint64_t>(ring_->done).load(std::memory_order_acquire) >= posted_) {
      finished = true;
      return Status::ok;
    }
    const cudaError_t e = cudaStreamQuery(stream_);  // the resident block must still be running
    if (e == cudaErrorNotReady) return Status::ok;
    if (e == cudaSuccess) return fail(Status::device_error, "the persistent block ended before the job");
    return check(e, "the persistent block ended");
  }
  const cudaError_t e = cudaStreamQuery(stream_);
  if (e == cudaErrorNotReady) return Status::ok;
  if (Status s = check(e, "job"); s != Status::ok) return s;
  finished = true;
  return Status::ok;
}

int64_t CudaSlot::finish() {
  in_flight_ = false;
  if (mode_ == CudaMode::persistent && !(access_ == CudaAccess::zero_copy && context_.device().pageable_memory_access)) {
    for (uint32_t i = 0; i < job_.buffer_count; ++i) {
      const KernelBuffer& b = job_.buffers[i];
      if (b.write && !in_local_[i]) std::memcpy(call_.buffers[b.slot], pinned_buffers_[i], b.bytes);
    }
  }
  release_registrations();
  if (job_.launch && params_.groups > 0) return reduce_partials(job_.kernel, partials_, params_.groups);
  return job_.value;
}

Status CudaSlot::transfer(void* dst, const void* src, uint64_t bytes, int64_t timeout_ns) {
  last_error_.clear();
  if (Status s = check(context_.select_device(), "making the device current"); s != Status::ok) return s;
  const LocalWindow& local = context_.local();
  const uint64_t to = local.offset_of(dst, bytes), from = local.offset_of(src, bytes);
  const bool to_local = to != LocalWindow::kNotLocal, from_local = from != LocalWindow::kNotLocal;
  if (!to_local && !from_local) {
    std::memmove(dst, src, bytes);
    return Status::ok;
  }
  if (to_local && from_local && to == from) return Status::ok;
  char* base = context_.local_device();
  cudaError_t e = cudaSuccess;
  if (to_local && from_local) {
    if (to + bytes <= from || from + bytes <= to) {
      e = cudaMemcpyAsync(base + to, base + from, bytes, cudaMemcpyDeviceToDevice, stream_);
    } else {  // overlapping: through the bounce buffer, piece by piece (made once: cudaFree would wait on every slot)
      if (bounce_ == nullptr) e = cudaMalloc(&bounce_, kBounceBytes);
      const auto step = [&](void* d, const void* s2, uint64_t n) {
        if (e == cudaSuccess) e = cudaMemcpyAsync(d, s2, n, cudaMemcpyDeviceToDevice, stream_);
        return e == cudaSuccess ? Status::ok : status_from_cuda(e);
      };
      if (e == cudaSuccess) {
        (void)overlapping_copy(
            from, to, bytes, kBounceBytes, [&](uint64_t at, uint64_t n) { return step(bounce_, base + at, n); },
            [&](uint64_t at, uint64_t n) { return step(base + at, bounce_, n); });
      }
    }
  } else if (to_local) {
    e = cudaMemcpyAsync(base + to, src, bytes, cudaMemcpyHostToDevice, stream_);
  } else {
    e = cudaMemcpyAsync(dst, base + from, bytes, cudaMemcpyDeviceToHost, stream_);
  }
  if (e == cudaSuccess) e = cudaEventRecord(done_, stream_);
  if (e != cudaSuccess) return check(e, "copy engine transfer");
  // Bounded: a GPU that never finishes must not hold the engine (and the client's call) forever.
  const int64_t t0 = now_ns();
  while ((e = cudaEventQuery(done_)) == cudaErrorNotReady) {
    const int64_t waited = now_ns() - t0;
    if (waited > timeout_ns) {
      // CUDA cannot cancel it: the stream is abandoned (released once it ends), the engine gets a new one.
      (void)cudaStreamDestroy(stream_);
      (void)cudaEventDestroy(done_);
      context_.free_device(std::exchange(bounce_, nullptr));  // freed once the device is idle; a new one when needed
      stream_ = nullptr;
      done_ = nullptr;
      e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
      if (e == cudaSuccess) e = cudaEventCreateWithFlags(&done_, cudaEventDisableTiming);
      last_error_ = fmt::format("cuda copy engine {}: a transfer of {} bytes ran longer than {:.0f} ms; its stream was "
                                "abandoned (the GPU may still write its destination){}",
                                index_, bytes, static_cast<double>(timeout_ns) / 1e6,
                                e == cudaSuccess ? "" : "; a new stream could not be made");
      return Status::timeout;
    }
    if (waited < 200'000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return check(e, "copy engine transfer");
}

void CudaSlot::reserve_bounce() {
  if (bounce_ != nullptr) return;
  cudaError_t e = static_cast<cudaError_t>(context_.select_device());
  if (e == cudaSuccess) e = cudaMalloc(&bounce_, kBounceBytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    bounce_ = nullptr;
    throw CudaError(e, fmt::format("cuda copy engine {}: bounce buffer", index_));
  }
}

Status CudaSlot::read_local(uint64_t offset, void* dst, uint64_t bytes) {
  if (Status s = check(context_.select_device(), "making the device current"); s != Status::ok) return s;
  return check(cudaMemcpy(dst, context_.local_device() + offset, bytes, cudaMemcpyDeviceToHost), "reading device-local memory");
}

Result<int64_t> CudaSlot::run(const funcs::Call& call, CudaAccess access, int64_t timeout_ns) {
  KernelJob job;
  bool read_failed = false;
  if (Status s = plan_device_job(call, context_.local(), job, read_failed,
                                 [&](uint64_t offset, void* dst, uint64_t bytes) { return read_local(offset, dst, bytes); });
      s != Status::ok) {
    return Result<int64_t>(s, read_failed ? last_error_ : fmt::format("cuda: function {} has no kernel", call.function));
  }
  if (Status s = enqueue(call, job, access); s != Status::ok) return Result<int64_t>(s, last_error_);
  const int64_t deadline = now_ns() + timeout_ns;
  for (;;) {
    bool finished = false;
    if (Status s = query(finished); s != Status::ok) return Result<int64_t>(s, last_error_);
    if (finished) return finish();
    if (now_ns() > deadline) return Result<int64_t>(Status::timeout, fmt::format("cuda slot {}: job timed out", index_));
  }
}

Status CudaSlot::raw_empty_launch() {
  if (mode_ != CudaMode::launch) return fail(Status::invalid_argument, "raw launches need a launch-mode slot");
  if (Status s = check(launch_empty(stream_), "empty kernel launch"); s != Status::ok) return s;
  return check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

}  // namespace tandem::devices::cuda
