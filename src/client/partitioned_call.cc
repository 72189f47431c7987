#include "client/partitioned_call.hpp"

#include <time.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>
#include <cstring>

#include "abi/atomics.hpp"
#include "abi/futex.hpp"
#include "abi/metrics.hpp"
#include "base/clock.hpp"
#include "client/trace.hpp"

namespace tandem::client {

namespace {

using engine::JobEvent;
using engine::Partitioner;
using engine::PartitionPolicy;
using engine::Step;
using engine::StepKind;

// What a call's software decision derives from figures that seldom change (the learnt estimates, the
// CPU share, the live replicas and bandwidth), kept per thread and function for the next call while
// they stay the same: a call too small for the hardware then costs no more in automatic mode than in
// software-only mode.
struct PlanMemo {
  model::CostParams planned;  // the figures the call plans with, X_c at the share
  uint64_t nl = 0;            // N_L from them, the hardware judged by its cheapest way in
  uint64_t prior_nl = 0;      // N_L from the runtime's prior figures (automatic mode's exploration)

  bool holds(bool learning, uint64_t learned_version, double share, const model::LiveMetrics& m) const {
    return valid_ && learning_ == learning && learned_version_ == learned_version && share_ == share &&
           n_a_ == m.n_a && available_bw_ == m.available_bw;
  }
  void keep(bool learning, uint64_t learned_version, double share, const model::LiveMetrics& m) {
    valid_ = true;
    learning_ = learning;
    learned_version_ = learned_version;
    share_ = share;
    n_a_ = m.n_a;
    available_bw_ = m.available_bw;
  }

 private:
  bool valid_ = false;
  bool learning_ = false;
  uint64_t learned_version_ = 0;
  double share_ = 0;
  uint32_t n_a_ = 0;
  double available_bw_ = 0;
};

// A partitioner per (runtime, function) and thread, rebuilt when the runtime's policy changes: it
// allocates only when built, so the steady call path allocates nothing.
struct CachedPartitioner {
  uint64_t serial = 0;
  uint16_t function = 0;
  uint64_t version = 0;
  Runtime::CallPolicy policy;
  std::optional<Partitioner> partitioner;
  PlanMemo memo;
};

thread_local std::array<CachedPartitioner, 4> cached;
thread_local uint32_t cached_victim = 0;
// The live figures this thread read last, per function, and from which runtime.
thread_local std::array<model::LiveMetrics, TANDEM_FN_MAX> last_metrics{};
thread_local uint64_t last_metrics_runtime = 0;

CachedPartitioner& partitioner_for(const Runtime& rt, uint16_t function) {
  const uint64_t version = rt.policy_version();
  CachedPartitioner* entry = nullptr;
  for (CachedPartitioner& c : cached) {
    if (c.serial == rt.serial() && c.function == function && c.partitioner) {
      entry = &c;
      break;
    }
  }
  if (entry != nullptr && entry->version == version) return *entry;
  if (entry == nullptr) entry = &cached[cached_victim++ % cached.size()];
  entry->serial = rt.serial();
  entry->function = function;
  entry->policy = rt.call_policy(function, entry->version);
  entry->partitioner.emplace(entry->policy.params, entry->policy.config);
  entry->memo = PlanMemo{};
  return *entry;
}

uint32_t status_acquire(const tandem_completion_t& rec) {
  return rt::record_status(&rec);  // acquire: pairs with complete_record's release
}

// How one call's data reaches the device (access.hpp): the method its jobs carry, and the cost
// parameters that method gives them.
struct CallAccess {
  uint8_t method = TANDEM_ACCESS_ZERO_COPY;
  bool device_buffers = false;  // some buffer is a device address: no CPU share, software only by bouncing
  // The copy method's buffers go through this thread's staging (false: they are session memory and
  // the device copies them itself, model::DeviceCopyCosts).
  bool staged = true;
  // The device copies the jobs' buffers where its figures (and the live estimates) are in place: their
  // device times teach the estimates as their in-place equivalents (`copy_costs`).
  bool device_copied = false;
  model::DeviceCopyCosts copy_costs;
  model::CostParams params;
};

bool is_device_address(uint64_t address) { return (address & TANDEM_DEVICE_ADDRESS_BIT) != 0; }

// Decides the access method of a call that the base model would accelerate. access_unsupported when a
// forced method cannot serve its buffers.
Status plan_access(Runtime& rt, const funcs::FunctionInfo& fn, const funcs::Call& call, const model::CostParams& base,
                   const model::LiveMetrics& m, uint32_t jobs, CallAccess& out) {
  funcs::Call described;
  funcs::BufferList buffers;
  out.params = base;
  if (funcs::describe_call(fn, {call.args.data(), call.arg_count}, described, buffers) != Status::ok) return Status::ok;
  uint64_t host_bytes = 0, local_bytes = 0;
  bool foreign = false;
  for (uint32_t i = 0; i < buffers.count; ++i) {
    const funcs::BufferUse& b = buffers.items[i];
    if (b.bytes == 0) continue;
    const uint64_t address = call.args[b.arg];
    if (is_device_address(address)) {
      local_bytes += b.bytes;
      continue;
    }
    host_bytes += b.bytes;
    foreign = foreign || !rt.in_session_memory(reinterpret_cast<const void*>(static_cast<uintptr_t>(address)), b.bytes);
  }
  out.device_buffers = local_bytes > 0;
  const double units = std::max<double>(1, static_cast<double>(call.workload));
  const DeviceSummary* host = rt.host_device(fn.id);
  const devices::TransferModel transfer = host != nullptr ? host->memory.transfer : devices::TransferModel{};
  const model::DeviceCopyCosts device_copy =
      host != nullptr ? model::DeviceCopyCosts::between(host->models[fn.id], host->copy_models[fn.id]) : model::DeviceCopyCosts{};
  // The copy method stages on this thread, unless the buffers are session memory on a device that
  // copies them itself: then a second copy would only cost the caller (its price: no memcpy).
  const bool staged = foreign || !device_copy.measured;
  HostAccessCosts costs = rt.access_costs();
  if (!staged) costs.memcpy_bps = 0;
  const bool remote = rt.engine_is_remote();
  const auto bytes_per_unit = [&](uint8_t method) {
    return static_cast<double>(method == TANDEM_ACCESS_DEVICE_LOCAL ? local_bytes : host_bytes) / units;
  };
  const auto params_for = [&](uint8_t method) {
    return model::with_access(base, method, bytes_per_unit(method), transfer, costs, remote, device_copy);
  };
  const AccessChoice choice = rt.access_choice();
  uint8_t method = TANDEM_ACCESS_ZERO_COPY;
  switch (choice) {
    case AccessChoice::zero_copy:
      if (foreign) return Status::access_unsupported;  // not session memory: nothing to map in place
      method = host_bytes > 0 || local_bytes == 0 ? TANDEM_ACCESS_ZERO_COPY : TANDEM_ACCESS_DEVICE_LOCAL;
      break;
    case AccessChoice::copy: method = host_bytes > 0 ? TANDEM_ACCESS_COPY : TANDEM_ACCESS_DEVICE_LOCAL; break;
    case AccessChoice::scatter_gather:
      method = host_bytes > 0 ? TANDEM_ACCESS_SCATTER_GATHER : TANDEM_ACCESS_DEVICE_LOCAL;
      break;
    case AccessChoice::device_local:
      if (host_bytes > 0 || local_bytes == 0) return Status::access_unsupported;  // the data is not on the device
      method = TANDEM_ACCESS_DEVICE_LOCAL;
      break;
    case AccessChoice::automatic:
      if (host_bytes == 0 && local_bytes > 0) {
        method = TANDEM_ACCESS_DEVICE_LOCAL;
      } else if (!foreign && !device_copy.measured) {
        method = TANDEM_ACCESS_ZERO_COPY;  // in place: nothing to move but the DMA itself
      } else if (!foreign) {
        // A device that works in place or copies into its own memory, as each job asks, measured both
        // ways: the copy where its predicted plan is faster by the margin the two measurements' noise
        // asks (in place is the default). A copy here is the device's alone (not staged).
        const uint8_t candidates[] = {TANDEM_ACCESS_ZERO_COPY, TANDEM_ACCESS_COPY};
        method = model::choose_access(candidates, base, m, jobs, static_cast<double>(call.workload),
                                      bytes_per_unit(TANDEM_ACCESS_COPY), transfer, costs, remote, device_copy,
                                      model::kDeviceCopyMargin);
      } else {
        // Memory the engine cannot map: a staging copy on this thread, or the pages gathered by the
        // engine. The faster predicted plan of the two (they differ in set-up and in who copies).
        const uint8_t candidates[] = {TANDEM_ACCESS_COPY, TANDEM_ACCESS_SCATTER_GATHER};
        method = model::choose_access(candidates, base, m, jobs, static_cast<double>(call.workload),
                                      bytes_per_unit(TANDEM_ACCESS_COPY), transfer, costs, remote, device_copy);
      }
      break;
  }
  out.method = method;
  out.staged = staged;
  out.device_copied = device_copy.measured && model::DeviceCopyCosts::copies(method) && host_bytes > 0;
  out.copy_costs = device_copy;
  out.params = params_for(method);
  return Status::ok;
}

// CPU time of a call's software steps before their measured rate replaces the modelled X_c: shorter
// spans are mostly clock and cache noise.
constexpr double kMeasuredRateMinS = 8e-6;

// A software call or CPU step expected to take at least this long on a whole core reads the thread's
// CPU clock around its work (two system calls, about 0.7 us here: under 4% of such a call). Shorter
// software spans (small calls, and the CPU chunks of a split or waiting call: C_COWORK_MAX of
// whole-core work) take their wall time as their CPU time: the scheduler's time slices are milliseconds, so it rarely
// cuts one, and one it cut teaches a slower core, not a faster one. Wall time / share taught crowded
// threads a core 1/share times faster than it is (the share counts threads asleep on their jobs as
// competitors): 254x with 512 such callers.
constexpr double kCpuClockMinS = 20e-6;

// Performs one call's steps. Times given to the partitioner are seconds since the call began.
class Driver {
 public:
  // `core_xc`: X_c of a whole core (which CPU steps are long enough to read the CPU clock around).
  Driver(Runtime& rt, const funcs::FunctionInfo& fn, const funcs::Call& call, Partitioner& part,
         tandem_completion_t* records, const CallAccess& access, double core_xc)
      : rt_(rt), fn_(fn), call_(call), part_(part), records_(records), queue_(rt.default_queue()),
        wait_(rt.options().wait), access_(access),
        jobs_limit_(std::min(part.config().max_outstanding_jobs, kMaxCallJobs)),
        clock_min_units_(kCpuClockMinS * core_xc) {
    if (access_.method == TANDEM_ACCESS_COPY && access_.staged) staging_ = rt.thread_staging();
    if (staging_ != nullptr) staging_->reset();
  }

