#include "client/partitioned_call.hpp"

#include <time.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <limits>
#include <optional>

#include "abi/atomics.hpp"
#include "abi/futex.hpp"
#include "abi/metrics.hpp"
#include "base/clock.hpp"

namespace tandem::client {

namespace {

using engine::JobEvent;
using engine::Partitioner;
using engine::PartitionPolicy;
using engine::Step;
using engine::StepKind;

// A partitioner per (runtime, function) and thread, rebuilt when the runtime's policy changes: it
// allocates only when built, so the steady call path allocates nothing.
struct CachedPartitioner {
  uint64_t serial = 0;
  uint16_t function = 0;
  uint64_t version = 0;
  Runtime::CallPolicy policy;
  std::optional<Partitioner> partitioner;
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
  return *entry;
}

uint32_t status_acquire(const tandem_completion_t& rec) {
  return rt::record_status(&rec);  // acquire: pairs with complete_record's release
}

// Performs one call's steps. Times given to the partitioner are seconds since the call began.
class Driver {
 public:
  Driver(Runtime& rt, const funcs::FunctionInfo& fn, const funcs::Call& call, Partitioner& part,
         tandem_completion_t* records)
      : rt_(rt), fn_(fn), call_(call), part_(part), records_(records), queue_(rt.default_queue()),
        wait_(rt.options().wait),
        jobs_limit_(std::min(part.config().max_outstanding_jobs, kMaxCallJobs)) {}

  double hw_done_s() const { return hw_done_s_; }
  double done_s() const { return done_s_; }

