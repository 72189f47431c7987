#include <gtest/gtest.h>

#include "devices/rtl/reconfig_model.hpp"

namespace tandem::testing {
namespace {

namespace rtl = tandem::devices::rtl;

TEST(ReconfigModel, ColumnsFramesAndBytes) {
  // 3000 LUTs at 75 % of 400 per column: 10 CLB columns; 4 RAMB36: one BRAM column; 3 DSPs: one.
  const rtl::SlotResources slot{.luts = 3000, .flip_flops = 1000, .bram36 = 4, .dsps = 3};
  const auto b = rtl::estimate_partial_bitstream(slot);
  EXPECT_EQ(b.clb_columns, 10u);
  EXPECT_EQ(b.bram_columns, 1u);
  EXPECT_EQ(b.dsp_columns, 1u);
  // 10*36 + 28 + 28 + 1 pad, plus 128 BRAM content frames + 1 pad.
  EXPECT_EQ(b.frames, 10u * 36 + 28 + 28 + 1 + 128 + 1);
  EXPECT_EQ(b.bytes, b.frames * 101 * 4 + 512);
}

TEST(ReconfigModel, FlipFlopsCanDecideTheColumns) {
  const rtl::SlotResources slot{.luts = 100, .flip_flops = 6001, .bram36 = 0, .dsps = 0};
  const auto b = rtl::estimate_partial_bitstream(slot);
  EXPECT_EQ(b.clb_columns, 11u);  // 6001 / (800 * 0.75) = 10.002
  EXPECT_EQ(b.bram_columns, 0u);
  EXPECT_EQ(b.frames, 11u * 36 + 1);
}

TEST(ReconfigModel, TallerSlotsNeedFewerColumnsPerRow) {
  const rtl::SlotResources slot{.luts = 6000, .flip_flops = 0, .bram36 = 15, .dsps = 30};
  const auto one = rtl::estimate_partial_bitstream(slot, 1);
  const auto two = rtl::estimate_partial_bitstream(slot, 2);
  EXPECT_EQ(one.clb_columns, 20u);
  EXPECT_EQ(two.clb_columns, 10u);
  EXPECT_EQ(one.bram_columns, 2u);
  EXPECT_EQ(two.bram_columns, 1u);
  EXPECT_EQ(one.dsp_columns, 2u);
  EXPECT_EQ(two.dsp_columns, 1u);
  EXPECT_EQ(two.frames, 2u * (10 * 36 + 28 + 28 + 1 + 128 + 1));
}

TEST(ReconfigModel, EmptySlotAndNoBramContent) {
  EXPECT_EQ(rtl::estimate_partial_bitstream({}).frames, 0u);
  EXPECT_EQ(rtl::estimate_partial_bitstream({}).bytes, 512u);
  rtl::FabricGeometry g;
  g.include_bram_content = false;
  const auto b =
      rtl::estimate_partial_bitstream({.luts = 0, .flip_flops = 0, .bram36 = 1, .dsps = 0}, 1, g);
  EXPECT_EQ(b.frames, 28u + 1);
}

TEST(ReconfigModel, DelayFromBytesThroughTheConfigurationPort) {
  // 400 000 bytes at 4 bytes per cycle and 100 MHz: 1 ms.
  EXPECT_DOUBLE_EQ(rtl::reconfiguration_delay_s(400'000), 1e-3);
  EXPECT_DOUBLE_EQ(rtl::reconfiguration_delay_s(6), 2 / 100e6);  // partial words round up
  const rtl::ConfigPort slow{.bytes_per_cycle = 1, .clock_hz = 50e6, .setup_s = 1e-4};
  EXPECT_DOUBLE_EQ(rtl::reconfiguration_delay_s(50'000, slow), 1e-4 + 1e-3);
  EXPECT_EQ(rtl::reconfiguration_delay_s(100, rtl::ConfigPort{.bytes_per_cycle = 0}), 0.0);
  const rtl::SlotResources slot{.luts = 3000, .flip_flops = 1000, .bram36 = 4, .dsps = 3};
  const auto bytes = rtl::estimate_partial_bitstream(slot).bytes;
  EXPECT_DOUBLE_EQ(rtl::reconfiguration_delay_s(slot), rtl::reconfiguration_delay_s(bytes));
}

}  // namespace
}  // namespace tandem::testing