  ~Driver() { release_bounce(); }
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  double hw_done_s() const { return hw_done_s_; }
  uint32_t sleeps() const { return sleeps_; }
  CallObservation& observation() { return observation_; }
  double done_s() const { return done_s_; }

  Status run(const model::LiveMetrics& first, int64_t& value) {
    metrics_ = first;
    origin_ = tandem::now_ns();
    part_.start(call_.workload, 0.0, first);
    for (;;) {
      const double t = now();  // one clock reading per step: events are reported at the time they were seen
      collect(t);
      seen_promptly_ = false;
      if (refused_ != Status::ok) {  // a job named memory it may not touch: the call fails, nothing is retried
        if (outstanding_count_ > 0 || cancel_outstanding_) {
          wait_for_event(INFINITY);
          continue;
        }
        finish_bounce();
        value = 0;
        done_s_ = now();
        return refused_;
      }
      (void)read_live_metrics(rt_, fn_.id, metrics_);  // unreadable for a moment: the last figures stand
      const Step step = part_.next(t, metrics_);
      switch (step.kind) {
        case StepKind::run_sw: run_sw(step.range); break;
        case StepKind::submit_job: submit(step, t); break;
        case StepKind::submit_demand:
          // No record: the engine answers NOT_ACCELERATED or nothing, and the partitioner wants no report.
          (void)queue_.dispatch(fn_.id, nullptr, 0, 0, nullptr, false, TANDEM_FLAG_DEMAND_ONLY);
          break;
        case StepKind::cancel_job: cancel(step, t); break;
        case StepKind::wait:
          wait_for_event(step.wake_at, step.until_all_done);
          seen_promptly_ = true;  // what the next collect finds arrived while this thread watched
          break;
        case StepKind::done:
          if (cancel_outstanding_) drain_cancel();
          finish_bounce();
          value = have_value_ ? value_ : 0;
          done_s_ = now();
          return failure_;
      }
      // The runtime broke (the daemon died): the call fails now, whatever is left of it; its value
      // would not be delivered anyway. The partitioner forgets the abandoned call at its next start().
      if (failure_ != Status::ok) {
        done_s_ = now();
        return failure_;
      }
    }
  }

 private:
  double now() const { return static_cast<double>(tandem::now_ns() - origin_) * 1e-9; }

  void combine(int64_t partial) {
    value_ = have_value_ ? fn_.combine(value_, partial) : partial;
    have_value_ = true;
  }

  // A software step. Device-local buffers cannot be read here: their data is bounced to this process
  // once (copy engines), and the outputs go back when the call ends.
  void run_sw(const engine::WorkRange& range) {
    if (!access_.device_buffers) {
      // A chunk is short (C_COWORK_MAX); some policies run the whole rest of the CPU share in one step,
      // which the scheduler may slice: that one reads the CPU clock (kCpuClockMinS).
      const bool read_clock = static_cast<double>(range.size()) > clock_min_units_;
      const int64_t c0 = read_clock ? tandem::thread_cpu_ns() : 0;
      const int64_t t0 = tandem::now_ns();
      combine(fn_.run_sw(call_, range.begin, range.end));
      const int64_t wall_ns = tandem::now_ns() - t0;
      note_cpu_progress(range.size(), wall_ns, read_clock ? tandem::thread_cpu_ns() - c0 : wall_ns);
      return;
    }
    if (!bounce()) {
      failure_ = Status::no_memory;
      return;
    }
    const int64_t partial = fn_.run_sw(bounced_, range.begin, range.end);
    combine(partial);
    if (funcs::wrote_outputs(fn_, partial)) note_bounced_writes(range);
  }

