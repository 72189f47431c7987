#include "devices/opencl/context.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <new>
#include <thread>

#include "base/clock.hpp"
#include "devices/copy_engines.hpp"

namespace tandem::devices::opencl {

namespace {

uint64_t round_up(uint64_t value, uint64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

std::string build_options() {
  return fmt::format("-cl-std=CL1.2 -DTANDEM_WG={} -DTANDEM_TILE={}", kClWorkGroup, kClMatmulTile);
}

// "OpenCL 2.1 ..." -> true for 2.0 and later.
bool version_at_least_2(const std::string& version) {
  int major = 0;
  return std::sscanf(version.c_str(), "OpenCL %d", &major) == 1 && major >= 2;
}

// From the start of `first` to the end of `last` (profiling events), 0 if not known.
int64_t profiled_ns(cl_event first, cl_event last) {
  cl_ulong start = 0, end = 0;
  if (clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr) != CL_SUCCESS ||
      clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) != CL_SUCCESS || end < start) {
    return 0;
  }
  return static_cast<int64_t>(end - start);
}

}  // namespace

std::string_view access_name(ClAccess access) {
  switch (access) {
    case ClAccess::copy: return "copy";
    case ClAccess::zero_copy: return "zero_copy";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------------
// ClContext

ClContext::ClContext(const ClOptions& options) : options_(options) {
  const std::vector<ClPlatformInfo> platforms = discover_platforms();
  selection_ = select_device(platforms, options.platform, options.device).expect();
  found_ = describe_platforms(platforms);
  init();
}

ClContext::ClContext(const ClSelection& selection, const ClOptions& options)
    : selection_(selection), options_(options) {  // no discovery here: nothing to list in found()
  init();
}

ClContext::~ClContext() = default;

cl_event ClContext::launch_fault() {
  ++launches_;
  if (fail_every_ == 0 || launches_ % fail_every_ != 0) return nullptr;
  cl_int err = CL_SUCCESS;
  cl_event fault = clCreateUserEvent(context_.get(), &err);
  return err == CL_SUCCESS ? fault : nullptr;
}

void ClContext::fail_launch(cl_event fault) {
  if (fault == nullptr) return;
  (void)clSetUserEventStatus(fault, CL_OUT_OF_RESOURCES);  // any negative status terminates what waits on it
  clReleaseEvent(fault);
}

cl_int append_fault(ClContext& context, cl_command_queue queue, const EventPtr& last, EventPtr& new_last, EventPtr& fault,
                    EventPtr& before) {
  cl_event failing = context.launch_fault();
  if (failing == nullptr) return CL_SUCCESS;
  cl_event marker = nullptr;
  const cl_int err = clEnqueueMarkerWithWaitList(queue, 1, &failing, &marker);
  if (err != CL_SUCCESS) {
    ClContext::fail_launch(failing);
    return err;
  }
  cl_event ahead = last.get();
  if (ahead != nullptr) clRetainEvent(ahead);
  before.reset(ahead);
  fault.reset(failing);
  new_last.reset(marker);
  return CL_SUCCESS;
}

void inject_pending_fault(EventPtr& fault, EventPtr& before) {
  if (fault == nullptr) return;
  // PoCL 3.1 asserts when a command's dependencies fail and complete at the same moment (a double
  // finish, pocl/pocl#2216): the kernel's other dependency, the command before it, ends first.
  cl_event wait = before.get();
  if (wait != nullptr) (void)clWaitForEvents(1, &wait);
  before.reset();
  ClContext::fail_launch(fault.release());
}

Status terminated_command(std::initializer_list<cl_event> events, std::string& what, cl_event known_ok) {
  static constexpr const char* kWhich[] = {"first", "kernel", "last"};
  size_t i = 0;
  cl_event asked = nullptr;
  for (cl_event e : events) {
    const char* which = kWhich[std::min<size_t>(i++, 2)];
    // A job of one command is its first, its kernel and its last; its callback may have said already.
    if (e == nullptr || e == asked || e == known_ok) continue;
    asked = e;
    cl_int exec = CL_COMPLETE;
    const cl_int err = clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, nullptr);
    const cl_int code = err != CL_SUCCESS ? err : exec;
    if (code < 0) {
      what = cl_message(fmt::format("its {} command was terminated on the device", which), code);
      return status_from_cl(code);
    }
  }
  return Status::ok;
}

void ClContext::init() {
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                         reinterpret_cast<cl_context_properties>(selection_.platform.id), 0};
  cl_device_id device = selection_.device.id;
  cl_int err = CL_SUCCESS;
  context_.reset(clCreateContext(props, 1, &device, nullptr, nullptr, &err));
  if (err != CL_SUCCESS || context_ == nullptr) {
    throw Error(status_from_cl(err), cl_message("opencl: clCreateContext on " + selection_.device.name, err));
  }
  opencl2_ = version_at_least_2(selection_.device.version);
  const uint32_t units = std::max<uint32_t>(selection_.device.compute_units, 1);
  reduction_groups_ = options_.reduction_groups != 0 ? options_.reduction_groups : std::min<uint32_t>(8 * units, 4096);
  for (const ClKernelSource& source : kernel_sources()) (void)build(source.id);
}

