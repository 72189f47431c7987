// Differential tests of the high-level calls on the embedded runtime (tests/random_calls.hpp): random
// calls of every data function, in every mode, with every access method, each byte checked against
// the software reference.
#include <gtest/gtest.h>

#include "random_calls.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

constexpr const char* kKernels =
    "[device.emu]\nslots = 6\nresident = [\"accumulate\", \"sobel\", \"matmul\", \"dct_quant\", \"priority_queue\"]\n";

TEST(RandomCalls, EveryModeAndMethodGivesTheReferenceOnTheEmbeddedRuntime) {
  auto rt = testing::open_embedded(kKernels);
  ASSERT_TRUE(rt);
  std::string report;
  int accelerated = 0;
  EXPECT_EQ(testing::run_random_calls(*rt, 1511, 400, {}, {.device_local = true, .priority_queue = true}, report, &accelerated), 0) << report;
  EXPECT_GT(accelerated, 100) << "most calls in hw, alpha and auto modes reach the fabric";
}

}  // namespace
}  // namespace tandem