  // The device-local output bytes a software step over `range` wrote in the bounce buffers: only those go
  // back when the call ends, since the rest of each output is the device jobs' (or untouched).
  void note_bounced_writes(const engine::WorkRange& range) {
    funcs::Call part, described;
    funcs::BufferList buffers;
    fn_.slice(call_, range.begin, range.end, part);
    if (funcs::describe_call(fn_, {part.args.data(), part.arg_count}, described, buffers) != Status::ok) {
      for (uint32_t i = 0; i < bounce_count_; ++i) {  // no slice to go by: the whole outputs go back
        if (bounces_[i].write) bounced_writes_.emplace_back(bounces_[i].device, bounces_[i].device + bounces_[i].bytes);
      }
      return;
    }
    for (uint32_t i = 0; i < buffers.count; ++i) {
      const funcs::BufferUse& b = buffers.items[i];
      const uint64_t address = part.args[b.arg];
      if (b.write && b.bytes > 0 && is_device_address(address)) bounced_writes_.emplace_back(address, address + b.bytes);
    }
  }

  // Measured progress of the CPU share: the partitioner plans the rest of the call with the rate this
  // thread actually gets (contention included) once a few chunks back it.
  // `cpu_ns`: the step's CPU time (its wall time for a short step: kCpuClockMinS) teaches X_c.
  void note_cpu_progress(uint64_t units, int64_t wall_ns, int64_t cpu_ns) {
    observation_.sw_units += static_cast<double>(units);
    observation_.sw_wall_s += static_cast<double>(wall_ns) * 1e-9;
    observation_.sw_cpu_s = std::max(0.0, observation_.sw_cpu_s) + static_cast<double>(cpu_ns) * 1e-9;
    if (observation_.sw_wall_s >= kMeasuredRateMinS && rt_.adaptive()) part_.observe_cpu_rate(observation_.sw_units / observation_.sw_wall_s);
  }

  bool bounce() {
    if (bounce_ready_) return true;
    bounced_ = call_;
    funcs::Call described;
    funcs::BufferList buffers;
    if (funcs::describe_call(fn_, {call_.args.data(), call_.arg_count}, described, buffers) != Status::ok) return false;
    for (uint32_t i = 0; i < buffers.count; ++i) {
      const funcs::BufferUse& b = buffers.items[i];
      const uint64_t address = call_.args[b.arg];
      if (b.bytes == 0 || !is_device_address(address)) continue;
      void* host = rt_.alloc(b.bytes);
      if (host != nullptr) bounces_[bounce_count_++] = Bounce{address, host, b.bytes, b.write};
      if (host == nullptr || (!b.write && rt_.copy_local(reinterpret_cast<uintptr_t>(host), address, b.bytes) != Status::ok)) {
        release_bounce();  // a later step starts over; none of it is kept
        return false;
      }
      bounced_.buffers[i] = host;
    }
    bounce_ready_ = true;
    return true;
  }

  void finish_bounce() {
    // Per output, adjacent software steps wrote adjacent bytes: one copy per run of them.
    std::sort(bounced_writes_.begin(), bounced_writes_.end());
    for (uint32_t i = 0; i < bounce_count_ && bounce_ready_; ++i) {
      const Bounce& b = bounces_[i];
      if (!b.write) continue;
      uint64_t run_begin = 0, run_end = 0;
      const auto flush = [&] {
        if (run_end <= run_begin) return;
        const uintptr_t host = reinterpret_cast<uintptr_t>(b.host) + (run_begin - b.device);
        if (Status s = rt_.copy_local(run_begin, host, run_end - run_begin); s != Status::ok) failure_ = s;
      };
      for (const auto& [begin, end] : bounced_writes_) {
        if (begin < b.device || end > b.device + b.bytes) continue;  // another output's
        if (begin > run_end || run_end <= run_begin) {
          flush();
          run_begin = begin;
          run_end = end;
        } else {
          run_end = std::max(run_end, end);
        }
      }
      flush();
    }
    release_bounce();
  }

  // The bounce buffers freed, nothing copied back (also when a call fails part-way: ~Driver).
  void release_bounce() {
    for (uint32_t i = 0; i < bounce_count_; ++i) rt_.free(bounces_[i].host);
    bounce_count_ = 0;
    bounced_writes_.clear();
  }

  // The copy method: the job's input copied into staging session memory, its output noted for copying
  // back once it completes. False (the job goes back to software) when staging runs out.
  bool stage(engine::JobId job, funcs::Call& part) {
    funcs::Call described;
    funcs::BufferList buffers;
    outputs_[job].count = 0;
    if (funcs::describe_call(fn_, {part.args.data(), part.arg_count}, described, buffers) != Status::ok) return false;
    for (uint32_t i = 0; i < buffers.count; ++i) {
      const funcs::BufferUse& b = buffers.items[i];
      const uint64_t address = part.args[b.arg];
      if (b.bytes == 0 || is_device_address(address)) continue;
      void* staged = staging_->take(b.bytes);
      if (staged == nullptr) return false;
      auto* user = reinterpret_cast<char*>(static_cast<uintptr_t>(address));
      if (b.write) {
        outputs_[job].items[outputs_[job].count++] = Output{user, static_cast<char*>(staged), b.bytes};
      } else {
        std::memcpy(staged, user, b.bytes);
      }
      part.args[b.arg] = reinterpret_cast<uintptr_t>(staged);
    }
    return true;
  }

  void submit(const Step& step, double t) {
    funcs::Call part;
    fn_.slice(call_, step.range.begin, step.range.end, part);
    records_units_[step.job] = step.range.size();
    tandem_completion_t* rec = &records_[step.job];
    rt::reset_record(rec);
    if (staging_ != nullptr && !stage(step.job, part)) {
      (void)part_.report(step.job, JobEvent::failed, t, Status::no_memory);  // no staging: software
      return;
    }
    // Jobs carry their arguments inline; a function with more words would need an argument block.
    const uint32_t flags = TANDEM_FLAG_ACCESS(access_.method);
    const int64_t submit_ns = tandem::now_ns();
    // A call whose first job had to wake a sleeping dispatcher pays that wake-up once, not per job.
    if (first_submit_ns_ == 0 && queue_.consumer_sleeping()) woke_dispatcher_ = true;
    Status s = part.arg_count <= TANDEM_INLINE_ARGS
                   ? queue_.dispatch(fn_.id, part.args.data(), part.arg_count, part.workload, rec, false, flags,
                                     trace_job_tag(step.job))
                   : Status::invalid_argument;
    if (s == Status::ok) {
      const int64_t submitted_ns = tandem::now_ns();
      trace_published(step.job, fn_.id, part.workload);
      outstanding_[step.job] = true;
      submit_order_[step.job] = ++submitted_;
      ++outstanding_count_;
      if (first_submit_ns_ == 0) first_submit_ns_ = submit_ns;
      // O_c's submission half; collecting and combining costs about as much again (a completion
      // record read and one combine), which the estimate doubles in.
      observation_.job_overhead_s += 2e-9 * static_cast<double>(submitted_ns - submit_ns);
      ++observation_.overhead_jobs;
      return;
    }
    if (s != Status::invalid_argument) failure_ = s;  // the runtime is unusable; SW still finishes the call
    (void)part_.report(step.job, JobEvent::failed, t, s);
  }

