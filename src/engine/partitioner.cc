#include "engine/partitioner.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace tandem::engine {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr uint64_t kAll = std::numeric_limits<uint64_t>::max();
// A new round must beat the current prediction by more than rounding noise, or rounds would churn.
constexpr double kMinGain = 1e-9;

double clamp01(double a) {
  if (!(a > 0)) return 0;
  return a < 1 ? a : 1;
}
}  // namespace

const char* to_string(StepKind k) {
  switch (k) {
    case StepKind::run_sw: return "run_sw";
    case StepKind::submit_job: return "submit_job";
    case StepKind::submit_demand: return "submit_demand";
    case StepKind::cancel_job: return "cancel_job";
    case StepKind::wait: return "wait";
    case StepKind::done: return "done";
  }
  return "?";
}

const char* to_string(JobEvent e) {
  switch (e) {
    case JobEvent::started: return "started";
    case JobEvent::completed: return "completed";
    case JobEvent::failed: return "failed";
    case JobEvent::cancelled: return "cancelled";
    case JobEvent::cancel_refused: return "cancel_refused";
  }
  return "?";
}

bool retry_may_succeed(Status status) {
  switch (status) {
    case Status::queue_full:       // the queue or the engine's job table was full for a moment
    case Status::limit_exceeded:   // our session had too many jobs in flight
    case Status::not_accelerated:  // the replica went away; another may come (or n_a = 0 takes over)
    case Status::device_memory_full:  // device-local memory is freed as other jobs finish
      return true;
    default:
      return false;  // the same job fails the same way: an unreachable buffer, a device error, ...
  }
}

Partitioner::Partitioner(const model::CostParams& params, const PartitionerConfig& config)
    : params_(params), config_(config) {
  derive_limits();
  const uint32_t slots = std::max<uint32_t>(config_.max_outstanding_jobs, 1);
  config_.max_outstanding_jobs = slots;
  jobs_.resize(slots);
  free_ids_.reserve(slots);
  // Returned jobs can split the pool; 2 ranges per job slot covers every realistic history.
  pool_.reserve(2 * static_cast<size_t>(slots) + 8);
}

uint64_t cpu_chunk_units(const PartitionerConfig& config, const model::CostParams& params) {
  const uint64_t g = std::max<uint64_t>(params.granularity, 1);
  uint64_t chunk = config.cowork_max_units;
  if (chunk == 0) {
    const double units = config.cowork_max_seconds * params.xc;
    chunk = units > 0 && units < 1e18 ? static_cast<uint64_t>(std::ceil(units)) : 4096;
  }
  return std::max(model::round_up(chunk, g), g);
}

void Partitioner::derive_limits() {
  if (params_.granularity == 0) params_.granularity = 1;
  base_ = params_;
  const uint64_t g = params_.granularity;
  chunk_units_ = cpu_chunk_units(config_, params_);
  min_job_units_ = std::max(model::round_up(config_.min_job_units, g), g);
  // Predictions ignore that a round's jobs are submitted one after another, each costing the CPU part
  // of O_c; lateness below one job latency plus those submissions is noise, not slow hardware.
  late_margin_ = params_.da + static_cast<double>(std::max<uint32_t>(config_.jobs_per_round, 1)) * params_.oc;
}

void Partitioner::set_base_params(const model::CostParams& params) {
  params_ = params;
  derive_limits();
}

void Partitioner::set_max_job_units(uint64_t units) {
  // Job boundaries stay on the granularity, so the bound rounds down to it (never below one granule:
  // a device that cannot take that much work cannot take any job of this call).
  max_job_units_ = units == 0 ? 0 : std::max(align_down(units), params_.granularity);
}

void Partitioner::observe_cpu_rate(double units_per_s) {
  if (std::isfinite(units_per_s) && units_per_s > 0) params_.xc = units_per_s;
}

