// The workload partitioner of one accelerated call (thesis Algorithm 2), as a sans-I/O state machine.
//
// The partitioner never reads a clock, sleeps or submits anything itself. Its driver (the calling thread
// in libtandem, or a simulated application in the discrete-event simulator) passes in the time and the
// monitor's live metrics, performs the steps it gets back, and reports what happened to the jobs. The
// work of a call is the range of units [0, N); every step names a sub-range, so the driver can combine
// partial results (e.g. partial sums). Every unit is processed exactly once: by a run_sw step, or by a
// job the driver reported `completed`.
//
// Driver protocol (docs/model.md has the full table):
//   start(N, now, metrics);
//   loop: step = next(now, metrics)
//     run_sw        process step.range on the CPU now, then call next() again.
//     submit_job    submit one job for step.range under id step.job. Later report, exactly once, a
//                   terminal event for it: completed, failed (also a rejected submission; with the
//                   job's status, see "Failures" below), or cancelled.
//                   `started` may be reported in between when the driver learns it.
//     submit_demand submit an empty job for the function so that the engine records demand; it is
//                   rejected with NOT_ACCELERATED (or completes trivially); report nothing about it.
//     cancel_job    ask the engine to withdraw step.job if it has not started: report `cancelled` (the
//                   partitioner takes the range back) or `cancel_refused` (it runs; a terminal event
//                   follows). A job that completed or failed meanwhile is reported as such instead.
//     wait          nothing to do on the CPU: block until a job event or until step.wake_at (absolute
//                   time, +inf: events only), report the events, call next().
//     done          every unit of [0, N) has been processed; combine the partial results.
//   Before each next() call, report every job event observed so far (with the time observed).
//
// Failures. A failed job's range goes back to the pool, and its status decides what comes next. One
// that retrying cannot cure (an unreachable buffer, a device error, an unknown function, a job too
// large, a lost engine: anything but the four below) ends the call's use of the hardware in every
// policy: the rest runs in software. Congestion (QUEUE_FULL, LIMIT_EXCEEDED, NOT_ACCELERATED from a
// replica that went away, DEVICE_MEMORY_FULL) may pass: no new round starts before a back-off that doubles with each
// failed attempt (hw_only waits it out, the others keep the CPU working), and after
// `transient_retries` failed attempts the rest runs in software. Jobs of one round that fail together
// are one attempt.
#pragma once

#include <cstdint>
#include <vector>

#include "abi/status.hpp"
#include "model/cost_model.hpp"

namespace tandem::engine {

struct WorkRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
  bool empty() const { return end <= begin; }
  friend bool operator==(const WorkRange&, const WorkRange&) = default;
};

enum class PartitionPolicy : uint8_t {
  automatic,    // the model (Eq 5.4, 5.6) with rebalancing
  sw_only,      // never use the hardware
  hw_only,      // all work to the hardware whenever a replica is resident (SW with demand jobs otherwise)
  fixed_alpha,  // one split with the given alpha, no rebalancing (experiments)
};

struct PartitionerConfig {
  PartitionPolicy policy = PartitionPolicy::automatic;
  double fixed_alpha = 0;         // for fixed_alpha, clamped to [0, 1]
  uint32_t jobs_per_round = 6;    // n_j; 0 = one job per resident replica (thesis 5.5.5 ablation)
  uint64_t cowork_max_units = 0;  // C_COWORK_MAX; 0 = cowork_max_seconds of CPU work
  double cowork_max_seconds = 20e-6;
  uint64_t min_job_units = 0;     // smallest job worth submitting; 0 = the granularity
  bool rebalance = true;          // automatic only: new rounds, mid-round top-ups, taking queued jobs back
  uint32_t max_outstanding_jobs = 64;  // size of the job table, allocated once
  uint32_t transient_retries = 8;      // failed attempts (QUEUE_FULL, ...) before the rest goes to SW
  double retry_backoff_seconds = 20e-6;  // before the first retry; doubles with each further one
  // automatic only: a first round splits the call only when Eq 5.6's split is predicted to beat sending
  // all of it to the hardware by this fraction; else all of it goes. 0 = the thesis's rule (the
  // simulator); the real runtime asks for more (PartitionTuning).
  double min_split_gain = 0;
  // A job's predicted finish also waits for the work its own replica has before and in it (jobs taken
  // in turn), not only for Eq 5.6's fluid figure of the round's work spread over every replica: a job
  // runs on one replica. false = the fluid figure alone, the thesis's (the simulator); the real runtime
  // sets it (PartitionTuning); caller-owned partitioners get false unless they set it. The predictions
  // decide lateness, withdrawals, waits, the observed slowdown and a later round's own backlog.
  bool replica_predictions = false;
  // A wait for every outstanding job (Step::until_all_done) only when the last of them is predicted to
  // finish at least this much later: the caller then sleeps until that one, and the dispatcher pays no
  // wake-up per completion on the way. A shorter wait wakes at the first completion, which costs
  // less where a wake-up takes longer than the jobs (measured on a 2-vCPU KVM guest, docs/results/auto.md).
  double all_done_wait_min_seconds = 20e-6;
};

