#include <gtest/gtest.h>

#include <algorithm>

#include "funcs/ref/sobel_ref.hpp"
#include "rtl_test_util.hpp"

namespace tandem::testing {
namespace {

namespace ref = tandem::funcs::ref;

std::vector<uint8_t> reference(const std::vector<uint8_t>& px, uint32_t w, uint32_t h) {
  std::vector<uint8_t> out(px.size());
  EXPECT_EQ(ref::sobel(px, out, w, h), Status::ok);
  return out;
}

// Runs the image through the slot and returns the result image.
std::vector<uint8_t> run_sobel(rtl::RtlAccelerator& slot, const std::vector<uint8_t>& px,
                               uint32_t w, uint32_t h, uint64_t* cycles = nullptr) {
  const uint32_t lanes = slot.ports().in_beat_bytes;
  auto job = rtl::sobel_job(px, w, h, lanes);
  EXPECT_TRUE(job.ok()) << job.message();
  const rtl::RtlResult r = slot.run(job.value());
  EXPECT_EQ(r.status, Status::ok) << r.message << " (" << w << "x" << h << ")";
  EXPECT_EQ(r.value, rtl::kRetOk);
  std::vector<uint8_t> out(px.size());
  EXPECT_EQ(rtl::sobel_unpack(r, w, h, lanes, out), Status::ok);
  if (cycles != nullptr) *cycles = r.cycles;
  return out;
}

std::vector<uint8_t> random_image(TestRng& rng, uint32_t w, uint32_t h) {
  std::vector<uint8_t> px(size_t{w} * h);
  for (auto& p : px) p = rng.byte();
  return px;
}

TEST(SobelReference, HandComputedValues) {
  // A horizontal ramp 10, 20, 30 has Gx = (30 + 2*30 + 30) - (10 + 2*10 + 10) = 80, Gy = 0.
  const std::vector<uint8_t> ramp = {10, 20, 30, 10, 20, 30, 10, 20, 30};
  EXPECT_EQ(reference(ramp, 3, 3), (std::vector<uint8_t>{0, 0, 0, 0, 80, 0, 0, 0, 0}));
  // A vertical step from 0 to 255: |Gx| = 1020, saturated; a diagonal one: |Gx| + |Gy| = 510 + 510.
  const std::vector<uint8_t> step = {0, 0, 255, 0, 0, 255, 0, 0, 255};
  EXPECT_EQ(reference(step, 3, 3)[4], 255);
  const std::vector<uint8_t> diag = {0, 0, 0, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(reference(diag, 3, 3)[4], 2);  // Gx = 1, Gy = 1
}

TEST(RtlSobel, SmallAndOddSizes) {
  auto slot = make_slot(rtl::RtlFunction::sobel);
  ASSERT_NE(slot, nullptr);
  TestRng rng(21);
  const std::pair<uint32_t, uint32_t> sizes[] = {{1, 1},  {1, 9},  {9, 1},    {2, 2},  {3, 3},
                                                 {16, 3}, {17, 4}, {15, 15},  {31, 7}, {32, 32},
                                                 {33, 5}, {48, 2}, {100, 50}, {255, 3}};
  for (auto [w, h] : sizes) {
    const auto px = random_image(rng, w, h);
    EXPECT_EQ(run_sobel(*slot, px, w, h), reference(px, w, h)) << w << "x" << h;
  }
}

TEST(RtlSobel, RandomSizesMatchReference) {
  auto slot = make_slot(rtl::RtlFunction::sobel);
  ASSERT_NE(slot, nullptr);
  TestRng rng(22);
  for (int job = 0; job < 40; ++job) {
    const uint32_t w = 1 + rng.below(200), h = 1 + rng.below(40);
    const auto px = random_image(rng, w, h);
    EXPECT_EQ(run_sobel(*slot, px, w, h), reference(px, w, h)) << w << "x" << h;
  }
}

TEST(RtlSobel, SaturatingPixels) {
  auto slot = make_slot(rtl::RtlFunction::sobel);
  ASSERT_NE(slot, nullptr);
  const uint32_t w = 70, h = 20;
  std::vector<uint8_t> px(size_t{w} * h);
  for (uint32_t r = 0; r < h; ++r) {
    for (uint32_t c = 0; c < w; ++c) px[r * w + c] = ((r / 2 + c / 3) % 2) ? 255 : 0;
  }
  const auto out = run_sobel(*slot, px, w, h);
  EXPECT_EQ(out, reference(px, w, h));
  EXPECT_GT(std::count(out.begin(), out.end(), uint8_t{255}), 100);
}

TEST(RtlSobel, MaximumImage) {
  auto slot = make_slot(rtl::RtlFunction::sobel);
  ASSERT_NE(slot, nullptr);
  TestRng rng(23);
  const uint32_t w = rtl::kSobelMaxWidth, h = 1080;
  const auto px = random_image(rng, w, h);
  uint64_t cycles = 0;
  EXPECT_EQ(run_sobel(*slot, px, w, h, &cycles), reference(px, w, h));
  // (height + 1) rows of (beats + 1) steps, plus a few cycles of pipeline.
  const uint64_t steps = uint64_t{h + 1} * (w / rtl::kSobelLanes + 1);
  EXPECT_GE(cycles, steps);
  EXPECT_LE(cycles, steps + 8);
}

TEST(RtlSobel, EmptyAndTooWide) {
  auto slot = make_slot(rtl::RtlFunction::sobel);
  ASSERT_NE(slot, nullptr);
  for (auto args : {std::vector<uint32_t>{0, 10}, std::vector<uint32_t>{10, 0}}) {
    const auto r = slot->run(rtl::RtlJob{.args = args, .input = {}, .output_bytes = 0});
    EXPECT_EQ(r.status, Status::ok) << r.message;
    EXPECT_EQ(r.value, rtl::kRetOk);
  }
  for (auto args : {std::vector<uint32_t>{rtl::kSobelMaxWidth + 1, 4},
                    std::vector<uint32_t>{8, rtl::kSobelMaxHeight + 1}}) {
    const auto r = slot->run(rtl::RtlJob{.args = args, .input = {}, .output_bytes = 0});
    EXPECT_EQ(r.status, Status::ok) << r.message;
    EXPECT_EQ(r.value, rtl::kRetBadArguments);
  }
  // The slot still works afterwards.
  TestRng rng(24);
  const auto px = random_image(rng, 20, 6);
  EXPECT_EQ(run_sobel(*slot, px, 20, 6), reference(px, 20, 6));
}

TEST(RtlSobel, LaneCountIsAParameter) {
  // The 3-lane build (maximum width 40) checks lane boundaries at other positions.
  rtl::RtlOptions o;
  o.sobel_small_variant = true;
  auto slot = make_slot(rtl::RtlFunction::sobel, o);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slot->ports().in_beat_bytes, 3u);
  TestRng rng(25);
  for (int job = 0; job < 30; ++job) {
    const uint32_t w = 1 + rng.below(40), h = 1 + rng.below(12);
    const auto px = random_image(rng, w, h);
    EXPECT_EQ(run_sobel(*slot, px, w, h), reference(px, w, h)) << w << "x" << h;
  }
  const auto r = slot->run(rtl::RtlJob{.args = {41, 2}, .input = {}, .output_bytes = 0});
  EXPECT_EQ(r.status, Status::ok) << r.message;
  EXPECT_EQ(r.value, rtl::kRetBadArguments);
}

TEST(RtlSobel, BackPressure) {
  for (bool small : {false, true}) {
    rtl::RtlOptions o = stalling_options(31);
    o.sobel_small_variant = small;
    auto slot = make_slot(rtl::RtlFunction::sobel, o);
    ASSERT_NE(slot, nullptr);
    TestRng rng(26);
    for (int job = 0; job < 10; ++job) {
      const uint32_t w = 1 + rng.below(40), h = 1 + rng.below(10);
      const auto px = random_image(rng, w, h);
      EXPECT_EQ(run_sobel(*slot, px, w, h), reference(px, w, h)) << w << "x" << h;
    }
  }
}

}  // namespace
}  // namespace tandem::testing