void Partitioner::set_access_costs(double xa, double da) {
  params_.xa = xa;
  params_.da = da;
  late_margin_ = params_.da + static_cast<double>(std::max<uint32_t>(config_.jobs_per_round, 1)) * params_.oc;
}

uint64_t Partitioner::align_down(uint64_t v) const { return v - v % params_.granularity; }

uint32_t Partitioner::jobs_for(const model::LiveMetrics& m) const {
  const uint32_t n = config_.jobs_per_round == 0 ? m.n_a : config_.jobs_per_round;
  return std::max<uint32_t>(n, 1);
}

bool Partitioner::needs_hardware() const {
  switch (config_.policy) {
    case PartitionPolicy::sw_only: return false;
    case PartitionPolicy::fixed_alpha: return clamp01(config_.fixed_alpha) > 0;
    case PartitionPolicy::hw_only:
    case PartitionPolicy::automatic: return true;
  }
  return false;
}

bool Partitioner::chunked() const {
  return config_.policy == PartitionPolicy::automatic && config_.rebalance;
}

void Partitioner::start(uint64_t units, double now, const model::LiveMetrics& m) {
  active_ = true;
  params_.xc = base_.xc;  // a rate measured during the previous call is not this one's
  sw_only_rest_ = false;
  first_round_done_ = false;
  demand_sent_ = false;
  total_ = units;
  now_ = now;
  next_seq_ = 0;
  slowdown_ = 1;
  attempts_failed_ = 0;
  retry_after_ = 0;
  outstanding_ = 0;
  planned_ = 0;
  counters_ = {};
  // A driver that abandoned a call may leave jobs behind; their ids are reused from here on.
  free_ids_.clear();
  for (uint32_t i = static_cast<uint32_t>(jobs_.size()); i-- > 0;) {
    jobs_[i] = Job{};
    free_ids_.push_back(i);
  }
  pool_.clear();
  pool_units_ = 0;
  if (units > 0) give_back(WorkRange{0, units});

  const double xa_eff = model::effective_accel_throughput(params_, m);
  nl_ = model::break_even_work(params_, xa_eff);
  predicted_ = model::sw_only_time(params_, static_cast<double>(units));
  initial_alpha_ = 0;

  const bool sw_only_call = !needs_hardware() ||
                            (config_.policy == PartitionPolicy::automatic && units <= nl_);
  if (sw_only_call) {  // Algorithm 2, lines 2-4: the whole call on the CPU, no demand either
    sw_only_rest_ = true;
    first_round_done_ = true;
    return;
  }
  if (m.n_a == 0) return;  // lines 7-12: demand jobs and SW chunks until a replica appears

  RoundPlan plan;
  if (decide_round(now, m, plan)) {
    predicted_ = plan.predicted;
    initial_alpha_ = plan.alpha;
    apply_round(now, plan);
  } else {
    end_first_round_without_hardware();
  }
}

void Partitioner::end_first_round_without_hardware() {
  first_round_done_ = true;
  // Without rebalancing nothing will be decided again: the rest is one SW step (Algorithm 2 line 28).
  if (!chunked()) sw_only_rest_ = true;
}

double Partitioner::earliest_prediction() const {
  double t = kInf;
  for (const Job& j : jobs_) {
    if (j.state == JobState::queued || j.state == JobState::running || j.state == JobState::planned) {
      t = std::min(t, j.predicted_finish);
    }
  }
  return t;
}

double Partitioner::latest_prediction() const {
  double t = 0;
  for (const Job& j : jobs_) {
    if (j.state == JobState::queued || j.state == JobState::running) t = std::max(t, j.predicted_finish);
  }
  return t;
}

bool Partitioner::hardware_late(double now) const {
  return outstanding_ + planned_ > 0 && now >= earliest_prediction() + late_margin_;
}

