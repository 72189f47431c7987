#include "model/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tandem::model {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

double clamp01(double a) {
  if (!(a > 0)) return 0;  // also maps NaN to 0
  return a < 1 ? a : 1;
}
}  // namespace

double alpha_proportional(double xa, double xc) {
  const double sum = xa + xc;
  return sum > 0 ? xa / sum : 0;
}

double alpha_single(const CostParams& p, double n) {
  return alpha_multi(p, p.xa, 1, 1, 0, n);
}

double break_even_work_exact(const CostParams& p, double xa) {
  if (!(xa > 0)) return kInf;
  // From Eq 4.5 the HW share must at least repay the extra CPU overhead: alpha N >= X_c (O_c - O_0).
  // From Eq 4.6 the HW side must not be slower than SW-only: alpha N <= X_a (N / X_c + O_0 - D_a).
  // An alpha exists iff the lower bound is below the upper one, which gives Eq 4.8. The same N is
  // where the balanced split of Eq 4.4 starts to beat SW-only (docs/model.md shows both).
  return p.xc * (p.xc * (p.oc - p.o0) / xa + p.da - p.o0);
}

uint64_t round_up(uint64_t v, uint64_t g) {
  if (g <= 1) return v;
  const uint64_t r = v % g;
  if (r == 0) return v;
  const uint64_t add = g - r;
  return v > std::numeric_limits<uint64_t>::max() - add ? std::numeric_limits<uint64_t>::max() : v + add;
}

uint64_t break_even_work(const CostParams& p, double xa) {
  const double nl = break_even_work_exact(p, xa);
  if (!(nl > 0)) return 0;
  if (nl >= 1.8e19) return std::numeric_limits<uint64_t>::max();
  // Round up: N_L is the smallest admissible workload that satisfies the inequality.
  return round_up(static_cast<uint64_t>(std::ceil(nl)), p.granularity);
}

double effective_accel_throughput(double xa, double bw_per_accel, double available_bw, uint32_t n_a) {
  if (bw_per_accel <= 0 || available_bw <= 0 || n_a == 0) return xa;
  // Eq 5.1 prints max(BW / (n_a BW_a), 1), which would raise X_a when bandwidth is plentiful; the text
  // says throughput is *penalised* when bandwidth is limited, so the factor is capped at 1.
  return xa * std::min(available_bw / (static_cast<double>(n_a) * bw_per_accel), 1.0);
}

double effective_accel_throughput(const CostParams& p, const LiveMetrics& m) {
  return effective_accel_throughput(p.xa, p.bw_per_accel, m.available_bw, m.n_a);
}

double queue_wait(double da, uint64_t queued_jobs, double outstanding_work, uint32_t n_a, double xa_eff) {
  if (n_a == 0) return kInf;
  const double initiation = da * static_cast<double>(queued_jobs);
  if (!(outstanding_work > 0)) return initiation;  // nothing to process: only the initiation delays
  if (!(xa_eff > 0)) return kInf;
  return initiation + outstanding_work / (static_cast<double>(n_a) * xa_eff);
}

double alpha_multi(const CostParams& p, double xa_eff, uint32_t n_a, uint32_t n_j, double d_q, double n) {
  const double xhw = static_cast<double>(n_a) * xa_eff;
  if (!(xhw > 0) || !(n > 0)) return 0;
  const double latency = d_q + static_cast<double>(n_j) * (p.da - p.oc);
  return xhw / (xhw + p.xc) * (1.0 - p.xc * latency / n);
}

double sw_only_time(const CostParams& p, double n) { return n / p.xc + p.o0; }

Times partitioned_times(const CostParams& p, double xa_eff, uint32_t n_a, uint32_t n_j, double d_q,
                        double alpha, double n) {
  const double a = clamp01(alpha);
  if (a == 0) return Times{0, sw_only_time(p, n)};
  const double jobs = static_cast<double>(std::max<uint32_t>(n_j, 1));
  const double xhw = static_cast<double>(n_a) * xa_eff;
  Times t;
  t.hw = xhw > 0 ? d_q + jobs * p.da + a * n / xhw : kInf;  // Eq 4.3a with D_q and n_j initiations
  t.sw = (1.0 - a) * n / p.xc + jobs * p.oc;                  // Eq 4.3b with n_j job overheads
  return t;
}

double partitioned_time(const CostParams& p, double alpha, double n) {
  return partitioned_times(p, p.xa, 1, 1, 0, alpha, n).total();
}

Plan plan_call(const CostParams& p, const LiveMetrics& m, uint32_t n_j, double n) {
  Plan plan;
  plan.xa_eff = effective_accel_throughput(p, m);
  plan.nl = break_even_work(p, plan.xa_eff);
  plan.sw_only = sw_only_time(p, n);
  plan.predicted = plan.sw_only;
  const uint32_t jobs = std::max<uint32_t>(n_j, 1);
  plan.alpha_model = m.n_a > 0 ? clamp01(alpha_multi(p, plan.xa_eff, m.n_a, jobs, m.d_q, n)) : 0;
  if (m.n_a == 0 || n <= static_cast<double>(plan.nl) || plan.alpha_model == 0) return plan;
  const double t = partitioned_times(p, plan.xa_eff, m.n_a, jobs, m.d_q, plan.alpha_model, n).total();
  // N_L ignores D_q and n_j; the time comparison is the same test made with the live figures.
  if (!(t < plan.sw_only)) return plan;
  plan.accelerate = true;
  plan.alpha = plan.alpha_model;
  plan.predicted = t;
  return plan;
}

bool whole_call_to_accelerators(const CostParams& p, const LiveMetrics& m, uint32_t n_j, bool loadable,
                                double reconfig_s, double n) {
  const uint32_t round_jobs = n_j == 0 ? std::max<uint32_t>(m.n_a, 1) : n_j;
  LiveMetrics judged = m;
  if (judged.n_a == 0 && loadable) {
    judged.n_a = 1;
    judged.d_q = std::max(0.0, reconfig_s);
  }
  const Times hw_only = partitioned_times(p, effective_accel_throughput(p, judged), judged.n_a, round_jobs, judged.d_q, 1.0, n);
  return hw_only.total() < sw_only_time(p, n);
}

double effective_speedup(double t_sw, double t_ha, double t_overhead) {
  const double d = t_ha + t_overhead;
  return d > 0 ? t_sw / d : kInf;
}

double effective_speedup_from_accel(double t_ha, double hw_accel, double t_overhead) {
  return effective_speedup(t_ha * hw_accel, t_ha, t_overhead);
}

double expected_makespan(double t_sw, uint32_t n_slots, uint32_t n_cpus, double speedup) {
  if (n_cpus == 0) return kInf;
  return t_sw / (1.0 + static_cast<double>(n_slots) / static_cast<double>(n_cpus) * speedup);
}

double utilization(double t_expected, double t_observed) {
  return t_observed > 0 ? t_expected / t_observed : 0;
}

}  // namespace tandem::model
