#include "sim/workload.hpp"

#include <algorithm>
#include <cmath>

namespace tandem::sim {

uint64_t AppSpec::units() const {
  uint64_t u = 0;
  for (const LibraryCall& c : calls) u += c.units;
  return u;
}

uint64_t mix_seed(uint64_t a, uint64_t b) {
  Rng r(a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull));
  r.next();
  return r.next();
}

namespace {

// Work units of one call, by the spec's size distribution. The uniform draw is Table 5.3's.
uint64_t draw_units(Rng& rng, const WorkloadSpec& spec, uint64_t lo, uint64_t hi, double mean) {
  const double l = static_cast<double>(lo), h = static_cast<double>(hi);
  double v = 0;
  switch (spec.sizes) {
    case WorkloadSpec::Sizes::uniform: return lo + rng.below(hi - lo + 1);
    case WorkloadSpec::Sizes::fixed: v = mean; break;
    case WorkloadSpec::Sizes::log_uniform: v = std::exp(std::log(l) + rng.unit() * (std::log(h) - std::log(l))); break;
    case WorkloadSpec::Sizes::exponential: {
      // Inverse CDF of an exponential of scale mean - lo, truncated to [0, hi - lo].
      const double scale = std::max(mean - l, 1.0);
      const double tail = 1.0 - std::exp(-(h - l) / scale);
      v = l - scale * std::log(1.0 - rng.unit() * tail);
      break;
    }
  }
  return std::clamp(static_cast<uint64_t>(std::llround(v)), lo, hi);
}

// A function of the mix: uniform (Table 5.3) or by the weights.
engine::FunctionId draw_function(Rng& rng, const WorkloadSpec& spec, uint32_t functions, double weight_sum) {
  if (spec.weights.empty()) return static_cast<engine::FunctionId>(spec.first_function + rng.below(functions));
  double x = rng.unit() * weight_sum;
  uint32_t f = 0;
  for (; f + 1 < functions; ++f) {
    const double w = f < spec.weights.size() ? spec.weights[f] : 0;
    if (x < w) break;
    x -= w;
  }
  return static_cast<engine::FunctionId>(spec.first_function + f);
}

}  // namespace

std::vector<AppSpec> make_workload(const WorkloadSpec& spec) {
  const uint32_t apps = std::max<uint32_t>(spec.apps, 1);
  const uint32_t functions = std::max<uint32_t>(spec.functions, 1);
  const auto cycles = [&](double s) { return static_cast<uint64_t>(std::llround(s * spec.cpu_hz)); };
  const uint64_t per_app = cycles(spec.total_sw_s) / apps;
  const uint64_t lo = std::max<uint64_t>(cycles(spec.call_min_s), 1);
  const uint64_t hi = std::max(cycles(spec.call_max_s), lo);
  const double mean = spec.call_mean_s >= 0 ? static_cast<double>(cycles(spec.call_mean_s))
                                            : 0.5 * (static_cast<double>(lo) + static_cast<double>(hi));
  double weight_sum = 0;
  for (uint32_t f = 0; f < functions && f < spec.weights.size(); ++f) weight_sum += spec.weights[f];
  std::vector<AppSpec> out(apps);
  for (uint32_t a = 0; a < apps; ++a) {
    if (spec.same_calls_for_all && a > 0) {
      out[a] = out[0];
      continue;
    }
    Rng rng(mix_seed(spec.seed, a));
    uint64_t left = per_app;
    while (left > 0) {
      LibraryCall c;
      c.function = draw_function(rng, spec, functions, weight_sum);
      c.units = std::min(left, draw_units(rng, spec, lo, hi, mean));
      left -= c.units;
      out[a].calls.push_back(c);
    }
    if (spec.rate_per_s > 0) {
      // Open arrivals: a Poisson process per application, from a stream of its own so that the call
      // list is the closed loop's.
      Rng arrivals(mix_seed(mix_seed(spec.seed, a), 0x0A77));
      double t = 0;
      for (LibraryCall& c : out[a].calls) {
        t += -std::log(1.0 - arrivals.unit()) / spec.rate_per_s;
        c.arrival_ns = static_cast<int64_t>(std::llround(t * 1e9));
      }
    }
  }
  return out;
}

}  // namespace tandem::sim