double Partitioner::backlog(double now, const model::LiveMetrics& m, double xa_eff) const {
  if (outstanding_ + planned_ == 0) return 0;
  // Two estimates of when our own outstanding jobs will be done, from now:
  // E, Eq 5.2 over our jobs with the live replica count (reacts to replicas appearing), assuming
  //    queued jobs made no progress;
  // P, the predictions made when the jobs were planned (reacts to time having passed, e.g. while this
  //    thread was descheduled and the hardware kept working).
  // Each is pessimistic in one respect, so the smaller is the better estimate. Only used while the
  // hardware is on schedule (see try_round), so P never hides lateness.
  double queued = 0;
  double work = 0;
  double last = 0;
  for (const Job& j : jobs_) {
    if (j.state == JobState::free) continue;
    const double u = static_cast<double>(j.range.size());
    last = std::max(last, j.predicted_finish);
    if (j.state == JobState::running && xa_eff > 0) {
      const double duration = params_.da + u / xa_eff;
      const double done = duration > 0 ? (now - j.started_at) / duration : 1;
      work += u * std::max(0.0, 1.0 - done);
    } else {
      queued += 1;
      work += u;
    }
  }
  const double e = (m.n_a == 0 || !(xa_eff > 0))
                       ? kInf
                       : params_.da * queued + work / (static_cast<double>(m.n_a) * xa_eff);
  const double p = std::max(0.0, last - now);
  return std::min(e, p);
}

uint64_t Partitioner::hw_units_for(double alpha, uint64_t r) const {
  if (alpha >= 1) return r;
  const double g = static_cast<double>(params_.granularity);
  const double v = std::round(alpha * static_cast<double>(r) / g) * g;
  return std::min<uint64_t>(static_cast<uint64_t>(v), r);
}