  void cancel(const Step& step, double t) {
    if (cancel_outstanding_) drain_cancel();  // one cancel record per thread: wait for its last answer
    tandem_completion_t* answer = &records_[kCancelRecord];
    rt::reset_record(answer);
    if (queue_.cancel(&records_[step.job], answer) != Status::ok) {
      (void)part_.report(step.job, JobEvent::cancel_refused, t);
      return;
    }
    rt_.stats().cancels.fetch_add(1, std::memory_order_relaxed);
    cancel_outstanding_ = true;
    cancel_answered_ = false;
    cancel_job_ = static_cast<int>(step.job);
  }

  void drain_cancel() {
    rt::WaitPolicy p = wait_policy();
    p.timeout_ns = -1;
    const Status s = rt::wait_record(&records_[kCancelRecord], p, rt_.liveness());
    if (s == Status::disconnected) {
      fail_outstanding(s);
      return;
    }
    note_cancel_answer();
  }

  void note_cancel_answer() {
    const tandem_completion_t& answer = records_[kCancelRecord];
    if (status_acquire(answer) == TANDEM_PENDING) return;
    cancel_outstanding_ = false;
    cancel_answered_ = true;
    cancel_withdrawn_ = abi::load_relaxed(answer.value) != 0;
  }

  // Reports every job event observed since the last look.
  void collect(double t) {
    if (outstanding_count_ == 0) return;
    if (cancel_outstanding_) note_cancel_answer();  // before the targets: its answer follows theirs
    for (uint32_t j = 0; j < jobs_limit_; ++j) {
      if (!outstanding_[j]) continue;
      const tandem_completion_t& rec = records_[j];
      const uint32_t wire = status_acquire(rec);
      const bool is_cancel_target = cancel_job_ == static_cast<int>(j);
      if (wire == TANDEM_PENDING) {
        if (is_cancel_target && cancel_answered_ && !cancel_withdrawn_) {
          (void)part_.report(j, JobEvent::cancel_refused, t);  // it runs; its completion follows
          cancel_job_ = -1;
        }
        continue;
      }
      outstanding_[j] = false;
      --outstanding_count_;
      const Status s = from_wire(wire);
      trace_observed(j, s);
      if (s == Status::ok) {
        // The copy method: the job's output back from staging, if it wrote any.
        if (staging_ != nullptr && funcs::wrote_outputs(fn_, static_cast<int64_t>(abi::load_relaxed(rec.value)))) {
          for (uint32_t k = 0; k < outputs_[j].count; ++k) {
            const Output& o = outputs_[j].items[k];
            std::memcpy(o.user, o.staged, o.bytes);
          }
        }
        combine(abi::load_relaxed(rec.value));
        (void)part_.report(j, JobEvent::completed, t);
        hw_done_s_ = t;
        note_job(j, rec);
      } else if (s == Status::cancelled && is_cancel_target) {
        (void)part_.report(j, JobEvent::cancelled, t);
      } else {
        (void)part_.report(j, JobEvent::failed, t, s);  // the partitioner decides: retry, or software
        // ... and if the device refused the memory the call names, the call ends with that: software
        // would follow the same pointers (list_walk) and a retry fails again.
        if (s == Status::translation_fault) refused_ = s;
      }
      if (is_cancel_target) cancel_job_ = -1;
    }
  }

  // A completed job's timing for self-calibration: its units and device time. The host's part of D_a
  // is learnt per call (finish_observation): a job's own round trip would leave out what a starved
  // dispatcher or a busy machine adds to a whole round.
  void note_job(uint32_t j, const tandem_completion_t& rec) {
    const double device_s = static_cast<double>(abi::load_relaxed(rec.device_ns)) * 1e-9;
    const double units = static_cast<double>(records_units_[j]);
    if (!(device_s > 0) || !(units > 0)) return;
    ++round_jobs_;
    round_device_s_ += device_s;
    last_seen_ns_ = tandem::now_ns();
    last_seen_promptly_ = seen_promptly_;
    // When the engine completed it: its clock's low 32 bits, placed after our first submission (the
    // engine saw the packet after we stamped it). Out of range (a round over 4.3 s): not known.
    const uint32_t since = abi::load_relaxed(rec.done_ns_lo) - static_cast<uint32_t>(first_submit_ns_);
    if (first_submit_ns_ != 0 && static_cast<int64_t>(since) <= last_seen_ns_ - first_submit_ns_) {
      last_done_ns_ = std::max(last_done_ns_, first_submit_ns_ + static_cast<int64_t>(since));
    } else {
      done_times_known_ = false;
    }
    // The estimates hold in-place figures: a copied job teaches its in-place equivalent (CallAccess).
    const double learnt_s = access_.device_copied ? access_.copy_costs.in_place_s(device_s, units) : device_s;
    if (observation_.job_count < CallObservation::kMaxJobs) observation_.jobs[observation_.job_count++] = {units, learnt_s, -1};
  }

 public:
  // Once the call is done: Eq 5.6's hardware side is D_q + n_j D_a + (the jobs' device time spread over
  // the n_a replicas); what the jobs took from the first submission to the last completion beyond
  // their device time, per job, is this call's sample of D_a's host part (the round trip). The last
  // completion's time is the engine's (in the records), so a thread busy with its CPU share while the
  // jobs finished learns as well as one that waited; without those times, only a thread that was
  // waiting for the last completion (it saw it when it came) takes a sample. Learning only from waiting
  // threads kept a first guess of D_a that was too high forever: the CPU got too much, finished last,
  // and never waited again. A call that woke a sleeping dispatcher gives only an upper bound: D_a is a
  // job's latency on a running engine, and a wake-up (50-200 us on a VM, paid once after an idle gap)
  // spread over the call's few jobs made the first calls of a process teach a D_a 100x too high, which
  // kept every later call in software (the demo's auto phase). The bound still corrects a figure above
  // it: calls that explore from software find the dispatcher asleep.
  void finish_observation(uint32_t n_a) {
    if (round_jobs_ == 0 || observation_.job_count == 0 || first_submit_ns_ == 0) return;
    const bool engine_times = done_times_known_ && last_done_ns_ > first_submit_ns_;
    if (!engine_times && !last_seen_promptly_) return;
    const int64_t last_ns = engine_times ? last_done_ns_ : last_seen_ns_;
    const double round_s = static_cast<double>(last_ns - first_submit_ns_) * 1e-9;
    const double excess = round_s - round_device_s_ / std::max<uint32_t>(n_a, 1);
    observation_.jobs[0].round_trip_s = std::max(0.0, excess / round_jobs_);
    observation_.round_trip_bound_only = woke_dispatcher_;
  }

