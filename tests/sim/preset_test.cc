// The thesis presets are scenario files (configs/thesis): loaded from there, every --quick figure and
// the policy comparison give the same bytes as the hard-coded presets they replaced. The golden files
// in tests/sim/golden are those presets' `tandem experiment thesis --figure N --quick` and
// `compare-policies --quick` outputs, captured before the presets moved to files.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sim/experiment.hpp"

namespace tandem::sim {
namespace {

std::string golden(const std::string& name) {
  std::ifstream in(std::string(TANDEM_GOLDEN_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunOptions quick_options() {  // what --quick runs: 2 seeds, 1 repetition, base seed 1
  RunOptions o;
  o.seeds = 2;
  o.reps = 1;
  o.threads = 2;
  o.base_seed = 1;
  return o;
}

class ThesisPreset : public ::testing::TestWithParam<std::string> {};

TEST_P(ThesisPreset, QuickFigureFromItsFileIsByteIdentical) {
  const std::string id = GetParam();
  EXPECT_EQ(figure_csv(run_figure(thesis_figure(id, true), quick_options())), golden("fig-" + id + ".csv"));
}

INSTANTIATE_TEST_SUITE_P(Figures, ThesisPreset, ::testing::ValuesIn(thesis_figure_ids()),
                         [](const auto& param_info) {
                           std::string n = "fig_" + param_info.param;
                           for (char& c : n) c = c == '.' ? '_' : c;
                           return n;
                         });

TEST(ThesisPreset, ComparePoliciesQuickIsByteIdentical) {
  std::string csv;
  for (const char* policy : {"algorithm1", "sticky", "reactive"}) {
    const std::string part = figure_csv(run_figure(policy_figure(policy, true), quick_options()));
    csv += csv.empty() ? part : part.substr(part.find('\n') + 1);
  }
  EXPECT_EQ(csv, golden("policies.csv"));
}

}  // namespace
}  // namespace tandem::sim