bool Partitioner::decide_round(double now, const model::LiveMetrics& m, RoundPlan& out) const {
  const uint64_t r = pool_units_;
  if (r == 0 || m.n_a == 0 || free_ids_.empty()) return false;
  const PartitionPolicy policy = config_.policy;
  const bool automatic = policy == PartitionPolicy::automatic;
  if (policy == PartitionPolicy::sw_only) return false;
  if (policy == PartitionPolicy::fixed_alpha && first_round_done_) return false;
  if (automatic && first_round_done_ && !config_.rebalance) return false;
  // Do not hand more work to hardware that is behind its own schedule (the opposite move, taking
  // queued jobs back, is find_cancel_candidate's).
  if (automatic && hardware_late(now)) return false;
  if (backing_off(now)) return false;  // a transient failure: give the congestion time to pass

  // X'_a (Eq 5.1), lowered by the slowdown this call has observed (1 unless hardware ran late).
  const double xa_eff = model::effective_accel_throughput(params_, m) / slowdown_;
  const double rd = static_cast<double>(r);
  if (automatic && !first_round_done_ && r <= model::break_even_work(params_, xa_eff)) return false;
  const double own = backlog(now, m, xa_eff);
  const double d_q = std::max(m.d_q, own);  // new jobs queue behind ours even if the monitor is stale

  const uint32_t n_j = jobs_for(m);
  double alpha = 1;
  if (policy == PartitionPolicy::fixed_alpha) alpha = clamp01(config_.fixed_alpha);
  if (automatic) alpha = clamp01(model::alpha_multi(params_, xa_eff, m.n_a, n_j, d_q, rd));
  uint64_t hw = hw_units_for(alpha, r);
  if (hw == 0) return false;
  // Jobs for `units`: n_j, fewer where they would be under min_job_units, more where they would be
  // over the largest job the device takes (as many as the job table has free).
  const auto fit_jobs = [&](uint64_t units) {
    const uint64_t by_size = std::max<uint64_t>(units / min_job_units_, 1);
    uint64_t n = std::min<uint64_t>(n_j, by_size);
    if (max_job_units_ > 0) n = std::max(n, units / max_job_units_ + (units % max_job_units_ != 0 ? 1 : 0));
    return static_cast<uint32_t>(std::min<uint64_t>(n, free_ids_.size()));
  };
  // What n jobs can hold (saturating: a bound near 2^64 from a daemon's huge max_job_ns must not wrap to
  // a tiny round): the rest stays in the pool for a later round (or software).
  const auto fit_units = [&](uint64_t units, uint32_t n) {
    if (max_job_units_ == 0 || n == 0 || units == 0 || max_job_units_ > (units - 1) / n) return units;  // n x max >= units
    return static_cast<uint64_t>(n) * max_job_units_;  // < units: no overflow
  };
  uint32_t n = fit_jobs(hw);
  hw = fit_units(hw, n);
  if (automatic) {
    if (n != n_j) {  // fewer jobs cost less latency, more cost more: redo Eq 5.6 with the count that fits
      alpha = clamp01(model::alpha_multi(params_, xa_eff, m.n_a, n, d_q, rd));
      hw = hw_units_for(alpha, r);
      n = std::min(n, fit_jobs(hw));
      hw = fit_units(hw, n);
    }
    if (hw < min_job_units_) return false;
  }
  if (hw == 0 || n == 0) return false;  // a round must hand something out, or the call would never move
  // The jobs could not hold the share (the device's bound, a full job table): plan what they hold.
  if (hw < hw_units_for(alpha, r)) alpha = static_cast<double>(hw) / rd;
  model::Times t = model::partitioned_times(params_, xa_eff, m.n_a, n, d_q, alpha, rd);
  if (automatic && !first_round_done_ && alpha < 1) {
    const uint32_t n_all = fit_jobs(r);
    const model::Times all = model::partitioned_times(params_, xa_eff, m.n_a, n_all, d_q, 1.0, rd);
    if (all.total() * (1 - config_.min_split_gain) <= t.total()) {
      hw = fit_units(r, n_all);
      alpha = hw < r ? static_cast<double>(hw) / rd : 1.0;
      n = n_all;
      t = hw < r ? model::partitioned_times(params_, xa_eff, m.n_a, n, d_q, alpha, rd) : all;
    }
  }
  if (automatic) {
    // First round: the SW-only call is the alternative (Eq 4.8's comparison, with live D_q and n_j).
    // Later rounds: carrying on as now, SW finishing the pool while our jobs drain.
    const double baseline = first_round_done_ ? std::max(rd / params_.xc, own)
                                              : model::sw_only_time(params_, rd);
    if (!(t.total() < baseline * (1 - kMinGain))) return false;
  }
  out = RoundPlan{alpha, n, hw, d_q, xa_eff, t.total(), m.n_a};
  return true;
}

