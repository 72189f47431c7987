#include <gtest/gtest.h>

#include "funcs/ref/matmul_ref.hpp"
#include "rtl_test_util.hpp"

namespace tandem::testing {
namespace {

namespace ref = tandem::funcs::ref;

struct Case {
  uint32_t m, k, n;
  std::vector<int16_t> a, b;
};

Case random_case(TestRng& rng, uint32_t m, uint32_t k, uint32_t n) {
  Case c{m, k, n, std::vector<int16_t>(size_t{m} * k), std::vector<int16_t>(size_t{k} * n)};
  for (auto& x : c.a) x = static_cast<int16_t>(rng.next());
  for (auto& x : c.b) x = static_cast<int16_t>(rng.next());
  return c;
}

void expect_matches(rtl::RtlAccelerator& slot, const Case& c) {
  std::vector<int32_t> want(size_t{c.m} * c.n), got(size_t{c.m} * c.n);
  ASSERT_EQ(ref::matmul(c.a, c.b, want, c.m, c.k, c.n), Status::ok);
  auto job = rtl::matmul_job(c.a, c.b, c.m, c.k, c.n);
  ASSERT_TRUE(job.ok()) << job.message();
  const auto r = slot.run(job.value());
  ASSERT_EQ(r.status, Status::ok) << r.message << " (" << c.m << "x" << c.k << "x" << c.n << ")";
  EXPECT_EQ(r.value, rtl::kRetOk);
  ASSERT_EQ(rtl::matmul_unpack(r, c.m, c.n, got), Status::ok);
  EXPECT_EQ(got, want) << c.m << "x" << c.k << "x" << c.n;
}

TEST(MatmulReference, WrapsModulo2To32) {
  // 100 products of (-32768)^2 = 2^30 sum to 100 * 2^30 = 2^32 * 25: zero modulo 2^32.
  std::vector<int16_t> a(100, -32768), b(100, -32768);
  std::vector<int32_t> c(1);
  ASSERT_EQ(ref::matmul(a, b, c, 1, 100, 1), Status::ok);
  EXPECT_EQ(c[0], 0);
  std::vector<int16_t> a3(3, -32768), b3(3, -32768);
  ASSERT_EQ(ref::matmul(a3, b3, c, 1, 3, 1), Status::ok);
  EXPECT_EQ(c[0], -1073741824);  // 3 * 2^30 - 2^32
}

TEST(RtlMatmul, SmallShapes) {
  auto slot = make_slot(rtl::RtlFunction::matmul);
  ASSERT_NE(slot, nullptr);
  TestRng rng(41);
  const uint32_t shapes[][3] = {{1, 1, 1}, {1, 1, 5}, {5, 1, 1},  {1, 7, 1},  {2, 3, 4},
                                {4, 4, 4}, {3, 5, 7}, {8, 9, 10}, {13, 2, 6}, {1, 100, 1}};
  for (const auto& s : shapes) expect_matches(*slot, random_case(rng, s[0], s[1], s[2]));
}

TEST(RtlMatmul, RandomShapesMatchReference) {
  auto slot = make_slot(rtl::RtlFunction::matmul);
  ASSERT_NE(slot, nullptr);
  TestRng rng(42);
  for (int job = 0; job < 30; ++job) {
    expect_matches(*slot,
                   random_case(rng, 1 + rng.below(24), 1 + rng.below(24), 1 + rng.below(24)));
  }
}

TEST(RtlMatmul, ExtremeValuesWrap) {
  auto slot = make_slot(rtl::RtlFunction::matmul);
  ASSERT_NE(slot, nullptr);
  for (int16_t va : {int16_t{-32768}, int16_t{32767}}) {
    for (int16_t vb : {int16_t{-32768}, int16_t{32767}}) {
      Case c{5, 100, 6, std::vector<int16_t>(500, va), std::vector<int16_t>(600, vb)};
      expect_matches(*slot, c);
    }
  }
}

TEST(RtlMatmul, MaximumSize) {
  auto slot = make_slot(rtl::RtlFunction::matmul);
  ASSERT_NE(slot, nullptr);
  TestRng rng(43);
  expect_matches(*slot, random_case(rng, 100, 100, 100));
}

TEST(RtlMatmul, EmptyAndDegenerate) {
  auto slot = make_slot(rtl::RtlFunction::matmul);
  ASSERT_NE(slot, nullptr);
  TestRng rng(44);
  expect_matches(*slot, random_case(rng, 0, 5, 5));  // no rows: nothing in or out
  expect_matches(*slot, random_case(rng, 5, 5, 0));  // no columns
  expect_matches(*slot, random_case(rng, 0, 0, 0));
  expect_matches(*slot, random_case(rng, 3, 0, 5));  // inner dimension 0: C is all zero
  for (auto args : {std::vector<uint32_t>{101, 1, 1}, std::vector<uint32_t>{1, 101, 1},
                    std::vector<uint32_t>{1, 1, 101}, std::vector<uint32_t>{1u << 31, 1, 1}}) {
    const auto r = slot->run(rtl::RtlJob{.args = args, .input = {}, .output_bytes = 0});
    EXPECT_EQ(r.status, Status::ok) << r.message;
    EXPECT_EQ(r.value, rtl::kRetBadArguments);
  }
  expect_matches(*slot, random_case(rng, 3, 4, 5));  // still works
}

TEST(RtlMatmul, BackPressure) {
  auto slot = make_slot(rtl::RtlFunction::matmul, stalling_options(45));
  ASSERT_NE(slot, nullptr);
  TestRng rng(46);
  for (int job = 0; job < 15; ++job) {
    // Small k makes the output side the bottleneck, where stalls matter most.
    expect_matches(*slot, random_case(rng, 1 + rng.below(9), 1 + rng.below(3), 1 + rng.below(17)));
  }
}

}  // namespace
}  // namespace tandem::testing