Status ClContext::build(KernelId id, std::string_view source) {
  ClProgram& p = programs_[static_cast<size_t>(id)];
  p = ClProgram{};
  const ClKernelSource& embedded = kernel_source(id);
  const std::string& override_text = options_.source_overrides[static_cast<size_t>(id)];
  if (source.empty()) source = override_text.empty() ? embedded.text : std::string_view(override_text);
  const char* text = source.data();
  const size_t length = source.size();
  cl_int err = CL_SUCCESS;
  p.program.reset(clCreateProgramWithSource(context_.get(), 1, &text, &length, &err));
  if (err != CL_SUCCESS) {
    p.log = cl_message(fmt::format("opencl: clCreateProgramWithSource({})", embedded.file), err);
    p.program.reset();
    return p.status = status_from_cl(err);
  }
  cl_device_id device = selection_.device.id;
  const std::string options = build_options();
  const int64_t t0 = now_ns();
  err = clBuildProgram(p.program.get(), 1, &device, options.c_str(), nullptr, nullptr);
  p.build_ns = now_ns() - t0;
  size_t log_size = 0;
  std::string log;
  if (clGetProgramBuildInfo(p.program.get(), device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size) == CL_SUCCESS &&
      log_size > 1) {
    log.resize(log_size);
    (void)clGetProgramBuildInfo(p.program.get(), device, CL_PROGRAM_BUILD_LOG, log_size, log.data(), nullptr);
    log.resize(std::strlen(log.c_str()));
  }
  if (err != CL_SUCCESS) {
    p.log = cl_message(fmt::format("opencl: building {} on {}", embedded.file, selection_.device.name), err) +
            (log.empty() ? std::string() : "\n" + log);
    p.program.reset();
    return p.status = Status::device_error;
  }
  // The kernel must exist under its name: a program without it is as unusable as one that failed.
  KernelPtr probe(clCreateKernel(p.program.get(), std::string(embedded.kernel_name).c_str(), &err));
  if (err != CL_SUCCESS) {
    p.log = cl_message(fmt::format("opencl: {} has no kernel {}", embedded.file, embedded.kernel_name), err);
    p.program.reset();
    return p.status = Status::device_error;
  }
  p.log = std::move(log);
  return p.status = Status::ok;
}

void ClContext::attach_local(const char* base, uint64_t bytes) {
  if (bytes > selection_.device.max_alloc_bytes) {
    throw Error(Status::invalid_argument,
                fmt::format("opencl: device-local memory of {} MiB exceeds {}'s largest allocation ({} MiB)", bytes >> 20,
                            selection_.device.name, selection_.device.max_alloc_bytes >> 20));
  }
  cl_int err = CL_SUCCESS;
  local_.reset(clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, bytes, nullptr, &err));
  if (err != CL_SUCCESS || local_ == nullptr) {
    local_.reset();
    throw Error(status_from_cl(err), cl_message(fmt::format("opencl: device-local memory of {} MiB", bytes >> 20), err));
  }
  local_window_ = LocalWindow{base, bytes};
}

cl_int ClContext::local_region(uint64_t offset, uint64_t bytes, MemPtr& out, uint64_t& start) const {
  const uint64_t align = selection_.device.base_align_bytes;
  start = offset / align * align;
  const cl_buffer_region region{start, offset + bytes - start};
  cl_int err = CL_SUCCESS;
  out.reset(clCreateSubBuffer(local_.get(), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err));
  return err;
}

// ---------------------------------------------------------------------------------------------------
// ClSlot

ClSlot::ClSlot(ClContext& context, uint32_t index) : context_(context), index_(index) { make_queue(); }

void ClSlot::make_queue() {
  cl_int err = CL_SUCCESS;
  cl_device_id device = context_.device().id;
  const cl_command_queue_properties props = context_.options().profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
  if (context_.opencl2()) {
    const cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, props, 0};
    queue_.reset(clCreateCommandQueueWithProperties(context_.context(), device, list, &err));
  } else {
    queue_.reset(clCreateCommandQueue(context_.context(), device, props, &err));
  }
  if (err != CL_SUCCESS || queue_ == nullptr) {
    throw Error(status_from_cl(err), cl_message(fmt::format("opencl: command queue for slot {}", index_), err));
  }
}

ClSlot::~ClSlot() {
  // Nothing may still use the staging buffers or the caller's memory once the slot is gone.
  if (queue_ != nullptr) (void)clFinish(queue_.get());
}

