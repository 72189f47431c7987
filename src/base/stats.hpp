// Order statistics over samples: one median and one percentile for the whole project (benchmarks,
// experiments, calibration, the simulator's repetitions). Header-only, in the base layer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace tandem {

// The median: the middle sample, or the mean of the two middle ones for an even count. 0 if empty.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t n = v.size(), mid = n / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lower + upper);
}
inline double median(std::span<const double> v) { return median(std::vector<double>(v.begin(), v.end())); }

// Nearest-rank percentile (q in [0, 1]) of samples already sorted ascending: the smallest sample with
// at least q of the samples at or below it. 0 if empty.
inline double percentile_sorted(std::span<const double> sorted, double q) {
  const size_t n = sorted.size();
  if (n == 0) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  return sorted[std::clamp<size_t>(rank, 1, n) - 1];
}

inline double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return percentile_sorted(v, q);
}

}  // namespace tandem
