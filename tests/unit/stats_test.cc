// The project's one median, percentile, line fit and fairness index (src/base/stats.hpp).
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "base/stats.hpp"

namespace tandem {
namespace {

TEST(Stats, MedianOddEvenEmpty) {
  EXPECT_DOUBLE_EQ(median(std::vector<double>{3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{}), 0);
}

TEST(Stats, UpperMedianIsAlwaysASample) {
  EXPECT_DOUBLE_EQ(upper_median(std::vector<double>{3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(upper_median(std::vector<double>{4, 1, 3, 2}), 3);
  EXPECT_DOUBLE_EQ(upper_median(std::vector<double>{7}), 7);
  EXPECT_DOUBLE_EQ(upper_median(std::vector<double>{}), 0);
}

TEST(Stats, NearestRankPercentile) {
  const std::vector<double> v{5, 1, 4, 2, 3, 10, 9, 8, 7, 6};
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 5);
  EXPECT_DOUBLE_EQ(percentile(v, 0.99), 10);
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(percentile(std::vector<double>{}, 0.5), 0);
}

TEST(Stats, LineFitRecoversAnExactLine) {
  std::vector<std::pair<double, double>> pts;
  for (double x = 1e6; x < 1e6 + 10; x += 1) pts.emplace_back(x, 3 + 0.5 * x);  // large x: centred sums
  const LineFit f = fit_line(pts);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.slope, 0.5, 1e-9);
  EXPECT_NEAR(f.intercept, 3, 1e-3);
  EXPECT_NEAR(f.r_squared, 1, 1e-12);
}

TEST(Stats, LineFitNeedsTwoDistinctX) {
  EXPECT_FALSE(fit_line(std::vector<std::pair<double, double>>{{1, 2}}).ok);
  EXPECT_FALSE(fit_line(std::vector<std::pair<double, double>>{{1, 2}, {1, 3}}).ok);
}

TEST(Stats, JainIndex) {
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{2, 2, 2, 2}), 1);
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{1, 0, 0, 0}), 0.25);  // 1/n: one gets everything
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{1, 3}), 16.0 / 20.0);
  EXPECT_DOUBLE_EQ(jain_index(std::vector<double>{}), 1);
}

}  // namespace
}  // namespace tandem