 private:
  bool any_event() const {
    if (cancel_outstanding_ && status_acquire(records_[kCancelRecord]) != TANDEM_PENDING) return true;
    for (uint32_t j = 0; j < jobs_limit_; ++j) {
      if (outstanding_[j] && status_acquire(records_[j]) != TANDEM_PENDING) return true;
    }
    return false;
  }

  // Until a record changes or `wake_at` (s since the call began; +inf: events only) passes: spin for
  // the wait policy's budget, then sleep on every outstanding record at once, or, when only the last
  // completion matters (`until_all_done`), on the last job submitted alone: every other completion
  // would cost a wake-up of this thread (and the dispatcher a futex_wake) for nothing. The jobs
  // finish about in the order they were submitted; one that finishes later is slept on next.
  void wait_for_event(double wake_at, bool until_all_done = false) {
    const int64_t wake_ns = std::isfinite(wake_at) ? origin_ + static_cast<int64_t>(std::ceil(wake_at * 1e9))
                                                   : std::numeric_limits<int64_t>::max();
    if (!cancel_outstanding_ && outstanding_count_ == 0) {
      // Nothing can arrive: a back-off (sleep it out) or a decision to take again at once.
      if (wake_ns != std::numeric_limits<int64_t>::max()) sleep_until(wake_ns);
      return;
    }
    const int64_t start = tandem::now_ns();
    const rt::WaitPolicy wait = wait_policy();
    const int64_t spin_until = wait.mode == rt::WaitMode::block  ? start
                               : wait.mode == rt::WaitMode::spin ? std::numeric_limits<int64_t>::max()
                                                                 : start + wait.spin_ns;
    int64_t next_check = start + rt::kLivenessPeriodNs;
    for (uint32_t i = 0;; ++i) {
      if (any_event()) return;
      abi::cpu_relax();
      if ((i & 31) != 0) continue;
      const int64_t t = tandem::now_ns();
      if (t >= wake_ns) return;
      if (t >= spin_until) break;
      if (t >= next_check) {  // spin mode spins until an event: a dead daemon must still end it
        if (!alive()) return;
        next_check = t + rt::kLivenessPeriodNs;
      }
    }
    std::array<abi::FutexWaitTarget, kMaxCallJobs + 1> targets{};
    for (;;) {
      // Announce a sleeper on every outstanding record (until_all_done: on the last job's alone, and
      // the cancel answer's); one that is already final is the event.
      size_t n = 0;
      bool event = false;
      const auto add = [&](tandem_completion_t& rec) {
        if (rt::announce_sleeper(&rec) != TANDEM_PENDING) event = true;
        targets[n++] = {&rec.status, static_cast<uint32_t>(TANDEM_PENDING)};
      };
      if (cancel_outstanding_) add(records_[kCancelRecord]);
      if (until_all_done) {
        uint32_t last = jobs_limit_;
        for (uint32_t j = 0; j < jobs_limit_; ++j) {
          if (outstanding_[j] && (last == jobs_limit_ || submit_order_[j] > submit_order_[last])) last = j;
        }
        if (last < jobs_limit_) add(records_[last]);
      } else {
        for (uint32_t j = 0; j < jobs_limit_; ++j) {
          if (outstanding_[j]) add(records_[j]);
        }
      }
      if (n == 0 || event) return;
      // Bounded slices so that a dead daemon is noticed (rt::Liveness).
      const int64_t slice_end = std::min(wake_ns, tandem::now_ns() + rt::kLivenessPeriodNs);
      ++sleeps_;
      const int rc = abi::futex_waitv({targets.data(), n}, slice_end);
      if (rc == ENOSYS) abi::futex_wait(targets[0].word, TANDEM_PENDING, 50'000);
      if (any_event() || tandem::now_ns() >= wake_ns) return;
      if (!alive()) return;
    }
  }

  // The call's wait policy, less spin-then-block's spin budget where no core is to spare
  // (Runtime::waiting_may_spin): a spinning waiter would take the CPU from the dispatcher.
  rt::WaitPolicy wait_policy() const {
    rt::WaitPolicy p = wait_;
    if (p.mode == rt::WaitMode::spin_then_block && !rt_.waiting_may_spin()) p.spin_ns = 0;
    return p;
  }

  // False (and the call failed) once the runtime's engine is gone.
  bool alive() {
    rt::Liveness* l = rt_.liveness();
    if (l == nullptr) return true;
    const Status s = l->check();
    if (s == Status::ok) return true;
    fail_outstanding(s);
    return false;
  }

  static void sleep_until(int64_t deadline_ns) {
    const int64_t left = deadline_ns - tandem::now_ns();
    if (left <= 0) return;
    timespec ts{static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)};
    nanosleep(&ts, nullptr);
  }

  // The engine is gone: nobody will complete our records. Their work goes back to the software side.
  void fail_outstanding(Status why) {
    failure_ = why;
    for (uint32_t j = 0; j < jobs_limit_; ++j) {
      if (!outstanding_[j]) continue;
      outstanding_[j] = false;
      (void)part_.report(j, JobEvent::failed, now(), why);
    }
    outstanding_count_ = 0;
    cancel_outstanding_ = false;
    cancel_job_ = -1;
  }

  struct Output {  // the copy method: a job's output in staging, and where it goes
    char* user = nullptr;
    char* staged = nullptr;
    uint64_t bytes = 0;
  };
  struct Outputs {
    std::array<Output, funcs::kMaxBuffers> items{};
    uint32_t count = 0;
  };
  struct Bounce {  // a device-local buffer brought to this process for software steps
    uint64_t device = 0;
    void* host = nullptr;
    uint64_t bytes = 0;
    bool write = false;
  };