void Partitioner::apply_round(double now, const RoundPlan& plan) {
  const bool later = first_round_done_;
  first_round_done_ = true;
  const uint64_t g = params_.granularity;
  uint64_t share = std::max(align_down(plan.hw_units / plan.jobs), g);
  if (max_job_units_ > 0) share = std::min(share, max_job_units_);
  uint64_t remaining = plan.hw_units;
  uint64_t cumulative = 0;
  uint32_t k = 0;
  const double hw_rate = static_cast<double>(std::max<uint32_t>(plan.n_a, 1)) * plan.xa_eff;
  // The units queued on each replica, jobs taken in turn (more replicas than lanes share lanes, which
  // only makes the predictions later).
  std::array<uint64_t, 64> lane_units{};
  const uint32_t lanes = std::clamp<uint32_t>(plan.n_a, 1, lane_units.size());
  while (remaining > 0 && !free_ids_.empty()) {
    uint64_t want = k + 1 < plan.jobs ? std::min(share, remaining) : remaining;
    if (max_job_units_ > 0) want = std::min(want, max_job_units_);
    WorkRange r = take_back(want);
    if (r.empty()) break;
    if (max_job_units_ > 0 && r.size() > max_job_units_) {
      // The aligned cut before an unaligned end (the call's last units) took up to a granule more
      // than asked: one granule fewer keeps the job within the device's bound (max >= granularity).
      give_back(WorkRange{r.begin, r.begin + g});
      r.begin += g;
    }
    remaining -= std::min(remaining, r.size());
    const JobId id = free_ids_.back();
    free_ids_.pop_back();
    Job& j = jobs_[id];
    j = Job{};
    j.range = r;
    j.state = JobState::planned;
    j.seq = next_seq_++;
    j.planned_at = now;
    j.attempt = attempts_failed_;
    cumulative += r.size();
    const uint64_t lane = lane_units[k % lanes] += r.size();
    ++k;
    // Fluid model of Eq 5.6: the k-th job is done after the queue wait, k initiations and the work
    // of the first k jobs spread over all replicas. With replica_predictions, no earlier than its own
    // replica gets through the jobs before it and its own at one replica's rate: the fluid figure
    // alone has the first of 6 jobs on 2 replicas done in half the time it takes, so the hardware
    // looked late in most such rounds and the caller took its last job back, to run it slower on the
    // CPU (1 MiB accumulate, one thread: such calls took about 70 us, the others 50; docs/model.md).
    double work_s = hw_rate > 0 ? static_cast<double>(cumulative) / hw_rate : kInf;
    if (config_.replica_predictions) {
      work_s = std::max(work_s, plan.xa_eff > 0 ? static_cast<double>(lane) / plan.xa_eff : kInf);
    }
    j.predicted_finish = now + plan.d_q + static_cast<double>(k) * params_.da + work_s;
    ++planned_;
  }
  if (k > 0) {
    ++counters_.rounds;
    if (later) ++counters_.rebalances;
  }
  if (config_.policy == PartitionPolicy::fixed_alpha ||
      (config_.policy == PartitionPolicy::automatic && !config_.rebalance)) {
    sw_only_rest_ = true;  // one split only; the SW share (and failed jobs) go to SW in one step
  }
}

double Partitioner::slowdown(double now) const {
  // Each outstanding job gives a lower bound on how much slower than planned the hardware is: it was
  // planned to take predicted_finish - planned_at and has taken now - planned_at without finishing.
  double s = 1;
  for (const Job& j : jobs_) {
    if (j.state != JobState::queued && j.state != JobState::running) continue;
    const double planned = j.predicted_finish + late_margin_ - j.planned_at;
    if (planned > 0) s = std::max(s, (now - j.planned_at) / planned);
  }
  return s;
}

int Partitioner::find_cancel_candidate(double now) const {
  if (!chunked() || !hardware_late(now)) return -1;
  int last = -1;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    const Job& j = jobs_[i];
    if (j.cancel_pending) return -1;  // one withdrawal at a time
    if (j.state == JobState::queued && (last < 0 || j.seq > jobs_[static_cast<size_t>(last)].seq)) {
      last = static_cast<int>(i);
    }
  }
  if (last < 0) return -1;
  // The guarantee: late hardware never leaves the CPU idle while a job of ours is still queued. The
  // withdrawal is issued while SW still has its last chunk, so the answer arrives before SW runs dry.
  if (pool_units_ <= chunk_units_) return last;
  // Earlier, withdraw only when that is predicted to finish the call sooner, with every outstanding
  // job's prediction stretched by the slowdown observed so far.
  const double s = slowdown(now);
  const auto stretched = [&](const Job& j) { return j.planned_at + s * (j.predicted_finish - j.planned_at); };
  const Job& cand = jobs_[static_cast<size_t>(last)];
  double others = now;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    const Job& j = jobs_[i];
    if (static_cast<int>(i) != last && (j.state == JobState::queued || j.state == JobState::running)) {
      others = std::max(others, stretched(j));
    }
  }
  const double sw_now = now + static_cast<double>(pool_units_) / params_.xc;
  const double sw_with = sw_now + static_cast<double>(cand.range.size()) / params_.xc;
  return std::max(sw_with, others) < std::max(sw_now, stretched(cand)) ? last : -1;
}

