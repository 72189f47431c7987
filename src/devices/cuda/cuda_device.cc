#include "devices/cuda/cuda_device.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/clock.hpp"
#include "devices/copy_engines.hpp"
#include "devices/kernel_models.hpp"

namespace tandem::devices::cuda {

namespace {
CudaOptions options_from(const config::CudaSettings& s) {
  CudaOptions o;
  o.device = s.device;
  o.reduction_groups = s.reduction_groups;
  return o;
}
}  // namespace

CudaDevice::CudaDevice(const config::CudaSettings& settings)
    : settings_(settings),
      mode_(settings.mode == "persistent" ? CudaMode::persistent : CudaMode::launch),
      access_(settings.access == "zero_copy" ? CudaAccess::zero_copy : CudaAccess::copy),
      timeout_ns_(static_cast<int64_t>(settings.job_timeout_s * 1e9)),
      context_(options_from(settings)) {
  info_.kind = "cuda";
  info_.name = "cuda";
  info_.description = fmt::format("CUDA device {}: {}, {} mode", context_.device().index,
                                  describe_cuda_device(context_.device()), mode_name(mode_));
  info_.slots = settings.slots;
  info_.found = context_.found();
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    KernelId id{};
    if (kernel_for_function(fn->id, id)) info_.loadable.set(fn->id);
  }
  // Device-local memory: one allocation, at most half the GPU's memory (the slots' buffers need room too).
  constexpr uint64_t kAlign = 256;  // cudaMalloc's alignment: every buffer suits any kernel's elements
  info_.memory.local_bytes = std::min(settings.local_bytes, context_.device().global_mem_bytes / 2) / kAlign * kAlign;
  info_.memory.local_alignment = kAlign;
  info_.memory.copy_engines = info_.memory.local_bytes > 0 ? settings.copy_engines : 0;
  info_.memory.reaches_host_memory = context_.device().can_map_host_memory;
  // A persistent slot stages each host buffer in pinned memory of this size, unless its kernels use
  // host memory in place (zero-copy where the GPU has pageable-memory access); launch mode takes any.
  const bool in_place = access_ == CudaAccess::zero_copy && context_.device().pageable_memory_access;
  if (mode_ == CudaMode::persistent && !in_place) info_.memory.max_job_buffer_bytes = settings.persistent_staging_bytes;
  // Everything that allocates or frees comes before the slots: cudaFree waits for the whole device,
  // which never goes idle once persistent slots' blocks are resident. The cost model is measured on
  // a slot of the device's own mode, made and ended here.
  measure_copy_engines();
  {
    CudaSlot probe(context_, 0, mode_, settings.persistent_staging_bytes);
    measure_kernel_models(
        info_, [](KernelId) { return true; }, [&](const funcs::Call& call) { return probe.run(call, access_).ok(); },
        info_.memory.max_job_buffer_bytes > 0 ? info_.memory.max_job_buffer_bytes : UINT64_MAX);
  }
  if (info_.memory.local_bytes > 0) {
    context_.reserve_local(info_.memory.local_bytes);
    for (uint32_t i = 0; i < info_.memory.copy_engines; ++i) {
      copy_streams_.push_back(std::make_unique<CudaSlot>(context_, i, CudaMode::launch));
      copy_streams_.back()->reserve_bounce();
    }
  }
  sink_ = std::make_unique<CallbackSink>(settings.slots, UINT32_MAX);  // no batches
  for (uint32_t i = 0; i < settings.slots; ++i) {
    auto s = std::make_unique<Slot>();
    s->index = i;
    s->stream = std::make_unique<CudaSlot>(context_, i, mode_, settings.persistent_staging_bytes);
    slots_.push_back(std::move(s));
  }
}

// The copy engines' figures for the engine and the partitioner (measure_copy_rates), on scratch memory.
void CudaDevice::measure_copy_engines() {
  if (info_.memory.copy_engines == 0) return;
  const uint64_t large = std::min<uint64_t>(uint64_t{8} << 20, info_.memory.local_bytes);
  void* scratch = nullptr;
  cudaError_t e = cudaMalloc(&scratch, large);
  if (e != cudaSuccess) throw Error(status_from_cuda(e), cuda_message("cuda: measuring the copy engines (scratch memory)", e));
  std::vector<char> host(large, 1);
  try {
    const CopyRates rates = measure_copy_rates(large, [&](uint64_t bytes) {
      const int64_t t0 = now_ns();
      e = cudaMemcpy(scratch, host.data(), bytes, cudaMemcpyHostToDevice);
      if (e != cudaSuccess) throw Error(status_from_cuda(e), cuda_message("cuda: measuring the copy engines", e));
      return static_cast<double>(now_ns() - t0) * 1e-9;
    });
    info_.memory.copy_engine_setup_s = rates.setup_s;
    info_.memory.copy_engine_bps = rates.bps;
  } catch (...) {
    (void)cudaFree(scratch);
    throw;
  }
  (void)cudaFree(scratch);
}

// The memory and its copy engines were made at start (before persistent blocks): this names the window.
void CudaDevice::attach_local_memory(char* base, uint64_t bytes) { context_.attach_local(base, bytes); }

