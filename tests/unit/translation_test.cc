// Address translation: regions per ASID, faults for anything outside, the unified TLB.
#include <gtest/gtest.h>

#include "engine/translation.hpp"

namespace tandem::engine {
namespace {

TEST(Translation, RangesMustLieInsideOneRegionOfTheSession) {
  Translator t;
  ASSERT_TRUE(t.add_region(1, 0x10000, 0x4000, 0x900000, true).ok());
  ASSERT_TRUE(t.add_region(1, 0x14000, 0x1000, 0xa00000, false).ok());  // adjacent, mapped elsewhere
  EXPECT_EQ(t.translate(1, 0x10010, 16, false), 0x900010u);
  EXPECT_EQ(t.translate(1, 0x13ff0, 16, true), 0x903ff0u) << "last bytes of the region";
  EXPECT_EQ(t.translate(1, 0x13ff0, 17, false), 0u) << "runs into the next region: not contiguous for the daemon";
  EXPECT_EQ(t.translate(1, 0x14000, 8, false), 0xa00000u);
  EXPECT_EQ(t.translate(1, 0x14000, 8, true), 0u) << "read-only region";
  EXPECT_EQ(t.translate(2, 0x10010, 16, false), 0u) << "another ASID has no such region";
  EXPECT_EQ(t.translate(1, 0xfff0, 32, false), 0u);
  EXPECT_EQ(t.translate(1, 0, 0, false), 0u);
  EXPECT_EQ(t.translate(1, ~uint64_t{0} - 4, 16, false), 0u) << "wrapping range";
  EXPECT_EQ(t.stats().faults, 6u);
}

// Two regions that start and end inside one page: a TLB entry filled for one must not translate an
// address of the same page outside it (before it, between the two, past the second's end).
TEST(Translation, ACachedPageTranslatesOnlyInsideItsRegion) {
  Translator t;
  ASSERT_TRUE(t.add_region(1, 0x20100, 0x100, 0x900000, true).ok());
  ASSERT_TRUE(t.add_region(1, 0x20300, 0x80, 0xa00000, true).ok());
  EXPECT_EQ(t.translate(1, 0x20100, 8, false), 0x900000u);  // fills the page's entry
  EXPECT_EQ(t.translate(1, 0x20000, 8, false), 0u) << "same page, before the region";
  EXPECT_EQ(t.translate(1, 0x200f8, 16, false), 0u) << "starts before the region";
  EXPECT_EQ(t.translate(1, 0x20280, 8, false), 0u) << "between the two regions";
  EXPECT_EQ(t.translate(1, 0x20300, 8, false), 0xa00000u);
  EXPECT_EQ(t.translate(1, 0x20380, 8, false), 0u) << "same page, past the second region";
  EXPECT_EQ(t.translate(1, 0x20110, 8, true), 0x900010u) << "the first region again";
  EXPECT_EQ(t.stats().faults, 4u);
}

TEST(Translation, OverlapsAndBadRegionsAreRefused) {
  Translator t;
  ASSERT_TRUE(t.add_region(1, 0x10000, 0x4000, 0x900000, true).ok());
  EXPECT_EQ(t.add_region(1, 0x13000, 0x2000, 0x1, true).status(), Status::invalid_argument);
  EXPECT_EQ(t.add_region(1, 0xf000, 0x2000, 0x1, true).status(), Status::invalid_argument);
  EXPECT_EQ(t.add_region(1, 0x11000, 0x1000, 0x1, true).status(), Status::invalid_argument) << "inside";
  EXPECT_EQ(t.add_region(1, 0x20000, 0, 0x1, true).status(), Status::invalid_argument) << "empty";
  EXPECT_TRUE(t.add_region(2, 0x10000, 0x4000, 0x800000, true).ok()) << "the same range in another ASID";
  EXPECT_EQ(t.registered_bytes(1), 0x4000u);
}

TEST(Translation, RemovalAndDropTakeEffectAtOnceDespiteTheTlb) {
  Translator t;
  auto id = t.add_region(3, 0x40000, 0x1000, 0x700000, true);
  ASSERT_TRUE(id.ok());
  EXPECT_NE(t.translate(3, 0x40000, 8, false), 0u);
  EXPECT_NE(t.translate(3, 0x40000, 8, false), 0u);
  EXPECT_EQ(t.stats().hits, 1u);
  ASSERT_TRUE(t.remove_region(3, id.value()));
  EXPECT_EQ(t.translate(3, 0x40000, 8, false), 0u) << "stale TLB entries must not translate";
  EXPECT_FALSE(t.remove_region(3, id.value()));
  ASSERT_TRUE(t.add_region(3, 0x40000, 0x1000, 0x600000, true).ok());
  EXPECT_EQ(t.translate(3, 0x40000, 8, false), 0x600000u) << "the new mapping, not the cached old one";
  t.drop(3);
  EXPECT_EQ(t.translate(3, 0x40000, 8, false), 0u);
}

TEST(Translation, PowerOfTwoStridedBuffersDoNotThrashTheTlb) {
  Translator t(64);
  ASSERT_TRUE(t.add_region(0, 0x100000, 64 << 20, 0x10000000, true).ok());
  for (int round = 0; round < 10; ++round) {
    for (uint64_t b = 0; b < 32; ++b) t.translate(0, 0x100000 + b * (256 << 10), 64, false);  // 256 KiB apart
  }
  EXPECT_GE(t.stats().hits, 9u * 32u * 9 / 10) << "32 hot pages fit a 64-entry TLB";
}

}  // namespace
}  // namespace tandem::engine