Status ClSlot::fail(Status status, std::string message) {
  last_error_ = fmt::format("opencl slot {}: {}", index_, message);
  inject_pending_fault(pending_fault_, before_fault_);  // nothing may wait on it for ever
  // Commands already enqueued may read or write the caller's memory: let them end before returning.
  (void)clFinish(queue_.get());
  first_event_.reset();
  kernel_event_.reset();
  last_event_.reset();
  return status;
}

Status ClSlot::select(KernelId id) {
  const ClProgram& p = context_.program(id);
  if (p.status != Status::ok) {
    last_error_ = fmt::format("opencl slot {}: {} did not build: {}", index_, kernel_name(id), p.log);
    return Status::device_error;
  }
  cl_int err = CL_SUCCESS;
  KernelPtr kernel(clCreateKernel(p.program.get(), std::string(kernel_source(id).kernel_name).c_str(), &err));
  if (err != CL_SUCCESS) {
    last_error_ = cl_message(fmt::format("opencl slot {}: clCreateKernel({})", index_, kernel_name(id)), err);
    return status_from_cl(err);
  }
  kernels_[static_cast<size_t>(id)] = std::move(kernel);
  return Status::ok;
}

Status ClSlot::ensure_staging(uint32_t role, uint64_t bytes) {
  if (staging_[role] != nullptr && staging_bytes_[role] >= bytes) return Status::ok;
  // Grow by at least half again, so that a series of slowly growing jobs reallocates rarely.
  const uint64_t size = std::max(bytes, staging_bytes_[role] + staging_bytes_[role] / 2);
  staging_[role].reset();
  staging_bytes_[role] = 0;
  cl_int err = CL_SUCCESS;
  if (context_.allocation_fails(bytes)) {
    return fail(Status::no_memory, cl_message(fmt::format("staging buffer of {} bytes (injected)", bytes),
                                              CL_MEM_OBJECT_ALLOCATION_FAILURE));
  }
  MemPtr mem(clCreateBuffer(context_.context(), CL_MEM_READ_WRITE, size, nullptr, &err));
  if (err != CL_SUCCESS && size > bytes) mem.reset(clCreateBuffer(context_.context(), CL_MEM_READ_WRITE, bytes, nullptr, &err));
  if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message(fmt::format("staging buffer of {} bytes", bytes), err));
  staging_bytes_[role] = size > bytes && mem != nullptr ? size : bytes;
  staging_[role] = std::move(mem);
  return Status::ok;
}

// Makes buffer `role` of the job visible to the device: its cl_mem in `out`. A device-local buffer is
// its own sub-buffer of the local buffer where it starts base-aligned (nothing moves), else staged like
// a copy, by a copy on the device.
Status ClSlot::stage(uint32_t role, const KernelBuffer& buffer, void* host, ClAccess access, cl_mem& out) {
  if (host == nullptr) return fail(Status::invalid_argument, fmt::format("buffer {} has no address", buffer.slot));
  const uint64_t local = context_.local().offset_of(host, buffer.bytes);
  const bool on_device = local != LocalWindow::kNotLocal;
  cl_int err = CL_SUCCESS;
  if (on_device) {
    uint64_t start = 0;
    err = context_.local_region(local, buffer.bytes, job_buffers_[role], start);
    if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message("clCreateSubBuffer of device-local memory", err));
    local_offsets_[role] = local - start;
    if (local == start) {
      out = job_buffers_[role].get();
      return Status::ok;
    }
  } else if (buffer.bytes > context_.device().max_alloc_bytes) {
    return fail(Status::job_too_large, fmt::format("buffer of {} bytes exceeds the device's largest allocation ({} bytes)",
                                                   buffer.bytes, context_.device().max_alloc_bytes));
  }
  const bool aligned = reinterpret_cast<uintptr_t>(host) % buffer.element == 0;
  if (!on_device && access == ClAccess::zero_copy && aligned) {
    const cl_mem_flags rw = buffer.read && buffer.write ? CL_MEM_READ_WRITE : buffer.write ? CL_MEM_WRITE_ONLY : CL_MEM_READ_ONLY;
    job_buffers_[role].reset(clCreateBuffer(context_.context(), rw | CL_MEM_USE_HOST_PTR, buffer.bytes, host, &err));
    if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message("clCreateBuffer(CL_MEM_USE_HOST_PTR)", err));
    out = job_buffers_[role].get();
    ++in_place_;
    return Status::ok;
  }
  if (!on_device) ++copied_;
  // Copy (or a zero-copy buffer whose address the device cannot use in place, or device-local data
  // that does not start base-aligned).
  if (Status s = ensure_staging(role, buffer.bytes); s != Status::ok) return s;
  out = staging_[role].get();
  if (buffer.read) {
    cl_event ev = nullptr;
    err = on_device ? clEnqueueCopyBuffer(queue_.get(), job_buffers_[role].get(), out, local_offsets_[role], 0, buffer.bytes,
                                          0, nullptr, &ev)
                    : clEnqueueWriteBuffer(queue_.get(), out, CL_FALSE, 0, buffer.bytes, host, 0, nullptr, &ev);
    if (err != CL_SUCCESS) {
      return fail(status_from_cl(err),
                  cl_message(on_device ? "clEnqueueCopyBuffer from device-local memory" : "clEnqueueWriteBuffer", err));
    }
    (first_event_ == nullptr ? first_event_ : last_event_).reset(ev);
  }
  return Status::ok;
}