// A copy engine's transfer runs on the copy engines' thread; an error there that loses the context
// is handed to poll(), which takes the device out of service as a slot's would.
LocalTransfer CudaDevice::local_transfer() {
  return [this, timed = timed_transfers(copy_streams_, timeout_ns_)](uint32_t engine, void* dst, const void* src,
                                                                     uint64_t bytes) {
    TransferDone done = timed(engine, dst, src, bytes);
    if (done.status != Status::ok && engine < copy_streams_.size() &&
        cuda_error_loses_context(copy_streams_[engine]->last_cuda_error())) {
      std::lock_guard lock(copy_loss_mutex_);
      if (copy_loss_.empty()) copy_loss_ = copy_streams_[engine]->last_error();
      copy_lost_.store(true, std::memory_order_release);
    }
    return done;
  };
}

CudaDevice::~CudaDevice() {
  // The host functions of jobs still running name a target of the sink: wait for them (bounded), and
  // keep the sink for any that never came rather than free what a late one would use. Their streams
  // are still busy then (a hung kernel): their slots are kept too, since freeing a slot's buffers
  // would wait for the whole device (cudaFree) while the kernel still uses them.
  // After a loss no host function will ever run (nor need the slots wait): nothing to wait for.
  const int64_t deadline = faults_.lost.empty() ? now_ns() + 5'000'000'000 : 0;
  while (sink_->pending() > 0 && now_ns() < deadline) std::this_thread::sleep_for(std::chrono::microseconds(100));
  if (sink_->pending() > 0) {
    for (auto& s : slots_) (void)s.release();
  }
  slots_.clear();  // each CudaSlot waits (bounded) for its stream and stops its resident block
  CallbackSink::retire(std::move(sink_));
}

void CudaDevice::configure(uint32_t slot, uint16_t function) {
  if (slot >= slots_.size()) return;
  Slot& s = *slots_[slot];
  s.loaded_valid = kernel_for_function(function, s.loaded);  // every kernel is in the binary: nothing to load
}

void CudaDevice::on_done(void* user) {
  CallbackSink::arrive(user, DeviceCompletion{});  // a wake-up: poll() asks the slot's stream for the outcome
}

void CudaDevice::submit(uint32_t slot, const DeviceJob& job) {
  DeviceCompletion refused;
  refused.token = job.token;
  refused.slot = slot;
  refused.status = Status::device_error;
  if (!slot_in_service(slot)) return ready_.push_back(refused);
  Slot& s = *slots_[slot];
  KernelJob plan;
  bool read_failed = false;
  const Status planned = plan_device_job(job.call, context_.local(), plan, read_failed,
                                         [&](uint64_t offset, void* dst, uint64_t bytes) { return s.stream->read_local(offset, dst, bytes); });
  if (read_failed) {
    refused.status = planned;
    refused_by_cuda(s, planned);
    return ready_.push_back(refused);
  }
  if (planned != Status::ok || !s.loaded_valid || plan.kernel != s.loaded) {
    s.job.health.last_error = fmt::format("function {} started on a slot loaded with another", job.call.function);
    return ready_.push_back(refused);
  }
  if (Status st = s.stream->enqueue(job.call, plan, access_); st != Status::ok) {
    refused.status = st;
    refused_by_cuda(s, st);
    return ready_.push_back(refused);
  }
  s.job.start(job.token, job.start_ns);
  s.announced = false;  // polled while young; a wake-up is asked for if it runs longer (poll)
  s.announce_tried = false;
}

// A launch-mode job still running after kPolledNs gets a host function that wakes the dispatcher when
// it ends, so that it may sleep meanwhile. A short job never pays for one (several us on the stream).
void CudaDevice::announce(Slot& s) {
  s.announce_tried = true;  // once per job: a failure is not retried at every poll
  sink_->expect();
  if (cudaLaunchHostFunc(s.stream->stream(), &CudaDevice::on_done, sink_->slot_target(s.index)) == cudaSuccess) {
    s.announced = true;
  } else {
    (void)cudaGetLastError();
    sink_->cancel();  // it stays polled
  }
}

void CudaDevice::rebuild(Slot& s, std::string why, int64_t now) {
  s.stream.reset();
  std::string lost;  // the new stream failed on a lost context's sticky error: no slot can be rebuilt
  rebuild_slot(s.job, faults_, why, now, "the slot's stream was rebuilt", [&] {
    try {
      s.stream = std::make_unique<CudaSlot>(context_, s.index, mode_, settings_.persistent_staging_bytes);
    } catch (const CudaError& e) {
      if (cuda_error_loses_context(e.cuda_error())) lost = e.what();
      throw;
    }
  });
  if (!lost.empty()) lose_context(lost);
}

// A job refused before it ran (a launch, an allocation, the read of dct_quant's table): the slot
// serves on, unless CUDA's error lost the context.
void CudaDevice::refused_by_cuda(Slot& s, Status status) {
  s.job.health.last_error = s.stream->last_error();
  if (status == Status::no_memory) {
    ++faults_.out_of_memory;
  } else if (s.stream->last_cuda_error() != cudaSuccess && faults_.lost.empty()) {
    ++faults_.failed_launches;
    if (cuda_error_loses_context(s.stream->last_cuda_error())) lose_context(s.stream->last_error());
  }
}

