// Automatic mode's two corrections to the calibrated cost model (issue 15), as pure arithmetic:
//  - CPU contention: the CPU share of a call runs at the throughput the calling thread gets, not at an
//    idle core's. Runnable application threads and the engine's own busy cores (the embedded
//    dispatcher's polling, an emulated device computing results) share the machine's cores.
//  - Self-calibration: robust running estimates of X_c, X_a, D_a and O_c learnt from the calls and jobs
//    a runtime observes, seeded from the calibration (like StarPU's history-based performance models).
// No clocks, no I/O: callers pass the observations.
#pragma once

#include <array>
#include <cstdint>

#include "model/cost_model.hpp"

namespace tandem::model {

// What competes for the CPUs when a call's CPU share runs.
struct CpuLoad {
  double cores = 1;             // CPUs the process may run on
  double runnable_threads = 1;  // application threads that want a CPU now, the caller included
  double engine_cores = 0;      // cores the engine's threads keep busy (0 to 1 per engine thread)
};

// The fraction of one core a runnable application thread gets under fair sharing (water-filling: the
// engine thread takes what it uses up to a fair share, the application threads split the rest).
// 1 when there are at least as many cores as demand.
double cpu_share(const CpuLoad& load);

// A robust running estimate of one positive quantity: the median of the last kWindow samples, seeded
// with a prior that counts as one sample until real ones arrive. After a step change the median
// follows within kWindow / 2 + 1 samples; a few wild samples (a preempted thread) never move it.
class RunningMedian {
 public:
  static constexpr uint32_t kWindow = 15;
  static constexpr double kMeanCap = 4;  // mean(): a sample counts at most this many medians
  void seed(double prior);
  void add(double sample);  // non-finite or negative samples are ignored
  double value() const { return value_; }
  // The mean of the window (the prior counted like in value()), each sample capped at kMeanCap
  // medians: for costs whose rare large samples are paid, not noise (a dispatcher descheduled for a
  // time slice delays a whole round), without letting one wild sample decide.
  double mean() const;
  uint64_t samples() const { return samples_; }  // real samples seen (the prior not counted)
  // Restores a persisted estimate as a full window of `samples` (capped at kWindow) identical samples.
  void restore(double value, uint64_t samples);

 private:
  std::array<double, kWindow> window_{};
  uint32_t count_ = 0;  // valid entries in window_
  uint32_t next_ = 0;   // ring position of the next sample
  uint64_t samples_ = 0;
  double prior_ = 0;
  double value_ = 0;
};

// One function's learnt cost parameters on one device kind.
class CostEstimator {
 public:
  // The calibration's (or the defaults') parameters; granularity, O_0 and BW_a are kept from it.
  void seed(const CostParams& prior);
  // A call's CPU share: `units` took `wall_s` on the caller while it got `share` of a core
  // (cpu_share at the time). Learns X_c of an uncontended core: units / wall_s / share.
  void observe_cpu(double units, double wall_s, double share);
  // A job of `units` whose device time was `device_s` (D_a's device part + W / X_a): learns X_a from
  // the slope over jobs of different sizes and D_a from the intercept; `round_trip_s` (submission to
  // completion seen, less device_s, when the caller was waiting) adds the host's part of D_a. An
  // upper bound only (`round_trip_bound`: the round woke a sleeping dispatcher) is taken when it is
  // below the figure in use, which it shows to be too high, or when the last kWindow round trips were
  // all bounds (waking the dispatcher is then what every call pays).
  void observe_job(double units, double device_s, double round_trip_s, bool round_trip_bound = false);
  // The CPU time one job cost the caller (slicing, submitting, collecting): O_c.
  void observe_job_overhead(double seconds);

  // The learnt parameters; those without samples keep the seed.
  CostParams params() const;
  uint64_t cpu_samples() const { return xc_.samples(); }
  uint64_t job_samples() const { return jobs_; }
  uint64_t overhead_samples() const { return oc_.samples(); }
  uint64_t round_trip_samples() const { return trip_.samples(); }  // D_a's host part (a restored figure counts)
  // A persisted estimate: the parameters and how many samples backed X_c, the jobs, and O_c.
  void restore(const CostParams& learnt, uint64_t cpu_samples, uint64_t job_samples, uint64_t overhead_samples);

 private:
  void refit();

  CostParams seed_;
  RunningMedian xc_;     // X_c of an idle core
  RunningMedian oc_;     // O_c
  RunningMedian trip_;   // host part of D_a (its mean is used)
  RunningMedian device_latency_;  // device part of D_a (intercept)
  RunningMedian xa_;     // X_a from pairs of jobs of different sizes
  double last_units_ = 0, last_device_s_ = 0;  // the previous job, for the pairwise slope
  uint64_t jobs_ = 0;
  uint32_t bounds_in_a_row_ = 0;  // round trips in a row that were upper bounds only
};

}  // namespace tandem::model
