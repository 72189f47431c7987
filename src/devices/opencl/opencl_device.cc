#include "devices/opencl/opencl_device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "base/clock.hpp"
#include "config/text_file.hpp"
#include "devices/copy_engines.hpp"
#include "devices/kernel_models.hpp"

namespace tandem::devices::opencl {

namespace {

ClOptions options_from(const config::OpenclSettings& s, ClOptions o) {
  o.platform = s.platform;
  o.device = s.device;
  o.reduction_groups = s.reduction_groups;
  o.profiling = true;
  if (!s.kernel_dir.empty()) {
    const auto refuse = [&](const std::string& what) {
      throw Error(Status::invalid_argument, "device.opencl.kernel_dir: " + what);
    };
    std::error_code error;
    const bool folder = std::filesystem::is_directory(s.kernel_dir, error);
    if (error) refuse(fmt::format("'{}': {}", s.kernel_dir, error.message()));
    if (!folder) refuse(fmt::format("'{}' is not a folder", s.kernel_dir));
    for (size_t i = 0; i < kKernelCount; ++i) {
      if (!o.source_overrides[i].empty()) continue;  // a test's override comes first
      const std::filesystem::path file =
          std::filesystem::path(s.kernel_dir) / fmt::format("{}.cl", kernel_name(static_cast<KernelId>(i)));
      const auto kind = std::filesystem::status(file, error).type();  // follows links
      if (kind == std::filesystem::file_type::not_found) {
        if (std::filesystem::is_symlink(file, error)) refuse(file.string() + " is a link to nothing");
        continue;  // the embedded source
      }
      if (error) refuse(fmt::format("{}: {}", file.string(), error.message()));
      if (kind != std::filesystem::file_type::regular) refuse(file.string() + " is not a regular file");
      o.source_overrides[i] = config::read_text_file(file.string(), "device.opencl.kernel_dir's file");
      if (o.source_overrides[i].empty()) refuse(file.string() + " is empty");
    }
    // A .cl file that names no kernel (Sobel.cl, dct.cl) would otherwise be ignored without a word.
    std::string names;
    for (size_t i = 0; i < kKernelCount; ++i) names += fmt::format("{}{}.cl", i == 0 ? "" : ", ", kernel_name(static_cast<KernelId>(i)));
    error.clear();  // the loop above leaves ENOENT for a kernel without a file
    for (auto it = std::filesystem::directory_iterator(s.kernel_dir, error); !error && it != std::filesystem::directory_iterator();
         it.increment(error)) {
      const std::filesystem::path& path = it->path();
      // Hidden files are an editor's or a file system's (.#sobel.cl, ._sobel.cl), not the user's kernels.
      if (path.extension() != ".cl" || path.filename().string().starts_with('.')) continue;
      bool named = false;
      for (size_t i = 0; i < kKernelCount; ++i) named = named || path.stem() == kernel_name(static_cast<KernelId>(i));
      if (!named) refuse(fmt::format("{} names no kernel (the files it may hold: {})", path.string(), names));
    }
    if (error) refuse(fmt::format("'{}': {}", s.kernel_dir, error.message()));
  }
  return o;
}

}  // namespace

OpenclDevice::OpenclDevice(const config::OpenclSettings& settings, const ClOptions& extra)
    : settings_(settings), context_(options_from(settings, extra)) {
  // "job": each job's method; the models are measured in place, and again with copies (copy_models),
  // so that a client chooses between the two (docs/access.md).
  per_job_ = settings.access == "job";
  access_ = settings.access == "copy" ? ClAccess::copy : ClAccess::zero_copy;
  timeout_ns_ = static_cast<int64_t>(settings.job_timeout_s * 1e9);
  const ClSelection& sel = context_.selection();
  info_.kind = "opencl";
  info_.name = "opencl";
  info_.description = fmt::format("OpenCL platform {} ({}), device {}: {}", sel.platform_index, sel.platform.name,
                                  sel.device_index, describe_device(sel.device));
  for (std::string_view rest = context_.found(); !rest.empty();) {
    const size_t end = rest.find('\n');
    info_.found.emplace_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
  }
  info_.slots = settings.slots;
  std::bitset<kKernelCount> said;
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    KernelId id{};
    if (!kernel_for_function(fn->id, id)) continue;
    const ClProgram& program = context_.program(id);
    if (program.status == Status::ok) {
      info_.loadable.set(fn->id);
      continue;
    }
    info_.not_built.set(fn->id);
    // Not loadable: the engine never places its functions here. Said once per kernel (work's serves 17
    // functions): on stderr with the whole build log (tandemd's log), and in `tandem status` by its
    // first line.
    if (said[static_cast<size_t>(id)]) continue;  // (after not_built: work's variants are named too)
    said.set(static_cast<size_t>(id));
    const std::string_view log = program.log;
    fmt::print(stderr, "tandem: opencl: the {} kernel did not build; its functions are not loadable on this device:\n{}\n",
               kernel_name(id), log);
    if (!unbuilt_.empty()) unbuilt_ += ", ";
    unbuilt_ += fmt::format("{} ({})", kernel_name(id), log.substr(0, log.find('\n')));
  }
  info_.memory.reaches_host_memory = true;  // CL_MEM_USE_HOST_PTR
  // Device-local memory: one allocation, so at most the device's largest (whole aligned blocks).
  const uint64_t align = std::max<uint64_t>(sel.device.base_align_bytes, 64);
  info_.memory.local_bytes = std::min(settings.local_bytes, sel.device.max_alloc_bytes) / align * align;
  info_.memory.local_alignment = static_cast<uint32_t>(align);
  info_.memory.copy_engines = info_.memory.local_bytes > 0 ? settings.copy_engines : 0;
  info_.memory.max_job_buffer_bytes = sel.device.max_alloc_bytes;  // each buffer of a job is one allocation
  sink_ = std::make_unique<CallbackSink>(settings.slots, kBatchSlot);
  for (uint32_t i = 0; i < settings.slots; ++i) {
    auto s = std::make_unique<Slot>();
    s->index = i;
    s->queue = std::make_unique<ClSlot>(context_, i);
    slots_.push_back(std::move(s));
  }
  ready_.reserve(settings.slots);
  arrived_.reserve(settings.slots);
  held_.reserve(settings.slots);
  // On a discrete device, fine-grain SVM is host memory the kernel reads across the bus: measured only
  // where the device shares the host's memory, so "auto" stages in it only there.
  batch_svm_ = settings.batch_staging == "svm" || (settings.batch_staging == "auto" && sel.device.host_unified_memory);
  if (settings.batch_max_jobs > 1 && info_.loadable[TANDEM_FN_ACCUMULATE]) {
    batching_ = free_batch() != nullptr;  // no batch kernel (a source override): every job on its own
  }
  measure_models();
  measure_copy_engines();
  for (auto& slot : slots_) slot->queue->reset_buffer_counts();  // the measurements are no job's
  failing_rebuilds_ = extra.failing_rebuilds;
  context_.fail_every_launches(settings.fail_every_launches);  // the measurements above never fail
  context_.fail_allocations_over(uint64_t{settings.fail_allocations_over_kib} * 1024);
  // Settings for tests: a configuration that keeps one by mistake fails jobs on purpose, so say so.
  if (settings.fail_every_launches > 0 || settings.fail_allocations_over_kib > 0) {
    fmt::print(stderr,
               "tandem: opencl: fault injection is on (fail_every_launches = {}, fail_allocations_over_kib = {}): "
               "jobs fail on purpose; these settings are for tests\n",
               settings.fail_every_launches, settings.fail_allocations_over_kib);
  }
}