Status ClSlot::set_args_and_launch(const KernelJob& job, const std::array<cl_mem, 3>& mems) {
  cl_kernel kernel = kernels_[static_cast<size_t>(job.kernel)].get();
  cl_int err = CL_SUCCESS;
  cl_uint arg = 0;
  auto set = [&](const auto& value) {
    if (err == CL_SUCCESS) err = clSetKernelArg(kernel, arg, sizeof value, &value);
    ++arg;
  };
  size_t global[2] = {1, 1}, local[2] = {1, 1};
  cl_uint dims = 1;
  switch (job.kernel) {
    case KernelId::nop: break;
    case KernelId::accumulate:
    case KernelId::work: {
      const uint64_t items = (job.count + kClWorkGroup - 1) / kClWorkGroup;
      groups_ = static_cast<uint32_t>(std::clamp<uint64_t>(items, 1, context_.reduction_groups()));
      const uint64_t words = partial_words(job.kernel, groups_);
      if (partials_host_.size() < words) {
        partials_.reset();
        partials_host_.assign(words, 0);
      }
      if (partials_ == nullptr) {
        partials_.reset(clCreateBuffer(context_.context(), CL_MEM_READ_WRITE, partials_host_.size() * 8, nullptr, &err));
        if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message("partials buffer", err));
      }
      cl_mem partials = partials_.get();
      if (job.kernel == KernelId::accumulate) {
        const cl_ulong count = job.count, chunk = (job.count + groups_ - 1) / groups_;
        set(mems[0]);
        set(count);
        set(chunk);
      } else {
        const cl_ulong units = job.count;
        set(units);
      }
      set(partials);
      global[0] = uint64_t{groups_} * kClWorkGroup;
      local[0] = kClWorkGroup;
      break;
    }
    case KernelId::sobel:
      set(mems[0]);
      set(mems[1]);
      set(cl_uint{job.width});
      set(cl_uint{job.rows});
      set(cl_uint{job.above});
      set(cl_uint{job.below});
      dims = 2;
      global[0] = round_up(job.width, kClWorkGroup);
      global[1] = job.rows;
      local[0] = kClWorkGroup;
      break;
    case KernelId::matmul: {
      // k = 0: A and B are not read (null arguments); C is the job's only buffer.
      const cl_mem none = nullptr;
      set(job.k > 0 ? mems[0] : none);
      set(job.k > 0 ? mems[1] : none);
      set(job.k > 0 ? mems[2] : mems[0]);
      set(cl_uint{job.m});
      set(cl_uint{job.k});
      set(cl_uint{job.n});
      dims = 2;
      global[0] = round_up(job.n, kClMatmulTile);
      global[1] = round_up(job.m, kClMatmulTile);
      local[0] = local[1] = kClMatmulTile;
      break;
    }
    case KernelId::dct_quant: {
      const cl_mem none = nullptr;
      set(mems[0]);
      set(mems[1]);
      set(job.mode != TANDEM_DCT_MODE_DCT ? mems[2] : none);
      set(static_cast<cl_uint>(job.count));
      set(cl_uint{job.mode});
      global[0] = round_up(job.count, kClWorkGroup);
      local[0] = kClWorkGroup;
      break;
    }
  }
  if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message(fmt::format("clSetKernelArg {}", arg - 1), err));
  cl_event ev = nullptr;
  err = clEnqueueNDRangeKernel(queue_.get(), kernel, dims, nullptr, global, job.kernel == KernelId::nop ? nullptr : local,
                               0, nullptr, &ev);
  if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message(fmt::format("launching {}", kernel_name(job.kernel)), err));
  if (first_event_ == nullptr) {  // the job's first command: checked as such
    first_event_.reset(ev);
  } else {
    last_event_.reset(ev);
    clRetainEvent(ev);
    kernel_event_.reset(ev);
  }
  return Status::ok;
}

