// The cost model of cooperative HW/SW processing (seed 000, Ch4 and 5.4.6-5.5; seed 004).
//
// Pure math: no clocks, no I/O, no state. SI units throughout: times in seconds, throughputs in work
// units per second. A work unit is whatever the function counts: bytes for accumulate, CPU cycles for
// `work`. Every function documents the equation it implements; docs/model.md derives them.
#pragma once

#include <cstdint>

namespace tandem::model {

// Offline parameters of one function on one device (thesis Table 4.3), from calibration.
struct CostParams {
  double xc = 0;  // X_c: CPU throughput, units/s
  double xa = 0;  // X_a: throughput of one accelerator replica, units/s
  double o0 = 0;  // O_0: CPU time of calling the SW function with no work, s
  double oc = 0;  // O_c: CPU time of one accelerated job: submit + collect + combine (includes O_0), s
  double da = 0;  // D_a: latency of one job: initiation + first data + return of the result, s
  double bw_per_accel = 0;  // BW_a: memory bandwidth one replica needs at full speed; 0 = not memory bound
  uint64_t granularity = 1;  // smallest unit of work a job may start or end on (8 B on the ACP bus)
};

// Live figures of the system monitor (thesis 5.4.6) for the function being called.
struct LiveMetrics {
  uint32_t n_a = 1;          // accelerators (replicas) resident for the function
  double d_q = 0;            // D_q: expected queue wait of a new job (Eq 5.2), s
  double available_bw = 0;   // BW: memory bandwidth still available; 0 = unknown (no penalty)
};

// Eq 4.2: the split proportional to throughput, alpha* = X_a / (X_a + X_c). Right for large N.
double alpha_proportional(double xa, double xc);

// Eq 4.4: the share of N for one accelerator such that both sides finish together,
// alpha = alpha* [1 - X_c (D_a - O_c) / N]. Not clamped; may be negative for small N.
double alpha_single(const CostParams& p, double n);

// Eq 4.8 (= Eq 5.3): the break-even work N_L, unrounded:
// N_L = X_c [X_c (O_c - O_0) / X_a + D_a - O_0]. Pass xa = X'_a for Eq 5.4. May be <= 0 (always pays).
double break_even_work_exact(const CostParams& p, double xa);

// Eq 5.4 rounded up to the granularity: accelerate only when N > this. UINT64_MAX if xa <= 0.
uint64_t break_even_work(const CostParams& p, double xa);

// Eq 5.1, with the thesis's printed max() read as min(): n_a replicas that need BW_a each share the
// available bandwidth BW; when BW < n_a BW_a each runs at X_a BW / (n_a BW_a). Unknown BW (0) or a
// compute-bound function (BW_a = 0) gives X_a.
double effective_accel_throughput(double xa, double bw_per_accel, double available_bw, uint32_t n_a);
double effective_accel_throughput(const CostParams& p, const LiveMetrics& m);

// Eq 5.2: worst-case wait of a new job behind `queued_jobs` queued jobs and the n_a running ones,
// whose work sums to `outstanding_work`: D_q = D_a q + (sum W_i) / (n_a X'_a). Infinite if n_a = 0.
double queue_wait(double da, uint64_t queued_jobs, double outstanding_work, uint32_t n_a, double xa_eff);

// Eq 5.6: alpha with n_a replicas of throughput X'_a, n_j jobs and queue wait D_q:
// alpha = n_a X'_a / (n_a X'_a + X_c) [1 - X_c (D_q + n_j (D_a - O_c)) / N]. Not clamped.
// With n_a = 1, n_j = 1, D_q = 0 and X'_a = X_a this is Eq 4.4 (= Eq 5.5).
double alpha_multi(const CostParams& p, double xa_eff, uint32_t n_a, uint32_t n_j, double d_q, double n);

// Completion-time predictions of one call (Eq 4.3a/4.3b generalised like Eq 5.6).
struct Times {
  double hw = 0;  // T_a: D_q + n_j D_a + alpha N / (n_a X'_a); 0 when alpha = 0
  double sw = 0;  // T_c: (1 - alpha) N / X_c + n_j O_c; N / X_c + O_0 when alpha = 0
  double total() const { return hw > sw ? hw : sw; }
};

// SW-only time of N units: N / X_c + O_0.
double sw_only_time(const CostParams& p, double n);

// Predicted times of a call that sends alpha (clamped to [0,1]) of N to the hardware in n_j jobs.
// alpha = 0 is the SW-only call. n_a = 0 with alpha > 0 gives an infinite hw time.
Times partitioned_times(const CostParams& p, double xa_eff, uint32_t n_a, uint32_t n_j, double d_q,
                        double alpha, double n);
// Single accelerator, one job, no queue: max(Eq 4.3a, Eq 4.3b).
double partitioned_time(const CostParams& p, double alpha, double n);

// The model's decision for a call of N units given live metrics (Algorithm 2, lines 1-2 and 15):
// SW-only when N <= N_L (Eq 5.4), when no replica is resident, or when the partitioned call is not
// predicted to be faster than the SW-only call; otherwise alpha from Eq 5.6, clamped to [0,1].
struct Plan {
  bool accelerate = false;
  double alpha = 0;         // chosen share for the hardware (0 when !accelerate)
  double alpha_model = 0;   // Eq 5.6 clamped to [0,1], whatever the decision
  uint64_t nl = 0;          // N_L of Eq 5.4 with the live X'_a
  double xa_eff = 0;        // X'_a of Eq 5.1
  double predicted = 0;     // predicted completion time of the chosen plan, s
  double sw_only = 0;       // N / X_c + O_0, s
};
Plan plan_call(const CostParams& p, const LiveMetrics& m, uint32_t n_j, double n);

// Automatic mode where a caller has no core to itself (no split without a free core: libtandem's
// client/partitioned_call.cc, and the simulator's SimConfig::split_needs_free_core): whether all of a
// call of N units on the accelerators (Eq 4.3a, alpha = 1) is predicted faster than all of it in
// software, `p.xc` already at the caller's CPU share. n_j: jobs per round (0: one per replica). A
// function with no replica that a device can load (`loadable`) is judged as if one were loaded after
// `reconfig_s`: the hardware-only partitioner asks for one and runs CPU chunks until it comes.
bool whole_call_to_accelerators(const CostParams& p, const LiveMetrics& m, uint32_t n_j, bool loadable,
                                double reconfig_s, double n);

// Seed 004: effective speedup = t_SW / (t_HA + t_overhead) = t_HA HW_accel / (t_HA + t_overhead).
double effective_speedup(double t_sw, double t_ha, double t_overhead);
double effective_speedup_from_accel(double t_ha, double hw_accel, double t_overhead);

// Eq 5.8: expected makespan when n_s slots of speedup S each cooperate with one of N_c CPU cores:
// T_e = T_SW / (1 + S n_s / N_c).
double expected_makespan(double t_sw, uint32_t n_slots, uint32_t n_cpus, double speedup);
// Eq 5.7: utilisation U = T_e / T_o.
double utilization(double t_expected, double t_observed);

// Round up to a multiple of g (g = 0 is treated as 1). Saturates instead of wrapping.
uint64_t round_up(uint64_t v, uint64_t g);

}  // namespace tandem::model