OpenclDevice::~OpenclDevice() {
  // Every job ends before its buffers go; the callbacks expected are waited for (one may run after
  // clFinish returns), and the sink outlives the device if any may still come.
  for (auto& s : slots_) {
    if (s->queue) (void)clFinish(s->queue->queue());
  }
  // A failed launch found by asking its event may never have its callback (PoCL): those are waited
  // for only a grace period. A late callback that arrives names its event in the inbox; one that comes
  // later still finds the sink, which outlives the device then.
  const auto unannounced_left = [&] {
    arrived_.clear();
    sink_->inbox().take(arrived_);
    for (const DeviceCompletion& c : arrived_) {
      std::erase_if(unannounced_, [&](const EventPtr& e) { return reinterpret_cast<uint64_t>(e.get()) == c.token; });
    }
    return static_cast<int>(unannounced_.size() + evicted_unannounced_);
  };
  const int64_t deadline = now_ns() + 5'000'000'000;
  for (;;) {
    const int pending = sink_->pending();  // first: a callback between the two reads only lowers it
    if (pending <= unannounced_left() || now_ns() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  const int64_t grace = now_ns() + 100'000'000;
  while (sink_->pending() > 0 && now_ns() < grace) std::this_thread::sleep_for(std::chrono::microseconds(100));
  CallbackSink::retire(std::move(sink_));  // kept if a callback may still come
}

// X_a and D_a of every loadable function, measured on slot 0 (measure_kernel_models); with access =
// "job" a second time with every buffer copied, for copy_models.
void OpenclDevice::measure_models() {
  if (slots_.empty()) return;
  ClSlot& slot = *slots_[0]->queue;
  std::function<bool(const funcs::Call&)> copied;
  if (per_job_) copied = [&](const funcs::Call& call) { return slot.run(call, ClAccess::copy).ok(); };
  measure_kernel_models(
      info_, [&](KernelId id) { return slot.select(id) == Status::ok; },
      [&](const funcs::Call& call) { return slot.run(call, access_).ok(); }, UINT64_MAX, copied);
}

// The copy engines' figures for the engine and the partitioner (measure_copy_rates), on a scratch buffer.
void OpenclDevice::measure_copy_engines() {
  if (info_.memory.copy_engines == 0 || slots_.empty()) return;
  const uint64_t large = std::min<uint64_t>(uint64_t{8} << 20, info_.memory.local_bytes);
  cl_int err = CL_SUCCESS;
  MemPtr scratch(clCreateBuffer(context_.context(), CL_MEM_READ_WRITE, large, nullptr, &err));
  if (err != CL_SUCCESS) throw Error(status_from_cl(err), cl_message("opencl: measuring the copy engines (a scratch buffer)", err));
  std::vector<char> host(large, 1);
  cl_command_queue queue = slots_[0]->queue->queue();
  const CopyRates rates = measure_copy_rates(large, [&](uint64_t bytes) {
    const int64_t t0 = now_ns();
    err = clEnqueueWriteBuffer(queue, scratch.get(), CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr);
    if (err != CL_SUCCESS) throw Error(status_from_cl(err), cl_message("opencl: measuring the copy engines", err));
    return static_cast<double>(now_ns() - t0) * 1e-9;
  });
  info_.memory.copy_engine_setup_s = rates.setup_s;
  info_.memory.copy_engine_bps = rates.bps;
}

void OpenclDevice::attach_local_memory(char* base, uint64_t bytes) {
  context_.attach_local(base, bytes);
  for (uint32_t i = 0; i < info_.memory.copy_engines; ++i) copy_queues_.push_back(std::make_unique<ClSlot>(context_, i));
}

LocalTransfer OpenclDevice::local_transfer() { return timed_transfers(copy_queues_, timeout_ns_); }

void OpenclDevice::complete_now(uint32_t slot, uint64_t token, Status status, std::string error) {
  DeviceCompletion c;
  c.token = token;
  c.slot = slot;
  c.status = status;
  ready_.push_back(c);
  if (!error.empty() && slot < slots_.size()) slots_[slot]->job.health.last_error = std::move(error);
}

void OpenclDevice::configure(uint32_t slot, uint16_t function) {
  if (slot >= slots_.size()) return;
  Slot& s = *slots_[slot];
  KernelId id{};
  if (!kernel_for_function(function, id)) {
    s.loaded_valid = false;
    return;
  }
  if (!s.queue) {  // out of service until a rebuild succeeds, which selects the kernel
    s.loaded = id;
    s.loaded_valid = true;
    return;
  }
  if (!s.queue->selected(id) && s.queue->select(id) != Status::ok) {
    s.job.health.last_error = s.queue->last_error();
    s.loaded_valid = false;
    return;
  }
  s.loaded = id;
  s.loaded_valid = true;
}

// The callbacks name the launch by its event (in `token`): poll() drops a late callback of a launch it
// has already completed.
// `user`: the sink's target of the job's slot, or of the batches (poll() finds a batch by its event).
void CL_CALLBACK OpenclDevice::on_complete(cl_event event, cl_int status, void* user) {
  DeviceCompletion c;
  c.token = reinterpret_cast<uint64_t>(event);
  // A negative execution status is the driver's error code for the command (or one before it).
  c.status = status < 0 ? status_from_cl(status) : Status::ok;
  c.value = status;  // carried to poll(), which replaces it with the job's value
  CallbackSink::arrive(user, c);
}

bool OpenclDevice::batchable(const DeviceJob& job, const KernelJob& plan) const {
  // A batch gathers host memory: a job on device-local data runs on its own, where its data is.
  // A batch copies its jobs' inputs together, whatever their method: with access = "zero_copy" forced,
  // no job is copied, so none is batched.
  return batching_ && (per_job_ || access_ == ClAccess::copy) && job.access.local_bytes == 0 && plan.kernel == KernelId::accumulate && plan.launch &&
         plan.count * sizeof(int32_t) <= settings_.batch_max_job_bytes;
}

void OpenclDevice::submit(uint32_t slot, const DeviceJob& job) {
  if (slot >= slots_.size()) return complete_now(slot, job.token, Status::device_error);
  Slot& s = *slots_[slot];
  if (!slot_in_service(slot)) {
    // Its last job is still on the device, its queue awaits a rebuild, or the device is out of service.
    return complete_now(slot, job.token, Status::device_error);
  }
  KernelJob plan;
  bool read_failed = false;
  const Status planned = plan_device_job(job.call, context_.local(), plan, read_failed,
                                         [&](uint64_t offset, void* dst, uint64_t bytes) { return s.queue->read_local(offset, dst, bytes); });
  if (read_failed) return complete_now(slot, job.token, planned, s.queue->last_error());
  if (planned != Status::ok || !s.loaded_valid || plan.kernel != s.loaded) {
    return complete_now(slot, job.token, Status::device_error,
                        fmt::format("function {} started on a slot loaded with another", job.call.function));
  }
  s.job.start(job.token, job.start_ns);
  if (batchable(job, plan)) {
    if (held_.empty()) held_since_ = now_ns();
    held_.push_back(Held{slot, job.call, plan, access_of(job)});
    if (held_.size() >= settings_.batch_max_jobs) launch_held();
    return;
  }
  launch(s, job.call, plan, access_of(job), false);
}

// Enqueues slot s's job (started) on its own queue; `small`: a batchable job (it counts against
// kBatchSmallLaunches).
void OpenclDevice::launch(Slot& s, const funcs::Call& call, const KernelJob& plan, ClAccess access, bool small) {
  cl_event done = nullptr;
  if (Status st = s.queue->enqueue(call, plan, access, &done); st != Status::ok) {
    // No device memory for its buffers: the job fails at once (its client runs it in software) and the
    // slot serves on; counted for `tandem status`.
    if (st == Status::no_memory) ++faults_.out_of_memory;
    s.job.busy = false;
    return complete_now(s.index, s.job.token, st, s.queue->last_error());
  }
  s.done.reset(done);
  s.launch = breaker_.launch_started();
  sink_->expect();
  const cl_int err = clSetEventCallback(done, CL_COMPLETE, &OpenclDevice::on_complete, sink_->slot_target(s.index));
  s.queue->inject_fault();  // a test's fault (fail_every_launches): waits for the job's commands, then fails its marker
  if (err != CL_SUCCESS) {
    sink_->cancel();  // no callback: wait here (rare; the job is already running)
    (void)clWaitForEvents(1, &done);
    s.job.busy = false;
    s.done.reset();
    return complete_now(s.index, s.job.token, status_from_cl(err), cl_message("clSetEventCallback", err));
  }
  if (small) {
    s.small_launch = true;
    ++small_launches_;
  }
}

// A batch that is not in flight, made if needed (each holds two jobs or more: at most half as many
// batches as slots are ever in flight); null if none can be made.
OpenclDevice::Batch* OpenclDevice::free_batch() {
  for (auto& b : batches_) {
    if (!b->in_flight) return b.get();
  }
  try {
    auto b = std::make_unique<Batch>();
    b->work = std::make_unique<ClAccumulateBatch>(context_, settings_.batch_max_jobs, batch_svm_);
    batches_.push_back(std::move(b));
    return batches_.back().get();
  } catch (const Error&) {
    return nullptr;
  }
}

// Held jobs that timed out before they were launched (TIMEOUT already reported): never launched (their
// buffers may be gone), and their slots serve again at once.
void OpenclDevice::drop_expired_held() {
  std::erase_if(held_, [&](const Held& h) {
    SlotJob& j = slots_[h.slot]->job;
    if (!j.abandoned) return false;
    j.busy = false;
    j.abandoned = false;
    j.health.in_service = true;
    j.health.last_error += "; it was still waiting for a batch: never launched, and the slot serves again";
    return true;
  });
}

// The jobs held since the last turn: one batch, or a lone job (or no batch to be had) on its own queue.
// A job the batch has no room for (its bytes) runs on its own.
void OpenclDevice::launch_held() {
  if (held_.empty()) return;
  if (!faults_.lost.empty()) {  // held before the device left service: refused now, as a new job would be
    for (const Held& h : held_) {
      slots_[h.slot]->job.busy = false;
      complete_now(h.slot, slots_[h.slot]->job.token, Status::device_error);
    }
    held_.clear();
    return;
  }
  Batch* b = held_.size() > 1 ? free_batch() : nullptr;
  if (b == nullptr) {
    for (const Held& h : held_) launch(*slots_[h.slot], h.call, h.plan, h.access, true);
    held_.clear();
    return;
  }
  b->work->clear();
  b->slots.clear();
  for (const Held& h : held_) {
    if (b->work->add(h.call, h.plan)) {
      b->slots.push_back(h.slot);
    } else {
      launch(*slots_[h.slot], h.call, h.plan, h.access, true);
    }
  }
  held_.clear();
  if (b->slots.empty()) return;
  ++batch_stats_.batches;
  batch_stats_.jobs += b->slots.size();
  auto fail_all = [&](Status st, const std::string& why) {
    if (st == Status::no_memory) faults_.out_of_memory += b->slots.size();
    for (uint32_t slot : b->slots) {
      slots_[slot]->job.busy = false;
      complete_now(slot, slots_[slot]->job.token, st, why);
    }
  };
  cl_event done = nullptr;
  if (Status st = b->work->enqueue(slots_[b->slots.front()]->queue->queue(), &done); st != Status::ok) {
    return fail_all(st, b->work->last_error());
  }
  b->done.reset(done);
  b->in_flight = true;
  b->launch = breaker_.launch_started();
  sink_->expect();
  const cl_int err = clSetEventCallback(done, CL_COMPLETE, &OpenclDevice::on_complete, sink_->batch_target());
  b->work->inject_fault();
  if (err != CL_SUCCESS) {
    sink_->cancel();
    (void)clWaitForEvents(1, &done);
    b->done.reset();
    b->in_flight = false;
    return fail_all(status_from_cl(err), cl_message("clSetEventCallback", err));
  }
  ++small_launches_;
}

// The batch's commands ended (c: the execution status of its last): every member completes.
void OpenclDevice::finish_batch(Batch& b, const DeviceCompletion& c, int64_t now, std::vector<DeviceCompletion>& out) {
  Status status = b.work->commands_status(c.status == Status::ok ? reinterpret_cast<cl_event>(c.token) : nullptr);
  std::string why = b.work->last_error();
  if (status == Status::ok && c.status != Status::ok) {
    status = c.status;
    why = cl_message("its last command failed", static_cast<cl_int>(c.value));
  }
  const bool failed = status != Status::ok;
  const int64_t share = failed ? 0 : b.work->device_ns() / static_cast<int64_t>(b.slots.size());
  for (size_t i = 0; i < b.slots.size(); ++i) {
    Slot& s = *slots_[b.slots[i]];
    if (s.job.finished(now)) continue;  // it had timed out: already completed
    DeviceCompletion m;
    m.token = s.job.token;
    m.slot = s.index;
    m.status = status;
    m.value = failed ? 0 : b.work->value(static_cast<uint32_t>(i));
    m.device_ns = share;
    out.push_back(m);
  }
  b.in_flight = false;
  breaker_.launch_ended(b.launch, failed, why, now, faults_);
  if (failed) {  // after finished(): a rebuild that fails keeps the slot out of service
    ++faults_.failed_launches;
    rebuild(*slots_[b.slots.front()],
            fmt::format("opencl slot {}: a batch of {} jobs failed on the device: {}", b.slots.front(), b.slots.size(), why),
            now);
  }
}

void OpenclDevice::rebuild(Slot& s, const std::string& why, int64_t now) {
  if (s.queue) {  // its counts outlive the queue
    retired_in_place_ += s.queue->buffers_in_place();
    retired_copied_ += s.queue->buffers_copied();
  }
  s.queue.reset();
  rebuild_slot(s.job, faults_, why, now, "its command queue was rebuilt", [&] {
    if (failing_rebuilds_ > 0) {
      --failing_rebuilds_;
      throw Error(Status::device_error, "a failure injected by a test");
    }
    s.queue = std::make_unique<ClSlot>(context_, s.index);
    if (s.loaded_valid && s.queue->select(s.loaded) != Status::ok) s.loaded_valid = false;
  });
}

// A launch's commands ended: `c` from its event's callback (`announced`), or made by
// find_unannounced_failures. c.token is the event; c.slot the slot, or kBatchSlot.
void OpenclDevice::launch_ended(DeviceCompletion c, bool announced, int64_t now, std::vector<DeviceCompletion>& out) {
  const auto event_of = [&](const EventPtr& e) { return reinterpret_cast<uint64_t>(e.get()) == c.token; };
  // Whatever ends here unannounced keeps its event until a late callback names it (below).
  const auto retire = [&](EventPtr& done) {
    if (announced) {
      done.reset();
      return;
    }
    // Bounded: each kept event may hold its (released) queue. The oldest, whose callback has not come
    // in kMaxUnannounced later failures, never will.
    if (unannounced_.size() >= kMaxUnannounced) {
      unannounced_.erase(unannounced_.begin());
      ++evicted_unannounced_;  // its callback stays counted as pending
    }
    unannounced_.push_back(std::move(done));
  };
  if (c.slot == kBatchSlot) {
    const auto b = std::find_if(batches_.begin(), batches_.end(), [&](const auto& x) { return x->in_flight && event_of(x->done); });
    if (b == batches_.end()) {  // a late callback of a batch completed unannounced
      std::erase_if(unannounced_, event_of);
      return;
    }
    --small_launches_;
    finish_batch(**b, c, now, out);
    retire((*b)->done);
    return;
  }
  Slot& s = *slots_[c.slot];
  if (s.done == nullptr || !event_of(s.done)) {  // likewise, a job's
    std::erase_if(unannounced_, event_of);
    return;
  }
  if (s.small_launch) {
    --small_launches_;
    s.small_launch = false;
  }
  retire(s.done);
  // Which of the job's commands the driver terminated (the kernel may have failed before a last
  // command that ran all the same).
  Status status = s.queue->commands_status(c.status == Status::ok ? reinterpret_cast<cl_event>(c.token) : nullptr);
  std::string why = s.queue->last_error();
  if (status == Status::ok && c.status != Status::ok) {
    status = c.status;
    why = cl_message("its last command failed", static_cast<cl_int>(c.value));
  }
  const bool timed_out = s.job.finished(now);  // already completed, with TIMEOUT
  breaker_.launch_ended(s.launch, status != Status::ok, why, now, faults_);
  if (status != Status::ok) {  // after finished(): a rebuild that fails keeps the slot out of service
    ++faults_.failed_launches;
    rebuild(s, fmt::format("opencl slot {}: a job failed on the device: {}", c.slot, why), now);
  }
  if (timed_out) return;
  c.token = s.job.token;
  if (status != Status::ok) {
    c.status = status;
    c.value = 0;
  } else {
    c.value = s.queue->finish();
    c.device_ns = s.queue->device_ns();
  }
  c.not_before = 0;
  out.push_back(c);
}

bool OpenclDevice::deliver_late_callback(uint32_t slot, cl_int status) {
  if (unannounced_.empty() || slot >= slots_.size()) return false;
  on_complete(unannounced_.back().get(), status, sink_->slot_target(slot));
  return true;
}

bool OpenclDevice::launches_in_flight() const {
  return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->done != nullptr; }) ||
         std::any_of(batches_.begin(), batches_.end(), [](const auto& b) { return b->in_flight; });
}