  Runtime& rt_;
  const funcs::FunctionInfo& fn_;
  const funcs::Call& call_;
  Partitioner& part_;
  tandem_completion_t* records_;
  Queue& queue_;
  rt::WaitPolicy wait_;
  CallAccess access_;
  Runtime::Staging* staging_ = nullptr;  // the copy method only
  std::array<Outputs, kMaxCallJobs> outputs_{};
  funcs::Call bounced_;
  std::array<Bounce, funcs::kMaxBuffers> bounces_{};
  uint32_t bounce_count_ = 0;
  bool bounce_ready_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> bounced_writes_;  // device ranges [begin, end) software steps wrote
  int64_t origin_ = 0;
  model::LiveMetrics metrics_;
  int64_t value_ = 0;
  bool have_value_ = false;
  std::array<bool, kMaxCallJobs> outstanding_{};
  std::array<uint64_t, kMaxCallJobs> submit_order_{};  // by record: when its job was submitted
  uint64_t submitted_ = 0;
  uint32_t sleeps_ = 0;
  uint32_t outstanding_count_ = 0;
  uint32_t jobs_limit_ = kMaxCallJobs;  // job ids are below the partitioner's table size
  int cancel_job_ = -1;          // the job our last cancel packet named, until it is settled
  bool cancel_outstanding_ = false;
  bool cancel_answered_ = false;
  bool cancel_withdrawn_ = false;
  Status failure_ = Status::ok;
  Status refused_ = Status::ok;  // a job's TRANSLATION_FAULT: the call ends with it
  double hw_done_s_ = 0;  // when the last completed job was seen
  double done_s_ = 0;
  // Self-calibration and measured progress (issue 15).
  CallObservation observation_;
  double clock_min_units_ = 0;  // CPU steps above this many units read the thread's CPU clock
  std::array<uint64_t, kMaxCallJobs> records_units_{};
  bool seen_promptly_ = false;
  int64_t first_submit_ns_ = 0;
  bool woke_dispatcher_ = false;  // the dispatcher slept when the call's first job was submitted
  int64_t last_seen_ns_ = 0;
  bool last_seen_promptly_ = false;
  int64_t last_done_ns_ = 0;       // the engine's time of the last completion seen
  bool done_times_known_ = true;   // every completion seen carried a usable engine time
  uint32_t round_jobs_ = 0;
  double round_device_s_ = 0;
};

void count(Runtime& rt, const engine::PartitionerCounters& c) {
  CallStats& s = rt.stats();
  constexpr auto relaxed = std::memory_order_relaxed;
  if (c.jobs_submitted > 0) s.hw_jobs.fetch_add(c.jobs_submitted, relaxed);
  if (c.hw_units > 0) {
    s.hw_units.fetch_add(c.hw_units, relaxed);
    s.accelerated_calls.fetch_add(1, relaxed);
  }
  s.sw_units.fetch_add(c.sw_units, relaxed);
  if (c.demand_jobs > 0) s.demand_jobs.fetch_add(c.demand_jobs, relaxed);
  if (c.jobs_cancelled > 0) s.jobs_cancelled.fetch_add(c.jobs_cancelled, relaxed);
  if (c.jobs_failed > 0) s.jobs_failed.fetch_add(c.jobs_failed, relaxed);
  if (c.demand_jobs > 0 || c.jobs_failed > 0) s.fallbacks.fetch_add(1, relaxed);
  if (c.jobs_submitted == 0 && c.demand_jobs == 0) s.sw_calls.fetch_add(1, relaxed);
}

}  // namespace

bool read_live_metrics(const Runtime& runtime, uint16_t function, model::LiveMetrics& out) {
  const tandem_metrics_page_t& page = runtime.metrics_page();
  abi::FunctionMetrics fm;
  if (!abi::read_metrics(page, function, fm)) return false;
  out.n_a = fm.accelerators;
  out.d_q = std::isfinite(fm.queue_wait_s) && fm.queue_wait_s > 0 ? fm.queue_wait_s : 0;
  out.available_bw = abi::load_relaxed(page.k_available_bandwidth);
  return true;
}

model::LiveMetrics live_metrics(const Runtime& runtime, uint16_t function) {
  model::LiveMetrics m;
  if (!read_live_metrics(runtime, function, m)) m.n_a = 0;
  return m;
}

namespace {

// The software shortcuts of run_call judge the hardware by its cheapest way in: on a device measured
// with copies as well (model::DeviceCopyCosts), copying may beat working in place (a GPU across a bus),
// and the access method is chosen only after them. A copied figure counts where it is better by the
// margin the choice itself asks (plan_access), so that noise between two equal ways (PoCL) changes
// nothing.
model::CostParams cheapest_way_in(const Runtime& rt, uint16_t function, const model::CostParams& params) {
  model::CostParams shortcut = params;
  if (const DeviceSummary* host = rt.host_device(function); host != nullptr) {
    const model::DeviceCopyCosts c = model::DeviceCopyCosts::between(host->models[function], host->copy_models[function]);
    if (c.measured && (c.setup_s < 0 || c.unit_s < 0)) {
      const model::CostParams copied = model::with_access(params, TANDEM_ACCESS_COPY, 1.0, {}, {}, false, c);
      if (copied.da < (1 - model::kDeviceCopyMargin) * params.da) shortcut.da = copied.da;
      if (copied.xa * (1 - model::kDeviceCopyMargin) > params.xa) shortcut.xa = copied.xa;
    }
  }
  return shortcut;
}

// `prior`: set when `part` is the runtime's own partitioner (the calibration's or default figures it
// was made with), so automatic mode may plan with the learnt, contention-adjusted figures; a
// caller-owned partitioner (null) keeps the parameters it was given. `memo`: the thread's figures for
// the runtime's partitioner (null with a caller's).
Status run_call(Runtime& rt, const funcs::FunctionInfo& fn, const funcs::Call& call, Partitioner& part,
                int64_t& value, CallReport* report, const model::CostParams* runtime_prior, PlanMemo* memo) {
  const bool runtime_policy = runtime_prior != nullptr;
  if (report != nullptr) *report = CallReport{};  // every return path leaves a fresh report
  CallTrace trace(rt, fn.id, call.workload);  // records the call while tracing is on (client/trace.hpp)
  rt.stats().calls.fetch_add(1, std::memory_order_relaxed);
  Runtime::BusyCaller busy(rt);
  const double share = rt.cpu_share();
  const bool learning = runtime_policy && part.config().policy == PartitionPolicy::automatic && rt.adaptive();
  const engine::PartitionerConfig& config = part.config();
  const uint64_t units = call.workload;
  // Should the page be unreadable for a moment (a busy writer), the figures this thread saw last
  // stand in; before any, n_a = 0 (demand jobs and software).
  model::LiveMetrics& m = last_metrics[fn.id];
  if (!read_live_metrics(rt, fn.id, m) && last_metrics_runtime != rt.serial()) m = model::LiveMetrics{0, 0, 0};
  last_metrics_runtime = rt.serial();

  // What this call plans with. Automatic mode plans with what the runtime learnt, at the CPU
  // throughput this thread gets now; the thread's partitioner takes them only for a call it plans
  // (its derived limits cost a small software call as much again as the model's arithmetic).
  // The break-even works derived from them are kept while nothing they rest on moves (the memo).
  PlanMemo unkept;
  if (memo == nullptr) memo = &unkept;
  const uint64_t learned_version = learning ? rt.learned().version(fn.id) : 0;
  if (!memo->holds(learning, learned_version, share, m)) {
    memo->planned = part.base_params();
    if (learning) {
      memo->planned = rt.learned().params(fn.id);
      memo->planned.xc *= share;
    }
    const model::CostParams shortcut = cheapest_way_in(rt, fn.id, memo->planned);
    memo->nl = model::break_even_work(shortcut, model::effective_accel_throughput(shortcut, m));
    memo->prior_nl = 0;
    if (learning && m.n_a > 0) {
      model::CostParams prior = *runtime_prior;
      prior.xc *= share;
      memo->prior_nl = model::break_even_work(prior, model::effective_accel_throughput(prior, m));
    }
    memo->keep(learning, learned_version, share, m);
  }
  model::CostParams planned = memo->planned;
  uint64_t nl = memo->nl;

  // The software decision of Partitioner::start (Algorithm 2 lines 1-4), taken here without the
  // partitioner's bookkeeping or a clock reading: small calls pay only the model's arithmetic.
  // Exploration: learnt figures that keep every call in software are never tested again, so a few slow
  // first rounds (a cold dispatcher, a burst of load) would keep the hardware unused for good. Calls the
  // prior figures would accelerate but the learnt ones keep in software are counted; every
  // interval-th one is planned with the prior figures instead, the interval doubling while the
  // answer stays "software" (at most 1 call in 64), back to 1 once a call used the hardware.
  bool prior_accelerates = false;
  bool exploring = false;
  if (learning && units > 0 && m.n_a > 0) {
    prior_accelerates = units > memo->prior_nl;
    if (prior_accelerates && rt.explore_due(fn.id)) {
      planned = *runtime_prior;
      planned.xc *= share;
      const model::CostParams shortcut = cheapest_way_in(rt, fn.id, planned);
      nl = model::break_even_work(shortcut, model::effective_accel_throughput(shortcut, m));
      exploring = true;
    }
  }
  const model::CostParams& params = planned;
  const double core_xc = learning ? params.xc / share : params.xc;  // automatic mode scaled it by the share
  // The figures N_L came from (cheapest_way_in), made again only where a call gets past N_L.
  const auto shortcut_figures = [&] { return cheapest_way_in(rt, fn.id, params); };
  // Device-local buffers are not this process's memory: such a call never takes the plain software path.
  bool device_buffers = false;
  for (void* b : call.buffers) device_buffers = device_buffers || (reinterpret_cast<uintptr_t>(b) & TANDEM_DEVICE_ADDRESS_BIT) != 0;
  bool software = !device_buffers &&
                  (units == 0 || config.policy == PartitionPolicy::sw_only ||
                   (config.policy == PartitionPolicy::fixed_alpha && !(config.fixed_alpha > 0)) ||
                   (config.policy == PartitionPolicy::automatic && units <= nl));
  // A call in automatic mode whose thread has no core to itself (cpu_share < 1) is not split (below):
  // all of it goes to the hardware only where that is predicted faster than software, which takes a
  // larger call than N_L (where a split starts to pay).
  const bool no_free_core = learning && share < 1.0;
  const uint32_t round_jobs = config.jobs_per_round == 0 ? std::max<uint32_t>(m.n_a, 1) : config.jobs_per_round;
  // N_L counts one job's latency and no queue, where the first round plans n_j jobs behind D_q (Eq 5.6):
  // just above N_L, Eq 5.6 gives the hardware no share at all, and the partitioner keeps the whole call
  // on the CPU. Where it gives none with the live figures and no later round can come (one CPU chunk
  // covers the call, or no rebalancing), the call is a software call: the partitioned path gives the
  // same result at about 1 us more, in bookkeeping and clock readings (a quarter of a 16 KiB accumulate
  // call on this project's machines). The access method only raises D_a and lowers X_a from `shortcut_figures`',
  // which keeps the share at none. (A small positive share is left to the partitioner: it may plan fewer jobs for it,
  // whose lower latency may pay.)
  if (!software && !device_buffers && !no_free_core && config.policy == PartitionPolicy::automatic && m.n_a > 0 &&
      (!config.rebalance || units <= engine::cpu_chunk_units(config, params))) {
    software = model::plan_call(shortcut_figures(), m, round_jobs, static_cast<double>(units)).alpha_model == 0;
  }
  if (!software && no_free_core && !device_buffers && config.policy == PartitionPolicy::automatic) {
    // No replica yet, but a device can load one: judged as if one were loaded after the function's
    // reconfiguration delay. The hardware-only partitioner then asks for one and runs the call on the
    // CPU in chunks until it comes, and the rest on it (Algorithm 2 lines 7-12). Deciding "software"
    // for the whole call instead kept 2 of 3 calls of the multitasking workload on the CPU for good
    // (calls of 1-10 ms, functions loaded on demand within 1 ms).
    const DeviceSummary* host = rt.host_device(fn.id);
    software = !model::whole_call_to_accelerators(shortcut_figures(), m, config.jobs_per_round, host != nullptr,
                                                  host != nullptr ? host->models[fn.id].reconfig_s : 0.0,
                                                  static_cast<double>(units));
  }
  if (software) {
    trace.split(TANDEM_ACCESS_ZERO_COPY, false);
    // Calls long enough to measure teach X_c (two clock readings; tiny calls skip them). Longer ones
    // (kCpuClockMinS on a whole core) read the thread's CPU clock as well; shorter ones count their
    // wall time as CPU time (above). Wall time / share taught the demo's 4 threads on 2
    // cores an X_c 2.5x too high: the share counted the threads blocked on their jobs as competing, a
    // call that in fact had a core to itself looked 2.5x faster than a core, and from then on every
    // accumulate call went to software (15-26 ms against hw's 10-13).
    const bool measure = static_cast<double>(units) > 2e-6 * params.xc;
    const bool measure_cpu = static_cast<double>(units) > kCpuClockMinS * core_xc;
    const int64_t t0 = measure ? tandem::now_ns() : 0;
    const int64_t c0 = measure_cpu ? tandem::thread_cpu_ns() : 0;
    value = fn.run_sw(call, 0, units);
    if (prior_accelerates && !exploring) rt.note_software_choice(fn.id);
    if (measure) {
      CallObservation o;
      o.sw_units = static_cast<double>(units);
      const int64_t wall_ns = tandem::now_ns() - t0;
      o.sw_wall_s = static_cast<double>(wall_ns) * 1e-9;
      o.sw_cpu_s = measure_cpu ? static_cast<double>(tandem::thread_cpu_ns() - c0) * 1e-9 : o.sw_wall_s;
      o.share = share;
      rt.learned().observe(fn.id, o);
    }
    CallStats& s = rt.stats();
    s.sw_calls.fetch_add(1, std::memory_order_relaxed);
    s.sw_units.fetch_add(units, std::memory_order_relaxed);
    if (report != nullptr) {
      report->predicted_s = model::sw_only_time(params, static_cast<double>(units));
      report->break_even_units = nl;
      report->counters.sw_steps = 1;
      report->counters.sw_units = units;
    }
    return Status::ok;
  }

  // How the call's data reaches the device, chosen with the split (access.hpp): the method's costs
  // become this call's X_a and D_a, so the partitioner plans with them.
  CallAccess access;
  if (Status s = plan_access(rt, fn, call, params, m, round_jobs, access); s != Status::ok) return s;
  trace.split(access.method, true);
  // Device-local data has no CPU share: everything to the accelerators (software only by bouncing it).
  // Nor does a call in automatic mode whose thread has no core to itself (cpu_share < 1): its CPU share
  // would compete for the cores with the dispatcher that completes its jobs, every round would wait
  // for a descheduled dispatcher, the learnt D_a would grow, and the calls drift into software for
  // good (the demo's 4 threads on 2 cores: 600-780 of 800 calls in software, 2x hw's makespan). A
  // split needs a free core, as the model assumes; without one the call is all hardware or all software.
  std::optional<Partitioner> local_partitioner;
  Partitioner* used = &part;
  if ((access.device_buffers || no_free_core) && config.policy != PartitionPolicy::hw_only &&
      config.policy != PartitionPolicy::sw_only) {
    engine::PartitionerConfig hw = config;
    hw.policy = PartitionPolicy::hw_only;
    // While it waits for a replica the call runs CPU chunks of C_COWORK_MAX on a whole core (not of
    // the share's slower rate), each after a demand packet: a policy counts a packet as that much work.
    if (share > 0 && share < 1) hw.cowork_max_seconds = config.cowork_max_seconds / share;
    local_partitioner.emplace(params, hw);
    used = &*local_partitioner;
  }
  if (learning && used == &part) part.set_base_params(planned);
  used->set_access_costs(access.params.xa, access.params.da);
  used->set_max_job_units(max_job_units(rt, fn, call));  // a larger job would fail (JOB_TOO_LARGE)

  if (config.max_outstanding_jobs > kMaxCallJobs) return Status::invalid_argument;  // more jobs than records
  tandem_completion_t* records = rt.thread_records();
  if (records == nullptr) {
    if (access.device_buffers) return Status::no_memory;  // software could not read device addresses
    value = fn.run_sw(call, 0, units);  // no records for the jobs: the call still completes, in software
    rt.stats().fallbacks.fetch_add(1, std::memory_order_relaxed);
    if (report != nullptr) {
      report->counters.sw_steps = 1;
      report->counters.sw_units = units;
    }
    return Status::ok;
  }
  Driver driver(rt, fn, call, *used, records, access, core_xc);
  const Status s = driver.run(m, value);
  driver.finish_observation(m.n_a);
  if (learning && (used == &part || no_free_core) && !exploring) {  // a probe's own jobs say nothing of the learnt figures
    if (used->counters().jobs_submitted > 0) {
      rt.note_hardware_used(fn.id);
    } else if (prior_accelerates) {
      rt.note_software_choice(fn.id);
    }
  }
  driver.observation().share = share;
  rt.learned().observe(fn.id, driver.observation());
  count(rt, used->counters());
  trace.result(used->counters().jobs_submitted, used->counters().hw_units > 0);
  if (report != nullptr) {
    report->partitioned = used->initial_alpha() > 0;
    report->through_partitioner = true;
    report->predicted_s = used->predicted_duration();
    report->alpha = used->initial_alpha();
    report->break_even_units = used->break_even_units();
    report->counters = used->counters();
    report->access_method = access.method;
    report->hw_done_s = driver.hw_done_s();
    report->driver_s = driver.done_s();
    report->sleeps = driver.sleeps();
  }
  return s;
}

}  // namespace

uint64_t units_per_row(const funcs::FunctionInfo& fn, const funcs::Call& call) {
  const uint64_t g = std::max<uint64_t>(fn.granularity, 1);
  if (fn.slice == nullptr || call.workload == 0) return g;
  funcs::Call part;
  fn.slice(call, 0, std::min(g, call.workload), part);
  return std::max(g, part.workload);
}

uint64_t units_within_buffer_bound(const funcs::FunctionInfo& fn, const funcs::Call& call, uint64_t max_buffer_bytes) {
  const uint64_t n = call.workload;
  if (max_buffer_bytes == 0 || n == 0 || fn.slice == nullptr) return UINT64_MAX;
  const uint64_t g = std::max<uint64_t>(fn.granularity, 1);
  // The host buffers of the part [begin, end), in the whole call's buffer order (0: a device address),
  // and the units the part really covers (a function that rounds jobs out to rows covers whole rows).
  const auto host_bytes = [&](uint64_t begin, uint64_t end, std::array<uint64_t, funcs::kMaxBuffers>& out,
                              uint64_t& covered) {
    out.fill(0);
    funcs::Call part;
    fn.slice(call, begin, end, part);
    covered = part.workload;
    uint64_t workload = 0;
    funcs::BufferList buffers;
    if (fn.describe({part.args.data(), part.arg_count}, workload, buffers) != Status::ok) return false;
    for (uint32_t i = 0; i < buffers.count; ++i) {
      if (!is_device_address(part.args[buffers.items[i].arg])) out[i] = buffers.items[i].bytes;
    }
    return true;
  };
  std::array<uint64_t, funcs::kMaxBuffers> whole{}, first{}, inner{};
  uint64_t covered = 0;
  if (!host_bytes(0, n, whole, covered)) return UINT64_MAX;  // the engine refuses the call itself, bound or not
  if (std::all_of(whole.begin(), whole.end(), [&](uint64_t b) { return b <= max_buffer_bytes; })) return UINT64_MAX;
  // A job's buffer is at most its share of the whole call's plus what the smallest job needs, at the
  // call's start and inside it (one row with both halos, for sobel): that covers a job's rounding out
  // to whole rows and its halos. Conservative by about one granule or row.
  if (g >= n || !host_bytes(0, g, first, covered)) return 0;
  const uint64_t row = units_per_row(fn, call);  // where the second row (or granule) begins
  if (row + g <= n && !host_bytes(row, row + g, inner, covered)) return 0;
  uint64_t bound = UINT64_MAX;
  for (size_t i = 0; i < whole.size(); ++i) {
    const uint64_t fixed = std::max(first[i], inner[i]);
    if (fixed > max_buffer_bytes) return 0;
    // A buffer every job names whole (matmul's B) does not grow with the job.
    const double per_unit = whole[i] > first[i] ? static_cast<double>(whole[i]) / static_cast<double>(n) : 0.0;
    if (per_unit > 0) {
      const double units = static_cast<double>(max_buffer_bytes - fixed) / per_unit;
      bound = std::min(bound, units < static_cast<double>(n) ? static_cast<uint64_t>(units) : n);
    }
  }
  // Whole rows (a job of k rows' units covers exactly k rows wherever it starts), and at least the
  // smallest job, which fits (checked above) whatever the estimate says for larger ones.
  return bound == UINT64_MAX ? UINT64_MAX : std::max(bound / row * row, row);
}

uint64_t max_job_units(const Runtime& rt, const funcs::FunctionInfo& fn, const funcs::Call& call) {
  uint64_t bound = rt.max_job_units_by_time(fn.id);
  if (const uint64_t bytes = rt.max_job_buffer_bytes(fn.id); bytes > 0) {
    bound = std::min(bound, units_within_buffer_bound(fn, call, bytes));
  }
  if (bound == UINT64_MAX) return 0;
  // The engine times a job by the units it covers, whole rows for sobel and matmul: whole rows then.
  const uint64_t row = units_per_row(fn, call);
  bound = bound / row * row;
  // No job of this call fits (not even one row or granule): no bound either. The first round's jobs
  // then fail as too large and the rest runs in software (an incurable failure); a bound would only
  // make that round's jobs tiny.
  return bound;
}

Status run_partitioned(Runtime& rt, const funcs::FunctionInfo& fn, const funcs::Call& call, int64_t& value,
                       CallReport* report) {
  CachedPartitioner& cached_part = partitioner_for(rt, fn.id);
  return run_call(rt, fn, call, *cached_part.partitioner, value, report, &cached_part.policy.params, &cached_part.memo);
}

Status run_partitioned(Runtime& rt, const funcs::FunctionInfo& fn, const funcs::Call& call, Partitioner& part,
                       int64_t& value, CallReport* report) {
  return run_call(rt, fn, call, part, value, report, nullptr, nullptr);
}

}  // namespace tandem::client