Status ClSlot::enqueue(const funcs::Call& call, const KernelJob& job, ClAccess access, cl_event* done) {
  *done = nullptr;
  job_ = job;
  groups_ = 0;
  first_event_.reset();
  kernel_event_.reset();
  last_event_.reset();
  for (MemPtr& b : job_buffers_) b.reset();
  local_offsets_.fill(LocalWindow::kNotLocal);
  last_error_.clear();
  cl_int err = CL_SUCCESS;
  if (!job.launch) {
    // Nothing runs on the device; a completed user event keeps one completion path.
    cl_event ev = clCreateUserEvent(context_.context(), &err);
    if (err == CL_SUCCESS) err = clSetUserEventStatus(ev, CL_COMPLETE);
    if (err != CL_SUCCESS) {
      if (ev != nullptr) clReleaseEvent(ev);
      return fail(status_from_cl(err), cl_message("clCreateUserEvent", err));
    }
    *done = ev;
    return Status::ok;
  }
  if (kernels_[static_cast<size_t>(job.kernel)] == nullptr) {
    last_error_ = fmt::format("opencl slot {}: {} is not loaded", index_, kernel_name(job.kernel));
    return Status::device_error;
  }
  std::array<cl_mem, 3> mems{};
  for (uint32_t i = 0; i < job.buffer_count; ++i) {
    if (Status s = stage(i, job.buffers[i], call.buffers[job.buffers[i].slot], access, mems[i]); s != Status::ok) return s;
  }
  if (Status s = set_args_and_launch(job, mems); s != Status::ok) return s;
  // Results back to the caller's memory.
  for (uint32_t i = 0; i < job.buffer_count; ++i) {
    const KernelBuffer& b = job.buffers[i];
    if (!b.write) continue;
    cl_event ev = nullptr;
    if (local_offsets_[i] != LocalWindow::kNotLocal) {
      if (mems[i] == job_buffers_[i].get()) continue;  // written in place, on the device
      err = clEnqueueCopyBuffer(queue_.get(), mems[i], job_buffers_[i].get(), 0, local_offsets_[i], b.bytes, 0, nullptr, &ev);
      if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message("clEnqueueCopyBuffer to device-local memory", err));
    } else if (mems[i] == job_buffers_[i].get()) {
      void* mapped = clEnqueueMapBuffer(queue_.get(), mems[i], CL_FALSE, CL_MAP_READ, 0, b.bytes, 0, nullptr, nullptr, &err);
      if (err == CL_SUCCESS) err = clEnqueueUnmapMemObject(queue_.get(), mems[i], mapped, 0, nullptr, &ev);
      if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message("map/unmap of the output", err));
    } else {
      err = clEnqueueReadBuffer(queue_.get(), mems[i], CL_FALSE, 0, b.bytes, call.buffers[b.slot], 0, nullptr, &ev);
      if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message("clEnqueueReadBuffer", err));
    }
    last_event_.reset(ev);
  }
  if (groups_ > 0) {
    cl_event ev = nullptr;
    err = clEnqueueReadBuffer(queue_.get(), partials_.get(), CL_FALSE, 0, partial_words(job.kernel, groups_) * 8,
                              partials_host_.data(), 0, nullptr, &ev);
    if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message("reading the partials", err));
    last_event_.reset(ev);
  }
  err = append_fault(context_, queue_.get(), last_event_ != nullptr ? last_event_ : first_event_, last_event_,
                     pending_fault_, before_fault_);
  if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message("the injected fault's marker", err));
  err = clFlush(queue_.get());
  if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message("clFlush", err));
  cl_event last = last_event_ != nullptr ? last_event_.get() : first_event_.get();
  clRetainEvent(last);
  *done = last;
  return Status::ok;
}

int64_t ClSlot::finish() {
  if (groups_ > 0) return reduce_partials(job_.kernel, partials_host_.data(), groups_);
  return job_.value;
}

Status ClSlot::commands_status(cl_event known_ok) {
  std::string what;
  const Status s = terminated_command({first_event_.get(), kernel_event_.get(), last_event_.get()}, what, known_ok);
  if (s != Status::ok) last_error_ = fmt::format("opencl slot {}: {}", index_, what);
  return s;
}

int64_t ClSlot::device_ns() const {
  if (!context_.options().profiling || first_event_ == nullptr) return 0;
  return profiled_ns(first_event_.get(), last_event_ != nullptr ? last_event_.get() : first_event_.get());
}

Result<int64_t> ClSlot::run(const funcs::Call& call, ClAccess access) {
  KernelJob job;
  bool read_failed = false;
  if (Status s = plan_device_job(call, context_.local(), job, read_failed,
                                 [&](uint64_t offset, void* dst, uint64_t bytes) { return read_local(offset, dst, bytes); });
      s != Status::ok) {
    return Result<int64_t>(s, read_failed ? last_error_ : fmt::format("opencl: function {} has no kernel", call.function));
  }
  if (!selected(job.kernel)) {
    if (Status s = select(job.kernel); s != Status::ok) return Result<int64_t>(s, last_error_);
  }
  cl_event done = nullptr;
  if (Status s = enqueue(call, job, access, &done); s != Status::ok) return Result<int64_t>(s, last_error_);
  inject_fault();
  EventPtr owner(done);
  // A terminated command: clWaitForEvents says so (CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST), or
  // only its own event does (the commands after it on the in-order queue ran).
  const cl_int err = clWaitForEvents(1, &done);
  if (Status s = commands_status(); s != Status::ok) return Result<int64_t>(s, last_error_);
  if (err != CL_SUCCESS) return Result<int64_t>(fail(status_from_cl(err), cl_message("job", err)), last_error_);
  return finish();
}

