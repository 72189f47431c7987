// Statistics over samples, one of each for the whole project (benchmarks, experiments, calibration,
// the simulator): median (and the upper median, always a sample), percentile, least-squares line,
// Jain's fairness index. Header-only, in the
// base layer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <utility>
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

// The upper of the two middle samples for an even count (the middle one for an odd count): always a
// sample that was measured. 0 if empty.
inline double upper_median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  return v[static_cast<size_t>(mid)];
}

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

// Least-squares line y = intercept + slope * x through (x, y) points. `ok` is false (and the line
// zero) with fewer than two points or no spread in x.
struct LineFit {
  double intercept = 0;
  double slope = 0;
  double r_squared = 0;  // 1 when y does not vary
  bool ok = false;
};
inline LineFit fit_line(std::span<const std::pair<double, double>> points) {
  LineFit fit;
  if (points.size() < 2) return fit;
  const double n = static_cast<double>(points.size());
  double mx = 0, my = 0;
  for (const auto& [x, y] : points) {
    mx += x / n;
    my += y / n;
  }
  double sxx = 0, sxy = 0, syy = 0;  // centred sums: no cancellation for large x
  for (const auto& [x, y] : points) {
    sxx += (x - mx) * (x - mx);
    sxy += (x - mx) * (y - my);
    syy += (y - my) * (y - my);
  }
  if (!(sxx > 0)) return fit;
  fit.slope = sxy / sxx;
  fit.intercept = my - fit.slope * mx;
  fit.r_squared = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1.0;
  fit.ok = true;
  return fit;
}

// Jain's fairness index of non-negative allocations: (sum x)^2 / (n * sum x^2), in [1/n, 1]; 1 when
// all are equal. 1 for an empty or all-zero set (nothing is unfair).
inline double jain_index(std::span<const double> x) {
  double sum = 0, sum_sq = 0;
  for (double v : x) {
    sum += v;
    sum_sq += v * v;
  }
  return sum_sq > 0 ? (sum * sum) / (static_cast<double>(x.size()) * sum_sq) : 1.0;
}

}  // namespace tandem