void OpenclDevice::find_unannounced_failures(int64_t now, std::vector<DeviceCompletion>& out) {
  const auto failed = [](const EventPtr& e, cl_int& exec) {
    exec = CL_COMPLETE;
    const cl_int err = clGetEventInfo(e.get(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, nullptr);
    if (err != CL_SUCCESS) exec = err;
    return exec < 0;
  };
  const auto end = [&](uint32_t slot, const EventPtr& e, cl_int exec) {
    DeviceCompletion c;
    c.token = reinterpret_cast<uint64_t>(e.get());
    c.slot = slot;
    c.status = status_from_cl(exec);
    c.value = exec;
    launch_ended(c, false, now, out);
  };
  cl_int exec = CL_COMPLETE;
  for (auto& s : slots_) {
    if (s->done != nullptr && failed(s->done, exec)) end(s->index, s->done, exec);
  }
  for (auto& b : batches_) {
    if (b->in_flight && failed(b->done, exec)) end(kBatchSlot, b->done, exec);
  }
}

void OpenclDevice::poll(int64_t now, std::vector<DeviceCompletion>& out) {
  arrived_.clear();
  sink_->inbox().take(arrived_);
  for (const DeviceCompletion& c : arrived_) launch_ended(c, true, now, out);
  if (now >= next_event_check_ns_) {
    next_event_check_ns_ = now + kEventCheckNs;
    find_unannounced_failures(now, out);
  }
  breaker_.poll(now, faults_);  // a device out of service serves again once its wait is over
  // Jobs past their time limit: complete them now; the slot waits for the device to finish them.
  for (auto& s : slots_) s->job.expire(s->index, now, timeout_ns_, out);
  for (auto& s : slots_) {
    if (s->job.rebuild_due(now)) rebuild(*s, s->job.rebuild_reason, now);
  }
  drop_expired_held();
  // Held jobs go once the last small launch has ended (meanwhile they gather into one batch), or once
  // the first of them has waited kMaxHoldNs: a small launch that hangs holds nobody back for long.
  if (!held_.empty() && (small_launches_ < kBatchSmallLaunches || now - held_since_ >= kMaxHoldNs)) launch_held();
  if (!ready_.empty()) {
    out.insert(out.end(), ready_.begin(), ready_.end());
    ready_.clear();
  }
}

int64_t OpenclDevice::next_deadline() const {
  if (!ready_.empty() || (!held_.empty() && small_launches_ < kBatchSmallLaunches)) return 0;
  int64_t deadline = held_.empty() ? INT64_MAX : held_since_ + kMaxHoldNs;
  for (const auto& s : slots_) deadline = std::min(deadline, s->job.deadline(timeout_ns_));
  if (launches_in_flight()) deadline = std::min(deadline, next_event_check_ns_);
  if (!faults_.lost.empty()) deadline = std::min(deadline, breaker_.retry_at_ns);
  return deadline;
}

std::string OpenclDevice::activity() const {
  // Host buffers: how many the slots used in place and how many they copied (with access = "job",
  // each job's method decides).
  // A batch copies its members' inputs: each counts as a copied buffer.
  uint64_t in_place = retired_in_place_, copied = retired_copied_ + batch_stats_.jobs;
  for (const auto& s : slots_) {
    if (!s->queue) continue;  // its rebuild failed
    in_place += s->queue->buffers_in_place();
    copied += s->queue->buffers_copied();
  }
  std::string buffers = fmt::format("; host buffers: {} in place (CL_MEM_USE_HOST_PTR), {} copied{}", in_place, copied,
                                    per_job_ ? " (each job's method)" : "");
  if (!unbuilt_.empty()) buffers += "; kernels that did not build: " + unbuilt_;
  buffers += faults_.describe("command queues");
  if (!batching_) return "batching off" + buffers;
  if (!per_job_ && access_ != ClAccess::copy) return "batching off (zero_copy access)" + buffers;
  const BatchStats& b = batch_stats_;
  // Each batch buffer stages in SVM unless its allocation failed (then by copies): say which.
  const size_t in_svm = static_cast<size_t>(
      std::count_if(batches_.begin(), batches_.end(), [](const auto& x) { return x->work->uses_svm(); }));
  const std::string staging = in_svm == batches_.size() ? "in SVM"
                              : in_svm == 0             ? "by copies"
                                                        : fmt::format("in SVM ({} of {} batch buffers; the others by copies)", in_svm, batches_.size());
  return fmt::format("batching: {} small jobs ran in {} batches ({:.1f} per batch), staged {}", b.jobs, b.batches,
                     b.batches > 0 ? static_cast<double>(b.jobs) / static_cast<double>(b.batches) : 0.0, staging) +
         buffers;
}

SlotHealth OpenclDevice::slot_health(uint32_t slot) const {
  if (slot >= slots_.size()) return SlotHealth{false, "no such slot"};
  const SlotHealth& own = slots_[slot]->job.health;
  if (faults_.lost.empty()) return own;
  // The device's state first; the slot's own, where it is out of service itself (a job past its time
  // limit, a queue to rebuild), stays visible: it still holds once the device serves again.
  return SlotHealth{false, "the device is lost: " + faults_.lost +
                               (own.in_service ? std::string() : "; the slot itself: " + own.last_error)};
}

}  // namespace tandem::devices::opencl