Status ClSlot::transfer(void* dst, const void* src, uint64_t bytes, int64_t timeout_ns) {
  last_error_.clear();
  const LocalWindow& window = context_.local();
  const uint64_t to = window.offset_of(dst, bytes), from = window.offset_of(src, bytes);
  const bool to_local = to != LocalWindow::kNotLocal, from_local = from != LocalWindow::kNotLocal;
  if (!to_local && !from_local) {
    std::memmove(dst, src, bytes);
    return Status::ok;
  }
  if (to_local && from_local && to == from) return Status::ok;
  // One sub-buffer covers every local byte the transfer touches.
  const uint64_t lo = std::min(to_local ? to : from, from_local ? from : to);
  const uint64_t hi = std::max(to_local ? to + bytes : 0, from_local ? from + bytes : 0);
  MemPtr region;
  uint64_t start = 0;
  cl_int err = context_.local_region(lo, hi - lo, region, start);
  if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message("clCreateSubBuffer of device-local memory", err));
  cl_command_queue q = queue_.get();
  cl_mem r = region.get();
  if (to_local && from_local) {
    const uint64_t t = to - start, f = from - start;
    if (t + bytes <= f || f + bytes <= t) {
      err = clEnqueueCopyBuffer(q, r, r, f, t, bytes, 0, nullptr, nullptr);
    } else {  // OpenCL refuses overlapping copies: through the bounce buffer, piece by piece
      if (bounce_ == nullptr) bounce_.reset(clCreateBuffer(context_.context(), CL_MEM_READ_WRITE, kBounceBytes, nullptr, &err));
      const auto step = [&](cl_mem a, cl_mem b, uint64_t at_a, uint64_t at_b, uint64_t n) {
        if (err == CL_SUCCESS) err = clEnqueueCopyBuffer(q, a, b, at_a, at_b, n, 0, nullptr, nullptr);
        return err == CL_SUCCESS ? Status::ok : status_from_cl(err);
      };
      if (err == CL_SUCCESS) {
        (void)overlapping_copy(
            f, t, bytes, kBounceBytes, [&](uint64_t at, uint64_t n) { return step(r, bounce_.get(), at, 0, n); },
            [&](uint64_t at, uint64_t n) { return step(bounce_.get(), r, 0, at, n); });
      }
    }
  } else if (to_local) {
    err = clEnqueueWriteBuffer(q, r, CL_FALSE, to - start, bytes, src, 0, nullptr, nullptr);
  } else {
    err = clEnqueueReadBuffer(q, r, CL_FALSE, from - start, bytes, dst, 0, nullptr, nullptr);
  }
  cl_event done = nullptr;
  if (err == CL_SUCCESS) err = clEnqueueMarkerWithWaitList(q, 0, nullptr, &done);
  if (err == CL_SUCCESS) err = clFlush(q);
  if (err != CL_SUCCESS) {
    if (done != nullptr) clReleaseEvent(done);
    return fail(status_from_cl(err), cl_message("copy engine transfer", err));
  }
  EventPtr owner(done);
  // Bounded: a device that never finishes must not hold the engine (and the client's call) forever.
  // Spin briefly (a small transfer takes microseconds), then sleep in short steps.
  const int64_t t0 = now_ns();
  cl_int exec = CL_QUEUED;
  while ((err = clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, nullptr)) == CL_SUCCESS &&
         exec > CL_COMPLETE) {
    const int64_t waited = now_ns() - t0;
    if (waited > timeout_ns) {
      // OpenCL cannot cancel it: the queue is abandoned (kept until the slot goes), the engine gets a new one.
      abandoned_.push_back(std::move(queue_));
      bounce_.reset();
      make_queue();
      last_error_ = fmt::format("opencl copy engine {}: a transfer of {} bytes ran longer than {:.0f} ms; its queue was "
                                "abandoned (the device may still write its destination)",
                                index_, bytes, static_cast<double>(timeout_ns) / 1e6);
      return Status::timeout;
    }
    if (waited < 200'000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  if (err != CL_SUCCESS || exec < 0) {
    const cl_int code = err != CL_SUCCESS ? err : exec;
    return fail(status_from_cl(code), cl_message("copy engine transfer", code));
  }
  return Status::ok;
}