void CudaDevice::job_failed(Slot& s, std::string why, int64_t now) {
  if (!faults_.lost.empty()) return;  // jobs in flight at the loss fail with it: counted once
  ++faults_.failed_launches;
  if (cuda_error_loses_context(s.stream->last_cuda_error())) {
    lose_context(why);
  } else {
    rebuild(s, std::move(why), now);
  }
}

// Every slot leaves service, and none is rebuilt: each later call of this process on the device
// would fail. Jobs still in flight complete at the next poll (next_deadline asks for one at once),
// which finds their streams failed.
void CudaDevice::lose_context(const std::string& why) {
  if (!faults_.lost.empty()) return;
  faults_.lost = why + " (an error CUDA does not recover from: restart tandemd)";
  ++faults_.losses;
  for (auto& sp : slots_) {
    SlotHealth& h = sp->job.health;
    h.in_service = false;
    h.last_error = lost_context_error();
    sp->job.rebuild_at_ns = INT64_MAX;  // no rebuild is tried again (nor due, which would keep the dispatcher awake)
  }
}

// A slot's last error once the context is lost; `tandem status` prints it after "OUT OF SERVICE: ".
std::string CudaDevice::lost_context_error() const { return "the CUDA context is lost for good: " + faults_.lost; }

std::string CudaDevice::activity() const {
  return fmt::format("{} mode, {} access", mode_name(mode_), access_name(access_)) + faults_.describe("streams");
}

void CudaDevice::poll(int64_t now, std::vector<DeviceCompletion>& out) {
  last_poll_ns_ = now;
  if (copy_lost_.load(std::memory_order_acquire) && faults_.lost.empty()) {
    std::string why;
    {
      std::lock_guard lock(copy_loss_mutex_);
      why = copy_loss_;
    }
    lose_context(why);
  }
  if (!ready_.empty()) {
    out.insert(out.end(), ready_.begin(), ready_.end());
    ready_.clear();
  }
  arrived_.clear();
  sink_->inbox().take(arrived_);  // only wake-ups: every busy slot is asked below
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (!s.job.busy) continue;
    bool done = false;
    Status st = s.stream->query(done);
    if (st == Status::ok && !done && !faults_.lost.empty()) {
      st = Status::device_error;  // its stream cannot finish it any more: completed as failed at once
    }
    if (st == Status::ok && !done) {
      if (mode_ == CudaMode::launch && !s.announce_tried && now - s.job.start_ns > kPolledNs) announce(s);
      s.job.expire(s.index, now, timeout_ns_, out);
      continue;
    }
    DeviceCompletion c;
    c.token = s.job.token;
    c.slot = s.index;
    if (st == Status::ok) {
      c.value = s.stream->finish();
      c.device_ns = now - s.job.start_ns;  // host-measured: no device timer on the completion path
    }
    const bool timed_out = s.job.finished(now);  // already completed, with TIMEOUT
    if (st != Status::ok) {  // after finished(): a rebuild that fails keeps the slot out of service
      c.status = st;
      job_failed(s, s.stream->last_error(), now);
    }
    if (!faults_.lost.empty()) {  // finished() may have put it back (a job that had timed out)
      s.job.health.in_service = false;
      s.job.health.last_error = lost_context_error();
    }
    if (timed_out) continue;
    out.push_back(c);
  }
  for (auto& sp : slots_) {
    if (sp->job.rebuild_due(now) && faults_.lost.empty()) rebuild(*sp, sp->job.rebuild_reason, now);
  }
}

int64_t CudaDevice::next_deadline() const {
  if (!ready_.empty()) return 0;
  int64_t deadline = INT64_MAX;
  for (const auto& s : slots_) {
    deadline = std::min(deadline, s->job.deadline(timeout_ns_));  // and a failed rebuild's next try
    if (!s->job.busy) continue;
    // Jobs without a wake-up (persistent ones, and launched ones while young) are looked at again at
    // once: the dispatcher spins, and sees the end within a microsecond. An abandoned job (past
    // job_timeout) is asked for less often: far enough apart that the dispatcher sleeps between.
    if (!faults_.lost.empty()) {
      deadline = std::min(deadline, last_poll_ns_);  // the next poll completes it (failed)
    } else if (s->job.abandoned) {
      deadline = std::min(deadline, last_poll_ns_ + (s->announced ? kAnnouncedCheckNs : kAbandonedCheckNs));
    } else if (!s->announced) {
      deadline = std::min(deadline, last_poll_ns_ + 1'000);
    } else {
      deadline = std::min(deadline, last_poll_ns_ + kAnnouncedCheckNs);
    }
  }
  return deadline;
}

SlotHealth CudaDevice::slot_health(uint32_t slot) const {
  if (slot >= slots_.size()) return SlotHealth{false, "no such slot"};
  return slots_[slot]->job.health;
}

}  // namespace tandem::devices::cuda
