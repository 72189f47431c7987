#include <gtest/gtest.h>

#include <limits>

#include "funcs/ref/accumulate_ref.hpp"
#include "rtl_test_util.hpp"

namespace tandem::testing {
namespace {

namespace ref = tandem::funcs::ref;

rtl::RtlResult run_accumulate(rtl::RtlAccelerator& slot, const std::vector<int32_t>& v) {
  rtl::RtlResult r = slot.run(rtl::accumulate_job(v));
  EXPECT_EQ(r.status, Status::ok) << r.message;
  return r;
}

TEST(RtlAccumulate, EdgeCases) {
  auto slot = make_slot(rtl::RtlFunction::accumulate);
  ASSERT_NE(slot, nullptr);
  const int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  const std::vector<std::vector<int32_t>> cases = {{},
                                                   {-5},
                                                   {7, -9},
                                                   {1, 2, 3},
                                                   {lo},
                                                   {hi},
                                                   {lo, lo, lo},
                                                   {hi, hi, hi, hi, hi},
                                                   std::vector<int32_t>(1001, lo),
                                                   std::vector<int32_t>(1000, hi),
                                                   {lo, hi, -1, 1}};
  for (const auto& v : cases) {
    const auto r = run_accumulate(*slot, v);
    EXPECT_EQ(rtl::accumulate_sum(r), ref::accumulate(v)) << "size " << v.size();
    EXPECT_TRUE(r.output.empty());
  }
}

TEST(RtlAccumulate, RandomMatchesReference) {
  auto slot = make_slot(rtl::RtlFunction::accumulate);
  ASSERT_NE(slot, nullptr);
  TestRng rng(11);
  for (int job = 0; job < 60; ++job) {
    std::vector<int32_t> v(rng.below(3000));
    for (auto& x : v) x = static_cast<int32_t>(rng.next());
    EXPECT_EQ(rtl::accumulate_sum(run_accumulate(*slot, v)), ref::accumulate(v)) << "job " << job;
  }
}

TEST(RtlAccumulate, BackPressureDoesNotChangeTheSum) {
  auto slot = make_slot(rtl::RtlFunction::accumulate, stalling_options());
  ASSERT_NE(slot, nullptr);
  TestRng rng(12);
  for (int job = 0; job < 20; ++job) {
    std::vector<int32_t> v(rng.below(500));
    for (auto& x : v) x = static_cast<int32_t>(rng.next());
    EXPECT_EQ(rtl::accumulate_sum(run_accumulate(*slot, v)), ref::accumulate(v));
  }
}

TEST(RtlAccumulate, TwoValuesPerCycle) {
  // The datapath takes one 64-bit beat (two int32) per cycle: cycles grow by exactly one per two
  // values once the pipeline is full.
  auto slot = make_slot(rtl::RtlFunction::accumulate);
  ASSERT_NE(slot, nullptr);
  const uint64_t c0 = run_accumulate(*slot, std::vector<int32_t>(1000, 3)).cycles;
  const uint64_t c1 = run_accumulate(*slot, std::vector<int32_t>(2000, 3)).cycles;
  const uint64_t c2 = run_accumulate(*slot, std::vector<int32_t>(2001, 3)).cycles;
  EXPECT_EQ(c1 - c0, 500u);
  EXPECT_EQ(c2 - c1, 1u);
}

}  // namespace
}  // namespace tandem::testing
