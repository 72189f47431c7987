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

std::vector<AppSpec> make_workload(const WorkloadSpec& spec) {
  const uint32_t apps = std::max<uint32_t>(spec.apps, 1);
  const uint32_t functions = std::max<uint32_t>(spec.functions, 1);
  const auto cycles = [&](double s) { return static_cast<uint64_t>(std::llround(s * spec.cpu_hz)); };
  const uint64_t per_app = cycles(spec.total_sw_s) / apps;
  const uint64_t lo = std::max<uint64_t>(cycles(spec.call_min_s), 1);
  const uint64_t hi = std::max(cycles(spec.call_max_s), lo);
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
      c.function = static_cast<engine::FunctionId>(spec.first_function + rng.below(functions));
      c.units = std::min(left, lo + rng.below(hi - lo + 1));
      left -= c.units;
      out[a].calls.push_back(c);
    }
  }
  return out;
}

}  // namespace tandem::sim