// Whether a job that failed with `status` may succeed if submitted again (congestion), or never will.
bool retry_may_succeed(Status status);

// C_COWORK_MAX in work units for these figures (whole granules): the CPU's share of a rebalancing call
// runs in chunks of this size, with a decision before each.
uint64_t cpu_chunk_units(const PartitionerConfig& config, const model::CostParams& params);

using JobId = uint32_t;

enum class StepKind : uint8_t { run_sw, submit_job, submit_demand, cancel_job, wait, done };

struct Step {
  StepKind kind = StepKind::done;
  WorkRange range{};   // run_sw, submit_job, cancel_job
  JobId job = 0;       // submit_job, cancel_job
  double wake_at = 0;  // wait: call next() by then even without a job event; +inf = only on events
  // wait: nothing is decided before every outstanding job has finished (no work left to hand out, no
  // job to take back), so only the last of them need wake the caller. A job that fails meanwhile
  // gives its range back to the pool; the caller acts on that (a retry, or software) once it wakes.
  bool until_all_done = false;
};

enum class JobEvent : uint8_t { started, completed, failed, cancelled, cancel_refused };

struct PartitionerCounters {
  uint64_t rounds = 0;          // times work was handed to the hardware
  uint64_t rebalances = 0;      // rounds after the first, plus jobs taken back into SW
  uint64_t jobs_submitted = 0;
  uint64_t jobs_completed = 0;
  uint64_t jobs_failed = 0;
  uint64_t incurable_failures = 0;  // failures that sent the rest of the call to SW
  uint64_t retries = 0;         // failed attempts that were retried after a back-off
  uint64_t jobs_cancelled = 0;  // withdrawn before they started; their work went to SW
  uint64_t cancels_refused = 0;
  uint64_t demand_jobs = 0;
  uint64_t sw_steps = 0;
  uint64_t sw_units = 0;
  uint64_t hw_units = 0;        // units of completed jobs
  uint64_t waits = 0;
};

class Partitioner {
 public:
  explicit Partitioner(const model::CostParams& params, const PartitionerConfig& config = {});

  // Begins a call of `units` work units; decides the initial plan from the live metrics.
  void start(uint64_t units, double now, const model::LiveMetrics& metrics);
  // The next thing the driver must do. `now` never goes backwards (earlier values are ignored).
  Step next(double now, const model::LiveMetrics& metrics);
  // A job's fate; for `failed`, `why` is the job's status (ok, i.e. unknown, counts as incurable).
  // invalid_argument if the id or the event does not fit the job's state.
  Status report(JobId job, JobEvent event, double now, Status why = Status::ok);

  // The decision at start(): the model's predicted completion time of the whole call (s), its alpha
  // (the share planned for the hardware; 0 for SW-only) and N_L (Eq 5.4 with the live X'_a).
  double predicted_duration() const { return predicted_; }
  double initial_alpha() const { return initial_alpha_; }
  uint64_t break_even_units() const { return nl_; }