  Status run(const model::LiveMetrics& first, int64_t& value) {
    metrics_ = first;
    origin_ = tandem::now_ns();
    part_.start(call_.workload, 0.0, first);
    for (;;) {
      const double t = now();  // one clock reading per step: events are reported at the time they were seen
      collect(t);
      (void)read_live_metrics(rt_, fn_.id, metrics_);  // unreadable for a moment: the last figures stand
      const Step step = part_.next(t, metrics_);
      switch (step.kind) {
        case StepKind::run_sw: combine(fn_.run_sw(call_, step.range.begin, step.range.end)); break;
        case StepKind::submit_job: submit(step, t); break;
        case StepKind::submit_demand:
          // No record: the engine answers NOT_ACCELERATED or nothing, and the partitioner wants no report.
          (void)queue_.dispatch(fn_.id, nullptr, 0, 0, nullptr, false, TANDEM_FLAG_DEMAND_ONLY);
          break;
        case StepKind::cancel_job: cancel(step, t); break;
        case StepKind::wait: wait_for_event(step.wake_at); break;
        case StepKind::done:
          if (cancel_outstanding_) drain_cancel();
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

  void submit(const Step& step, double t) {
    funcs::Call part;
    fn_.slice(call_, step.range.begin, step.range.end, part);
    tandem_completion_t* rec = &records_[step.job];
    rt::reset_record(rec);
    // Jobs carry their arguments inline; a function with more words would need an argument block.
    Status s = part.arg_count <= TANDEM_INLINE_ARGS
                   ? queue_.dispatch(fn_.id, part.args.data(), part.arg_count, part.workload, rec)
                   : Status::invalid_argument;
    if (s == Status::ok) {
      outstanding_[step.job] = true;
      ++outstanding_count_;
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
    rt::WaitPolicy p = wait_;
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
      if (s == Status::ok) {
        combine(abi::load_relaxed(rec.value));
        (void)part_.report(j, JobEvent::completed, t);
        hw_done_s_ = t;
      } else if (s == Status::cancelled && is_cancel_target) {
        (void)part_.report(j, JobEvent::cancelled, t);
      } else {
        (void)part_.report(j, JobEvent::failed, t, s);  // the partitioner decides: retry, or software
      }
      if (is_cancel_target) cancel_job_ = -1;
    }
  }

  bool any_event() const {
    if (cancel_outstanding_ && status_acquire(records_[kCancelRecord]) != TANDEM_PENDING) return true;
    for (uint32_t j = 0; j < jobs_limit_; ++j) {
      if (outstanding_[j] && status_acquire(records_[j]) != TANDEM_PENDING) return true;
    }
    return false;
  }

  // Until a record changes or `wake_at` (s since the call began; +inf: events only) passes: spin for
  // the wait policy's budget, then sleep on every outstanding record at once.
  void wait_for_event(double wake_at) {
    const int64_t wake_ns = std::isfinite(wake_at) ? origin_ + static_cast<int64_t>(std::ceil(wake_at * 1e9))
                                                   : std::numeric_limits<int64_t>::max();
    if (!cancel_outstanding_ && outstanding_count_ == 0) {
      // Nothing can arrive: a back-off (sleep it out) or a decision to take again at once.
      if (wake_ns != std::numeric_limits<int64_t>::max()) sleep_until(wake_ns);
      return;
    }
    const int64_t start = tandem::now_ns();
    const int64_t spin_until = wait_.mode == rt::WaitMode::block  ? start
                               : wait_.mode == rt::WaitMode::spin ? std::numeric_limits<int64_t>::max()
                                                                  : start + wait_.spin_ns;
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
      // Announce a sleeper on every outstanding record; one that is already final is the event.
      size_t n = 0;
      bool event = false;
      const auto add = [&](tandem_completion_t& rec) {
        if (rt::announce_sleeper(&rec) != TANDEM_PENDING) event = true;
        targets[n++] = {&rec.status, static_cast<uint32_t>(TANDEM_PENDING)};
      };
      if (cancel_outstanding_) add(records_[kCancelRecord]);
      for (uint32_t j = 0; j < jobs_limit_; ++j) {
        if (outstanding_[j]) add(records_[j]);
      }
      if (n == 0 || event) return;
      // Bounded slices so that a dead daemon is noticed (rt::Liveness).
      const int64_t slice_end = std::min(wake_ns, tandem::now_ns() + rt::kLivenessPeriodNs);
      const int rc = abi::futex_waitv({targets.data(), n}, slice_end);
      if (rc == ENOSYS) abi::futex_wait(targets[0].word, TANDEM_PENDING, 50'000);
      if (any_event() || tandem::now_ns() >= wake_ns) return;
      if (!alive()) return;
    }
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

  Runtime& rt_;
  const funcs::FunctionInfo& fn_;
  const funcs::Call& call_;
  Partitioner& part_;
  tandem_completion_t* records_;
  Queue& queue_;
  rt::WaitPolicy wait_;
  int64_t origin_ = 0;
  model::LiveMetrics metrics_;
  int64_t value_ = 0;
  bool have_value_ = false;
  std::array<bool, kMaxCallJobs> outstanding_{};
  uint32_t outstanding_count_ = 0;
  uint32_t jobs_limit_ = kMaxCallJobs;  // job ids are below the partitioner's table size
  int cancel_job_ = -1;          // the job our last cancel packet named, until it is settled
  bool cancel_outstanding_ = false;
  bool cancel_answered_ = false;
  bool cancel_withdrawn_ = false;
  Status failure_ = Status::ok;
  double hw_done_s_ = 0;  // when the last completed job was seen
  double done_s_ = 0;
};

// Whether the engine can reach every buffer of the call in place (the call's own addresses).
bool buffers_reachable(const Runtime& rt, const funcs::FunctionInfo& fn, const funcs::Call& call) {
  if (fn.describe == nullptr) return true;
  funcs::BufferList buffers;
  uint64_t workload = 0;
  const std::span<const uint64_t> args(call.args.data(), std::min<size_t>(call.arg_count, call.args.size()));
  if (fn.describe(args, workload, buffers) != Status::ok) return false;  // the engine would refuse it too
  for (uint32_t b = 0; b < buffers.count; ++b) {
    const funcs::BufferUse& use = buffers.items[b];
    if (!rt.reachable(reinterpret_cast<const void*>(args[use.arg]), use.bytes)) return false;
  }
  return true;
}

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

Status run_partitioned(Runtime& rt, const funcs::FunctionInfo& fn, const funcs::Call& call, int64_t& value,
                       CallReport* report) {
  return run_partitioned(rt, fn, call, *partitioner_for(rt, fn.id).partitioner, value, report);
}

Status run_partitioned(Runtime& rt, const funcs::FunctionInfo& fn, const funcs::Call& call, Partitioner& part,
                       int64_t& value, CallReport* report) {
  rt.stats().calls.fetch_add(1, std::memory_order_relaxed);
  const model::CostParams& params = part.params();
  const engine::PartitionerConfig& config = part.config();
  const uint64_t units = call.workload;
  // Should the page be unreadable for a moment (a busy writer), the figures this thread saw last
  // stand in; before any, n_a = 0 (demand jobs and software).
  model::LiveMetrics& m = last_metrics[fn.id];
  if (!read_live_metrics(rt, fn.id, m) && last_metrics_runtime != rt.serial()) m = model::LiveMetrics{0, 0, 0};
  last_metrics_runtime = rt.serial();

  // The software decision of Partitioner::start (Algorithm 2 lines 1-4), taken here without the
  // partitioner's bookkeeping or a clock reading: small calls pay only the model's arithmetic.
  const uint64_t nl = model::break_even_work(params, model::effective_accel_throughput(params, m));
  const bool software = units == 0 || config.policy == PartitionPolicy::sw_only ||
                        (config.policy == PartitionPolicy::fixed_alpha && !(config.fixed_alpha > 0)) ||
                        (config.policy == PartitionPolicy::automatic && units <= nl);
  // How the accelerators get at the call's buffers is decided here, once per call. Today the only
  // access method is zero copy, so a buffer outside what the engine can reach (under tandemd: the
  // session's memory) runs in software rather than sending jobs that must fail with
  // TRANSLATION_FAULT. Copy and scatter-gather methods will make such buffers reachable here.
  const bool unreachable = !software && !buffers_reachable(rt, fn, call);
  if (software || unreachable) {
    value = fn.run_sw(call, 0, units);
    CallStats& s = rt.stats();
    if (unreachable) {
      s.unreachable_calls.fetch_add(1, std::memory_order_relaxed);
      s.fallbacks.fetch_add(1, std::memory_order_relaxed);
    } else {
      s.sw_calls.fetch_add(1, std::memory_order_relaxed);
    }
    s.sw_units.fetch_add(units, std::memory_order_relaxed);
    if (report != nullptr) {
      *report = CallReport{};
      report->predicted_s = model::sw_only_time(params, static_cast<double>(units));
      report->break_even_units = nl;
      report->counters.sw_steps = 1;
      report->counters.sw_units = units;
    }
    return Status::ok;
  }

  if (config.max_outstanding_jobs > kMaxCallJobs) return Status::invalid_argument;  // more jobs than records
  tandem_completion_t* records = rt.thread_records();
  if (records == nullptr) {
    value = fn.run_sw(call, 0, units);  // no records for the jobs: the call still completes, in software
    rt.stats().fallbacks.fetch_add(1, std::memory_order_relaxed);
    return Status::ok;
  }
  Driver driver(rt, fn, call, part, records);
  const Status s = driver.run(m, value);
  count(rt, part.counters());
  if (report != nullptr) {
    report->partitioned = part.initial_alpha() > 0;
    report->predicted_s = part.predicted_duration();
    report->alpha = part.initial_alpha();
    report->break_even_units = part.break_even_units();
    report->counters = part.counters();
    report->hw_done_s = driver.hw_done_s();
    report->driver_s = driver.done_s();
  }
  return s;
}

}  // namespace tandem::client
