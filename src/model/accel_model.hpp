// Timing model of one accelerator for one function: how long a job takes and how long loading it takes.
// Pure: no clocks. Used by the emulated fabric (when a job completes), the engine (job-size bound,
// reconfiguration deadline) and the monitor (queue-wait estimates).
#pragma once

#include <cmath>
#include <cstdint>

namespace tandem::model {

struct AccelModel {
  double throughput = 0;     // X_a: work units per second of one accelerator; 0 = no benefit (speedup 0x)
  double latency_s = 0;      // D_a: fixed time per job (initiation and return), seconds
  double reconfig_s = 0;     // time to load this function into a slot, seconds
  double bandwidth_bps = 0;  // BW_a: memory bandwidth one accelerator needs (bytes/s); 0 = not memory bound

  // Modelled time of a job of `workload` units, in nanoseconds (ceil: never early).
  int64_t job_ns(uint64_t workload) const {
    double t = latency_s;
    if (workload > 0) t += throughput > 0 ? static_cast<double>(workload) / throughput : INFINITY;
    const double ns = std::ceil(t * 1e9);
    // Beyond int64 (a huge workload) the conversion would be undefined: saturate instead.
    if (!(ns < 9.2e18)) return INT64_MAX;
    return static_cast<int64_t>(ns);
  }
  int64_t reconfig_ns() const { return static_cast<int64_t>(std::ceil(reconfig_s * 1e9)); }
  // The smallest workload whose job_ns exceeds `max_ns` (max_ns <= 0: no bound), UINT64_MAX when no
  // smaller one does. job_ns is non-decreasing in the workload: a bisection of 64 steps.
  uint64_t first_workload_over(int64_t max_ns) const {
    uint64_t lo = 0, hi = UINT64_MAX;
    if (max_ns <= 0 || job_ns(hi) <= max_ns) return hi;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (job_ns(mid) > max_ns) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }
};

}  // namespace tandem::model