Status ClSlot::read_local(uint64_t offset, void* dst, uint64_t bytes) {
  MemPtr region;
  uint64_t start = 0;
  cl_int err = context_.local_region(offset, bytes, region, start);
  if (err == CL_SUCCESS) err = clEnqueueReadBuffer(queue_.get(), region.get(), CL_TRUE, offset - start, bytes, dst, 0, nullptr, nullptr);
  if (err != CL_SUCCESS) return fail(status_from_cl(err), cl_message("reading device-local memory", err));
  return Status::ok;
}

// ---------------------------------------------------------------------------------------------------
// ClAccumulateBatch

ClAccumulateBatch::ClAccumulateBatch(ClContext& context, uint32_t max_jobs, bool allow_svm)
    : context_(context), max_jobs_(max_jobs) {
  const ClProgram& p = context.program(KernelId::accumulate);
  if (p.status != Status::ok) throw Error(Status::device_error, "opencl: accumulate did not build: " + p.log);
  cl_int err = CL_SUCCESS;
  kernel_.reset(clCreateKernel(p.program.get(), "tandem_accumulate_batch", &err));
  if (err != CL_SUCCESS) throw Error(status_from_cl(err), cl_message("opencl: clCreateKernel(tandem_accumulate_batch)", err));
  if (allow_svm && (context.device().svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0) {
    // Fine-grain: what the host wrote before the launch is what the kernel reads, and the sums are
    // the host's to read once the launch's event completed, with no map or copy command.
    const cl_svm_mem_flags flags = CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER;
    svm_sums_ = SvmPtr(clSVMAlloc(context.context(), flags, uint64_t{max_jobs} * 8, 0), SvmFree{context.context()});
    svm_ = svm_sums_ != nullptr;  // else the copy path, as on a device without SVM
  }
  if (svm_) {
    sums_ = static_cast<int64_t*>(svm_sums_.get());
  } else {
    sums_host_.assign(max_jobs, 0);
    sums_ = sums_host_.data();
  }
  clear();
  if (words_ == nullptr) throw Error(Status::no_memory, "opencl batch: no memory for the batch's table");
}

bool ClAccumulateBatch::reserve(uint64_t words) {
  if (words <= capacity_words_) return true;
  if (!svm_) {
    try {
      host_.resize(words);
    } catch (const std::bad_alloc&) {
      return false;
    }
    words_ = host_.data();
    capacity_words_ = words;
    return true;
  }
  const cl_svm_mem_flags flags = CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER;
  SvmPtr bigger(clSVMAlloc(context_.context(), flags, words * 8, 64), SvmFree{context_.context()});
  if (bigger == nullptr) return false;
  if (words_ != nullptr) std::memcpy(bigger.get(), words_, used_words_ * 8);  // not in flight: ours to copy
  svm_words_ = std::move(bigger);
  words_ = static_cast<uint64_t*>(svm_words_.get());
  capacity_words_ = words;
  return true;
}

void ClAccumulateBatch::clear() {
  jobs_ = 0;
  used_words_ = 0;
  const uint64_t table = round_up(2 * uint64_t{max_jobs_}, 8);  // the table, then data from a 64-byte line
  if (reserve(table)) used_words_ = table;
}

bool ClAccumulateBatch::add(const funcs::Call& call, const KernelJob& job) {
  const uint64_t words = round_up((job.count + 1) / 2, 8);
  const uint64_t limit = std::min<uint64_t>(context_.device().max_alloc_bytes, kMaxBytes) / 8;
  if (used_words_ == 0 || jobs_ >= max_jobs_ || used_words_ + words > limit) return false;
  // Grown by doubling (rare reallocations); a job that cannot have the room runs on its own.
  if (!reserve(std::max<uint64_t>(used_words_ + words, std::min<uint64_t>(capacity_words_ * 2, limit)))) return false;
  const void* input = call.buffers[job.buffers[0].slot];
  const uint64_t first = used_words_ * 2;  // in int32 elements from the buffer's start
  used_words_ += words;
  std::memcpy(reinterpret_cast<int32_t*>(words_) + first, input, job.count * sizeof(int32_t));
  words_[2 * jobs_] = first;
  words_[2 * jobs_ + 1] = job.count;
  ++jobs_;
  return true;
}

Status ClAccumulateBatch::fail(cl_command_queue queue, Status status, std::string message) {
  last_error_ = "opencl batch: " + std::move(message);
  inject_pending_fault(pending_fault_, before_fault_);
  (void)clFinish(queue);  // nothing enqueued may still read the host buffer or write the sums
  first_event_.reset();
  kernel_event_.reset();
  last_event_.reset();
  return status;
}

Status ClAccumulateBatch::enqueue(cl_command_queue queue, cl_event* done) {
  *done = nullptr;
  first_event_.reset();
  kernel_event_.reset();
  last_event_.reset();
  last_error_.clear();
  cl_int err = CL_SUCCESS;
  const uint64_t bytes = used_words_ * 8;
  if (bytes > context_.device().max_alloc_bytes) {
    return fail(queue, Status::job_too_large, fmt::format("{} bytes exceed the device's largest allocation", bytes));
  }
  const size_t global = size_t{jobs_} * kClWorkGroup, local = kClWorkGroup;
  cl_event ev = nullptr;
  if (svm_) {
    err = clSetKernelArgSVMPointer(kernel_.get(), 0, words_);
    if (err == CL_SUCCESS) err = clSetKernelArgSVMPointer(kernel_.get(), 1, sums_);
    if (err != CL_SUCCESS) return fail(queue, status_from_cl(err), cl_message("clSetKernelArgSVMPointer", err));
    if (Status s = launch(queue, global, local, ev); s != Status::ok) return s;
    first_event_.reset(ev);
    clRetainEvent(ev);
    last_event_.reset(ev);
  } else {
    if (Status s = enqueue_copies(queue, bytes, global, local, ev); s != Status::ok) return s;
  }
  err = append_fault(context_, queue, last_event_, last_event_, pending_fault_, before_fault_);
  if (err != CL_SUCCESS) return fail(queue, status_from_cl(err), cl_message("the injected fault's marker", err));
  if (pending_fault_ != nullptr) ev = last_event_.get();  // the marker is the batch's last command
  err = clFlush(queue);
  if (err != CL_SUCCESS) return fail(queue, status_from_cl(err), cl_message("clFlush", err));
  clRetainEvent(ev);
  *done = ev;
  return Status::ok;
}

// The copy method's three commands: write the gathered buffer, launch, read the sums (`ev`: the last).
Status ClAccumulateBatch::enqueue_copies(cl_command_queue queue, uint64_t bytes, size_t global, size_t local,
                                         cl_event& ev) {
  cl_int err = CL_SUCCESS;
  if (input_ == nullptr || input_bytes_ < bytes) {
    const uint64_t size = std::max(bytes, input_bytes_ * 2);  // grow by doubling: rare reallocations
    input_.reset();
    input_bytes_ = 0;
    input_.reset(clCreateBuffer(context_.context(), CL_MEM_READ_ONLY, size, nullptr, &err));
    if (err != CL_SUCCESS) return fail(queue, status_from_cl(err), cl_message("batch input buffer", err));
    input_bytes_ = size;
  }
  if (output_ == nullptr) {
    output_.reset(clCreateBuffer(context_.context(), CL_MEM_WRITE_ONLY, uint64_t{max_jobs_} * 8, nullptr, &err));
    if (err != CL_SUCCESS) return fail(queue, status_from_cl(err), cl_message("batch sums buffer", err));
  }
  err = clEnqueueWriteBuffer(queue, input_.get(), CL_FALSE, 0, bytes, words_, 0, nullptr, &ev);
  if (err != CL_SUCCESS) return fail(queue, status_from_cl(err), cl_message("clEnqueueWriteBuffer", err));
  first_event_.reset(ev);
  cl_mem input = input_.get(), output = output_.get();
  err = clSetKernelArg(kernel_.get(), 0, sizeof input, &input);
  if (err == CL_SUCCESS) err = clSetKernelArg(kernel_.get(), 1, sizeof output, &output);
  if (err != CL_SUCCESS) return fail(queue, status_from_cl(err), cl_message("clSetKernelArg", err));
  if (Status s = launch(queue, global, local, ev); s != Status::ok) return s;
  last_event_.reset(ev);
  err = clEnqueueReadBuffer(queue, output, CL_FALSE, 0, uint64_t{jobs_} * 8, sums_, 0, nullptr, &ev);
  if (err != CL_SUCCESS) return fail(queue, status_from_cl(err), cl_message("reading the sums", err));
  last_event_.reset(ev);
  return Status::ok;
}

// The batch kernel (its event `ev`, also kept as kernel_event_).
Status ClAccumulateBatch::launch(cl_command_queue queue, size_t global, size_t local, cl_event& ev) {
  const cl_int err = clEnqueueNDRangeKernel(queue, kernel_.get(), 1, nullptr, &global, &local, 0, nullptr, &ev);
  if (err != CL_SUCCESS) return fail(queue, status_from_cl(err), cl_message("launching tandem_accumulate_batch", err));
  clRetainEvent(ev);
  kernel_event_.reset(ev);
  return Status::ok;
}

Status ClAccumulateBatch::commands_status(cl_event known_ok) {
  std::string what;
  const Status s = terminated_command({first_event_.get(), kernel_event_.get(), last_event_.get()}, what, known_ok);
  if (s != Status::ok) last_error_ = "opencl batch: " + what;
  return s;
}

int64_t ClAccumulateBatch::device_ns() const {
  if (!context_.options().profiling || first_event_ == nullptr || last_event_ == nullptr) return 0;
  return profiled_ns(first_event_.get(), last_event_.get());
}

}  // namespace tandem::devices::opencl