Step Partitioner::emit_planned() {
  size_t best = jobs_.size();
  for (size_t i = 0; i < jobs_.size(); ++i) {
    if (jobs_[i].state == JobState::planned && (best == jobs_.size() || jobs_[i].seq < jobs_[best].seq)) {
      best = i;
    }
  }
  Job& j = jobs_[best];
  j.state = JobState::queued;
  --planned_;
  ++outstanding_;
  ++counters_.jobs_submitted;
  return Step{StepKind::submit_job, j.range, static_cast<JobId>(best), 0};
}

Step Partitioner::run_sw(uint64_t max_units) {
  const WorkRange r = take_front(max_units);
  ++counters_.sw_steps;
  counters_.sw_units += r.size();
  return Step{StepKind::run_sw, r, 0, 0};
}

Step Partitioner::next(double now, const model::LiveMetrics& m) {
  now_ = std::max(now_, now);
  if (!active_) return Step{};
  if (planned_ > 0) return emit_planned();
  if (pool_units_ == 0 && outstanding_ == 0) return Step{};

  if (pool_units_ > 0 && !sw_only_rest_) {
    if (m.n_a == 0) {
      // Algorithm 2 lines 7-12: register demand, then a chunk of SW, re-checking n_a in between.
      if (!demand_sent_) {
        demand_sent_ = true;
        ++counters_.demand_jobs;
        return Step{StepKind::submit_demand, {}, 0, 0};
      }
      demand_sent_ = false;
      return run_sw(chunk_units_);
    }
    RoundPlan plan;
    if (decide_round(now_, m, plan)) {
      apply_round(now_, plan);
      if (planned_ > 0) return emit_planned();
    } else if (!first_round_done_) {
      end_first_round_without_hardware();
    }
  }

  const int cancel = find_cancel_candidate(now_);
  if (cancel >= 0) {
    Job& j = jobs_[static_cast<size_t>(cancel)];
    j.cancel_pending = true;
    // Remember how slow the hardware turned out, so later rounds of this call expect it.
    slowdown_ = std::max(slowdown_, slowdown(now_));
    return Step{StepKind::cancel_job, j.range, static_cast<JobId>(cancel), 0};
  }

  if (pool_units_ > 0) {
    // hw_only with a full job table, or backing off: wait rather than run work on the CPU. With nothing
    // outstanding and no back-off, no event would ever end the wait: a round that could not be planned
    // leaves the work to the CPU.
    const bool hw_owns_rest = config_.policy == PartitionPolicy::hw_only && m.n_a > 0 && !sw_only_rest_ &&
                              (outstanding_ > 0 || backing_off(now_));
    if (!hw_owns_rest) return run_sw(chunked() && !sw_only_rest_ ? chunk_units_ : kAll);
  }

  ++counters_.waits;
  double wake = pool_units_ > 0 && backing_off(now_) ? retry_after_ : kInf;
  if (chunked() && !hardware_late(now_)) {
    for (const Job& j : jobs_) {
      if (j.state == JobState::queued && !j.cancel_pending) {
        wake = std::min(wake, earliest_prediction() + late_margin_);  // from then on it may be taken back
        break;
      }
    }
  }
  // Without chunks nothing is ever taken back; with the pool empty nothing is handed out: until every
  // job has finished, only a failure would change anything, and a failed job's range then waits for
  // the others (its retry or software run no longer overlaps them). Worth saying only for jobs that
  // run long enough (PartitionerConfig::all_done_wait_min_seconds).
  const bool until_all_done = pool_units_ == 0 && planned_ == 0 && !chunked() && wake == kInf &&
                              latest_prediction() - now_ >= config_.all_done_wait_min_seconds;
  return Step{StepKind::wait, {}, 0, wake, until_all_done};
}

