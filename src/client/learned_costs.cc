#include "client/learned_costs.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "abi/status.hpp"
#include "funcs/function.hpp"

namespace tandem::client {

LearnedCosts::LearnedCosts() : entries_(std::make_unique<std::array<Entry, TANDEM_FN_MAX>>()) {}

void LearnedCosts::publish(Entry& e, bool seeded) {
  const model::CostParams p = e.estimator.params();
  constexpr auto relaxed = std::memory_order_relaxed;
  // A sample that moves no estimate (the medians stand) leaves the version: callers keep what they
  // derived from the figures (client/partitioned_call.cc) instead of deriving it again on every call.
  const bool moved = seeded || e.xc.load(relaxed) != p.xc || e.xa.load(relaxed) != p.xa ||
                     e.da.load(relaxed) != p.da || e.oc.load(relaxed) != p.oc;
  e.xc.store(p.xc, relaxed);
  e.xa.store(p.xa, relaxed);
  e.da.store(p.da, relaxed);
  e.oc.store(p.oc, relaxed);
  e.cpu.store(e.estimator.cpu_samples(), relaxed);
  e.jobs.store(e.estimator.job_samples(), relaxed);
  e.overhead.store(e.estimator.overhead_samples(), relaxed);
  if (moved) e.version.fetch_add(1, std::memory_order_release);
}

void LearnedCosts::seed(uint16_t function, const model::CostParams& seed) {
  if (function >= TANDEM_FN_MAX) return;
  Entry& e = (*entries_)[function];
  std::lock_guard lock(e.mutex);
  e.estimator = model::CostEstimator{};
  e.estimator.seed(seed);
  e.o0.store(seed.o0, std::memory_order_relaxed);
  e.bw_per_accel.store(seed.bw_per_accel, std::memory_order_relaxed);
  e.granularity.store(seed.granularity, std::memory_order_relaxed);
  publish(e, true);
}

void LearnedCosts::restore(const Calibration& learnt) {
  for (uint16_t f = 0; f < TANDEM_FN_MAX; ++f) {
    if (!learnt.functions[f]) continue;
    Entry& e = (*entries_)[f];
    std::lock_guard lock(e.mutex);
    const SampleCounts& n = learnt.samples[f];
    e.estimator.restore(*learnt.functions[f], n.cpu, n.jobs, n.overhead);
    publish(e, true);
  }
}

void LearnedCosts::observe(uint16_t function, const CallObservation& call) {
  if (function >= TANDEM_FN_MAX) return;
  // Tiny CPU shares measure the clock and the call overhead more than the function.
  const bool cpu = call.sw_units > 0 && call.sw_wall_s >= 2e-6;
  if (!cpu && call.job_count == 0 && call.overhead_jobs == 0) return;
  Entry& e = (*entries_)[function];
  std::lock_guard lock(e.mutex);
  if (cpu && call.sw_cpu_s > 0) {
    e.estimator.observe_cpu(call.sw_units, call.sw_cpu_s, 1.0);
  } else if (cpu) {
    e.estimator.observe_cpu(call.sw_units, call.sw_wall_s, call.share);
  }
  for (uint32_t j = 0; j < call.job_count && j < CallObservation::kMaxJobs; ++j) {
    const CallObservation::Job& job = call.jobs[j];
    e.estimator.observe_job(job.units, job.device_s, job.round_trip_s, call.round_trip_bound_only);
  }
  if (call.overhead_jobs > 0) e.estimator.observe_job_overhead(call.job_overhead_s / call.overhead_jobs);
  publish(e);
  observed_.store(true, std::memory_order_relaxed);
}

model::CostParams LearnedCosts::params(uint16_t function) const {
  const Entry& e = (*entries_)[function < TANDEM_FN_MAX ? function : 0];
  constexpr auto relaxed = std::memory_order_relaxed;
  model::CostParams p;
  p.o0 = e.o0.load(relaxed);
  p.bw_per_accel = e.bw_per_accel.load(relaxed);
  p.granularity = e.granularity.load(relaxed);
  p.xc = e.xc.load(relaxed);
  p.xa = e.xa.load(relaxed);
  p.da = e.da.load(relaxed);
  p.oc = e.oc.load(relaxed);
  return p;
}

uint64_t LearnedCosts::version(uint16_t function) const {
  return (*entries_)[function < TANDEM_FN_MAX ? function : 0].version.load(std::memory_order_acquire);
}

SampleCounts LearnedCosts::samples(uint16_t function) const {
  const Entry& e = (*entries_)[function < TANDEM_FN_MAX ? function : 0];
  constexpr auto relaxed = std::memory_order_relaxed;
  return SampleCounts{e.cpu.load(relaxed), e.jobs.load(relaxed), e.overhead.load(relaxed)};
}

Calibration LearnedCosts::snapshot(const std::string& device_kind) const {
  Calibration c;
  c.device = device_kind;
  c.host = learned_host_name();
  for (uint16_t f = 0; f < TANDEM_FN_MAX; ++f) {
    const SampleCounts n = samples(f);
    if (n.cpu == 0 && n.jobs == 0 && n.overhead == 0) continue;
    c.functions[f] = params(f);
    c.samples[f] = n;
  }
  return c;
}

bool learnt_figures_fit(const LearntOnDevice& learnt_on, const model::AccelModel& now) {
  const auto within_3x = [](double a, double b) { return a <= 3 * b && b <= 3 * a; };
  const bool xa_fits = (learnt_on.xa <= 0 && now.throughput <= 0) || within_3x(learnt_on.xa, now.throughput);
  const bool da_fits = std::abs(learnt_on.da_s - now.latency_s) <= 20e-6 || within_3x(learnt_on.da_s, now.latency_s);
  return xa_fits && da_fits;
}

std::string learned_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string learned_costs_path(const std::string& device_kind) {
  if (device_kind.empty()) return {};
  std::string dir;
  if (const char* env = std::getenv("TANDEM_LEARNED_DIR"); env != nullptr && env[0] != '\0') {
    if (std::string_view(env) == "off") return {};
    dir = env;
  } else {
    const std::string user = user_calibration_path();
    const size_t slash = user.find_last_of('/');
    if (slash == std::string::npos) return {};
    dir = user.substr(0, slash);
  }
  return dir + "/learned-" + device_kind + ".toml";
}

std::optional<Calibration> load_learned_costs(const std::string& path, const std::string& device_kind,
                                              std::string& warning) {
  warning.clear();
  if (path.empty()) return std::nullopt;
  std::ifstream probe(path);
  if (!probe) return std::nullopt;  // nothing learnt yet
  Calibration c;
  try {
    c = load_calibration(path);
  } catch (const Error& e) {
    warning = "ignoring learnt cost figures: " + std::string(e.what());
    return std::nullopt;
  }
  // Figures of another device or machine would mislead the partitioner.
  if (c.device != device_kind || c.host != learned_host_name()) {
    warning = "ignoring learnt cost figures in '" + path + "': made for device '" + c.device + "' on host '" +
              c.host + "', not '" + device_kind + "' on '" + learned_host_name() + "'";
    return std::nullopt;
  }
  for (uint16_t f = 0; f < TANDEM_FN_MAX; ++f) {
    const auto& p = c.functions[f];
    if (p && !(p->xc > 0 && p->xa >= 0 && p->da >= 0 && p->oc >= 0)) {
      warning = "ignoring learnt cost figures in '" + path + "': implausible values";
      return std::nullopt;
    }
  }
  return c;
}

}  // namespace tandem::client