  const PartitionerCounters& counters() const { return counters_; }
  bool finished() const { return active_ && pool_units_ == 0 && outstanding_ == 0 && planned_ == 0; }
  uint64_t total_units() const { return total_; }
  uint64_t sw_pool_units() const { return pool_units_; }   // not yet given to SW or HW
  uint32_t outstanding_jobs() const { return outstanding_; }
  uint64_t chunk_units() const { return chunk_units_; }
  const model::CostParams& params() const { return params_; }
  // Per call, before start(): X_a and D_a as the call's access method makes them (the device side of
  // moving its data, client/access.hpp); base_params() keeps the calibrated ones.
  void set_access_costs(double xa, double da);
  // Per call, before start(): new base parameters (automatic mode's learnt and contention-adjusted
  // figures, issue 15). Allocates nothing.
  void set_base_params(const model::CostParams& params);
  // Per call, before start(): the largest job the device takes for this call, in units (its per-job
  // buffer or time bound; 0 = none). A round then has more jobs than n_j where needed, and what its
  // free job ids cannot hold stays in the pool: for a later round (hw_only, automatic with rebalancing)
  // or software (fixed_alpha, automatic without).
  void set_max_job_units(uint64_t units);
  uint64_t max_job_units() const { return max_job_units_; }
  // During a call: the CPU throughput the driver measured for this call's software steps so far. Later
  // rounds and withdrawals plan with it instead of the modelled X_c (Algorithm 2's rebalancing on
  // measured CPU speed).
  void observe_cpu_rate(double units_per_s);
  const model::CostParams& base_params() const { return base_; }
  const PartitionerConfig& config() const { return config_; }

 private:
  enum class JobState : uint8_t { free, planned, queued, running };
  struct Job {
    WorkRange range{};
    JobState state = JobState::free;
    bool cancel_pending = false;
    uint64_t seq = 0;               // submission order, to withdraw the last one first
    double planned_at = 0;
    double predicted_finish = 0;    // from the model when planned
    double started_at = 0;
    uint32_t attempt = 0;           // failed attempts of the call when it was submitted
  };

  // One hand-over of work to the hardware, as decided by decide_round().
  struct RoundPlan {
    double alpha = 0;
    uint32_t jobs = 0;
    uint64_t hw_units = 0;
    double d_q = 0;        // queue wait assumed for the new jobs
    double xa_eff = 0;     // X'_a
    double predicted = 0;  // predicted time from now until both sides are done
    uint32_t n_a = 0;
  };

  void derive_limits();
  bool needs_hardware() const;
  bool chunked() const;
  uint32_t jobs_for(const model::LiveMetrics& m) const;
  double backlog(double now, const model::LiveMetrics& m, double xa_eff) const;
  double earliest_prediction() const;
  double latest_prediction() const;  // of the outstanding jobs; 0 if none
  bool hardware_late(double now) const;
  double slowdown(double now) const;
  uint64_t hw_units_for(double alpha, uint64_t units) const;
  bool decide_round(double now, const model::LiveMetrics& m, RoundPlan& out) const;
  void apply_round(double now, const RoundPlan& plan);
  void end_first_round_without_hardware();
  int find_cancel_candidate(double now) const;
  Step emit_planned();
  Step run_sw(uint64_t max_units);
  WorkRange take_front(uint64_t max_units);
  WorkRange take_back(uint64_t max_units);
  void give_back(WorkRange r);
  void note_failure(const Job& job, Status why, double now);
  bool backing_off(double now) const { return now < retry_after_; }
  void free_job(JobId id);
  uint64_t align_down(uint64_t v) const;

  model::CostParams params_;
  model::CostParams base_;
  PartitionerConfig config_;
  uint64_t chunk_units_ = 1;
  uint64_t min_job_units_ = 1;
  double late_margin_ = 0;        // how far behind its predictions the hardware must be to count as late
  uint64_t max_job_units_ = 0;    // set_max_job_units; 0 = no bound

  // Per call.
  bool active_ = false;
  bool sw_only_rest_ = false;     // no more hardware rounds or demand: SW takes whole ranges
  bool first_round_done_ = false;
  bool demand_sent_ = false;      // a demand job went out since the last SW chunk
  uint64_t total_ = 0;
  double now_ = 0;
  double predicted_ = 0;
  double initial_alpha_ = 0;
  uint64_t nl_ = 0;
  uint64_t next_seq_ = 0;
  double slowdown_ = 1;           // observed hardware slowdown in this call (>= 1)
  uint32_t attempts_failed_ = 0;  // transient failures, one per round that met them
  double retry_after_ = 0;        // no new round before this time (back-off)
  uint64_t pool_units_ = 0;
  uint32_t outstanding_ = 0;      // queued or running
  uint32_t planned_ = 0;          // planned, submit step not yet emitted
  PartitionerCounters counters_;

  std::vector<WorkRange> pool_;   // unassigned work: sorted, disjoint, coalesced
  std::vector<Job> jobs_;         // fixed size: max_outstanding_jobs
  std::vector<JobId> free_ids_;   // stack of free job slots
};

const char* to_string(StepKind k);
const char* to_string(JobEvent e);

}  // namespace tandem::engine