Status Partitioner::report(JobId id, JobEvent event, double now, Status why) {
  if (!active_ || id >= jobs_.size()) return Status::invalid_argument;
  Job& j = jobs_[id];
  if (j.state != JobState::queued && j.state != JobState::running) return Status::invalid_argument;
  now_ = std::max(now_, now);
  switch (event) {
    case JobEvent::started:
      if (j.state == JobState::queued) {
        j.state = JobState::running;
        j.started_at = now_;
      }
      return Status::ok;
    case JobEvent::completed:
      counters_.hw_units += j.range.size();
      ++counters_.jobs_completed;
      free_job(id);
      return Status::ok;
    case JobEvent::failed:
      give_back(j.range);
      ++counters_.jobs_failed;
      note_failure(j, why, now_);
      free_job(id);
      return Status::ok;
    case JobEvent::cancelled:
      if (!j.cancel_pending || j.state != JobState::queued) return Status::invalid_argument;
      give_back(j.range);
      ++counters_.jobs_cancelled;
      ++counters_.rebalances;
      free_job(id);
      return Status::ok;
    case JobEvent::cancel_refused:
      if (!j.cancel_pending) return Status::invalid_argument;
      j.cancel_pending = false;
      ++counters_.cancels_refused;
      if (j.state == JobState::queued) {
        j.state = JobState::running;
        j.started_at = now_;  // it started no later than now; assume now (pessimistic)
      }
      return Status::ok;
  }
  return Status::invalid_argument;
}

void Partitioner::note_failure(const Job& job, Status why, double now) {
  if (!retry_may_succeed(why)) {
    if (!sw_only_rest_) ++counters_.incurable_failures;
    sw_only_rest_ = true;  // sending the range again would fail again: the rest is software's
    return;
  }
  if (job.attempt != attempts_failed_) return;  // its round already counted as a failed attempt
  ++attempts_failed_;
  if (attempts_failed_ > config_.transient_retries) {
    sw_only_rest_ = true;
    return;
  }
  ++counters_.retries;
  const double backoff = config_.retry_backoff_seconds * std::ldexp(1.0, static_cast<int>(attempts_failed_) - 1);
  retry_after_ = now + (backoff > 0 ? backoff : 0);
}

void Partitioner::free_job(JobId id) {
  jobs_[id] = Job{};
  --outstanding_;
  free_ids_.push_back(id);
}

WorkRange Partitioner::take_front(uint64_t max_units) {
  if (pool_.empty()) return {};
  WorkRange& f = pool_.front();
  WorkRange r{f.begin, f.size() > max_units ? f.begin + max_units : f.end};
  f.begin = r.end;
  if (f.empty()) pool_.erase(pool_.begin());
  pool_units_ -= r.size();
  return r;
}

WorkRange Partitioner::take_back(uint64_t max_units) {
  if (pool_.empty() || max_units == 0) return {};
  WorkRange& b = pool_.back();
  // Job boundaries stay on the granularity: b.begin is aligned (every boundary the pool ever gets is
  // 0, N or aligned), so the aligned cut lies inside the range.
  const uint64_t begin = b.size() > max_units ? std::max(b.begin, align_down(b.end - max_units)) : b.begin;
  WorkRange r{begin, b.end};
  b.end = begin;
  if (b.empty()) pool_.pop_back();
  pool_units_ -= r.size();
  return r;
}

void Partitioner::give_back(WorkRange r) {
  if (r.empty()) return;
  pool_units_ += r.size();
  auto it = std::lower_bound(pool_.begin(), pool_.end(), r,
                             [](const WorkRange& a, const WorkRange& b) { return a.begin < b.begin; });
  // Coalesce with the neighbours so the pool stays short and SW chunks stay long.
  if (it != pool_.begin() && std::prev(it)->end == r.begin) {
    auto prev = std::prev(it);
    prev->end = r.end;
    if (it != pool_.end() && it->begin == prev->end) {
      prev->end = it->end;
      pool_.erase(it);
    }
    return;
  }
  if (it != pool_.end() && it->begin == r.end) {
    it->begin = r.begin;
    return;
  }
  pool_.insert(it, r);
}

}  // namespace tandem::engine
