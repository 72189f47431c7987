// Cycle counts are deterministic, and the calibration derives X_a and D_a from them.
#include <gtest/gtest.h>

#include <thread>

#include "devices/rtl/calibrate.hpp"
#include "devices/rtl/rtl_catalog.hpp"
#include "rtl_test_util.hpp"

namespace tandem::testing {
namespace {

rtl::RtlJob sample_job(rtl::RtlFunction f, TestRng& rng) {
  switch (f) {
    case rtl::RtlFunction::accumulate: {
      std::vector<int32_t> v(777);
      for (auto& x : v) x = static_cast<int32_t>(rng.next());
      return rtl::accumulate_job(v);
    }
    case rtl::RtlFunction::sobel: {
      std::vector<uint8_t> px(123 * 45);
      for (auto& p : px) p = rng.byte();
      return rtl::sobel_job(px, 123, 45, rtl::kSobelLanes).value();
    }
    case rtl::RtlFunction::matmul: {
      std::vector<int16_t> a(17 * 23), b(23 * 9);
      for (auto& x : a) x = static_cast<int16_t>(rng.next());
      for (auto& x : b) x = static_cast<int16_t>(rng.next());
      return rtl::matmul_job(a, b, 17, 23, 9).value();
    }
    case rtl::RtlFunction::dct_quant: {
      std::vector<rtl::SampleBlock8x8> blocks(37);
      for (auto& blk : blocks) {
        for (auto& s : blk) s = rng.byte();
      }
      rtl::QuantValues t{};
      for (auto& q : t) q = static_cast<uint16_t>(1 + rng.below(255));
      return rtl::dct_quantize_job(blocks, t);
    }
    case rtl::RtlFunction::priority_queue: {
      std::vector<uint64_t> cmds;
      for (int i = 0; i < 300; ++i) {
        cmds.push_back(i % 3 == 2
                           ? rtl::pq_command_word(2, 0, 0, false, true)
                           : rtl::pq_command_word(1, rng.below(1000), rng.byte(), i % 2, false));
      }
      return rtl::pq_job(cmds, true);
    }
    case rtl::RtlFunction::list_walk:
      break;  // not a stream accelerator (kAllRtlFunctions): test_rtl_list_walk covers its cycles
  }
  return {};
}

class RtlTiming : public ::testing::TestWithParam<rtl::RtlFunction> {};

TEST_P(RtlTiming, CycleCountsAreStable) {
  TestRng rng(71);
  const rtl::RtlJob job = sample_job(GetParam(), rng);
  for (const rtl::RtlOptions& options : {rtl::RtlOptions{}, stalling_options(72)}) {
    auto a = make_slot(GetParam(), options);
    auto b = make_slot(GetParam(), options);
    ASSERT_TRUE(a && b);
    const auto first = a->run(job);
    const auto again = a->run(job);  // same slot, second time
    const auto other = b->run(job);  // another slot
    ASSERT_EQ(first.status, Status::ok) << first.message;
    EXPECT_GT(first.cycles, 0u);
    EXPECT_EQ(again.cycles, first.cycles);
    EXPECT_EQ(other.cycles, first.cycles);
    EXPECT_EQ(again.total_cycles, first.total_cycles);
    EXPECT_EQ(again.output, first.output);
    EXPECT_DOUBLE_EQ(first.seconds, static_cast<double>(first.total_cycles) / options.clock_hz);
  }
}

TEST_P(RtlTiming, CalibrationFitsTheMeasurements) {
  const rtl::RtlFunction f = GetParam();
  const rtl::RtlOptions options;  // 200 MHz: the numbers printed below are docs/rtl.md's
  auto cal = rtl::calibrate(f, options);
  ASSERT_TRUE(cal.ok()) << cal.message();
  const rtl::Calibration& c = cal.value();
  EXPECT_EQ(c.points.size(), rtl::default_calibration_sizes(f).size());
  EXPECT_GT(c.throughput_units_per_s, 0);
  EXPECT_GT(c.latency_s, 0);
  EXPECT_GT(c.fit.r_squared, 0.999);
  // The fit predicts the largest job within 2 %.
  const auto& big = c.points.back();
  const double predicted =
      c.fit.fixed_cycles + c.fit.cycles_per_unit * static_cast<double>(big.units);
  EXPECT_NEAR(predicted / static_cast<double>(big.total_cycles), 1.0, 0.02);
  // Throughput scales with the clock.
  EXPECT_NEAR(c.throughput_units_per_s, options.clock_hz / c.fit.cycles_per_unit, 1e-6);
  // The RTL catalog's nominal fit (rtl_catalog.cc, what the rtl device tells the engine) is this one.
  const rtl::RtlCatalogEntry* entry = rtl::find_rtl_entry(rtl::to_string(f));
  ASSERT_NE(entry, nullptr);
  EXPECT_NEAR(c.fit.cycles_per_unit / entry->cycles_per_unit, 1.0, 1e-3);
  EXPECT_NEAR(c.fit.fixed_cycles, entry->fixed_cycles, 0.01 * entry->fixed_cycles + 1);
  std::printf("%-15s %.6g cycles/%s + %.6g cycles: ", std::string(rtl::to_string(f)).c_str(),
              c.fit.cycles_per_unit, std::string(c.unit).c_str(), c.fit.fixed_cycles);
  std::printf("%-15s X_a = %.4g %s/s, D_a = %.4g us (r2 %.6f) at %.0f MHz\n",
              std::string(rtl::to_string(f)).c_str(), c.throughput_units_per_s,
              std::string(c.unit).c_str(), c.latency_s * 1e6, c.fit.r_squared,
              options.clock_hz / 1e6);
}

INSTANTIATE_TEST_SUITE_P(AllAccelerators, RtlTiming, ::testing::ValuesIn(rtl::kAllRtlFunctions),
                         [](const auto& param_info) {
                           return std::string(rtl::to_string(param_info.param));
                         });

TEST(RtlCalibrationFit, RecoversAnExactLine) {
  std::vector<rtl::CalibrationPoint> pts;
  for (uint64_t u : {10u, 100u, 1000u, 5000u}) pts.push_back({u, 0, 40 + 3 * u});
  auto c = rtl::derive_calibration(rtl::RtlFunction::accumulate, 100e6, pts);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_NEAR(c->fit.fixed_cycles, 40, 1e-6);
  EXPECT_NEAR(c->fit.cycles_per_unit, 3, 1e-9);
  EXPECT_NEAR(c->fit.r_squared, 1, 1e-12);
  EXPECT_NEAR(c->throughput_units_per_s, 100e6 / 3, 1e-3);
  EXPECT_NEAR(c->latency_s, 40 / 100e6, 1e-15);
}

TEST(RtlCalibrationFit, RefusesDegenerateInput) {
  std::vector<rtl::CalibrationPoint> one = {{10, 0, 20}};
  EXPECT_EQ(rtl::fit_cycles(one).status(), Status::invalid_argument);
  std::vector<rtl::CalibrationPoint> same = {{10, 0, 20}, {10, 0, 22}};
  EXPECT_EQ(rtl::fit_cycles(same).status(), Status::invalid_argument);
}

TEST(RtlAccelerator, RefusesBadOptionsAndJobs) {
  rtl::RtlOptions o;
  o.clock_hz = 0;
  EXPECT_EQ(rtl::make_rtl_accelerator(rtl::RtlFunction::sobel, o).status(),
            Status::invalid_argument);
  o = {};
  o.sobel_small_variant = true;
  EXPECT_EQ(rtl::make_rtl_accelerator(rtl::RtlFunction::matmul, o).status(),
            Status::invalid_argument);
  auto slot = make_slot(rtl::RtlFunction::accumulate);
  ASSERT_NE(slot, nullptr);
  const auto r = slot->run(rtl::RtlJob{.args = {1, 2}, .input = {}, .output_bytes = 0});
  EXPECT_EQ(r.status, Status::invalid_argument);
}

TEST(RtlAccelerator, DetectsTrafficMismatchAndTimeout) {
  auto slot = make_slot(rtl::RtlFunction::accumulate);
  ASSERT_NE(slot, nullptr);
  // Announces 4 values but streams 8 bytes (2 values): the accelerator waits forever.
  rtl::RtlOptions o;
  o.max_cycles = 1000;
  auto short_slot = make_slot(rtl::RtlFunction::accumulate, o);
  ASSERT_NE(short_slot, nullptr);
  const auto starved = short_slot->run(
      rtl::RtlJob{.args = {4}, .input = std::vector<uint8_t>(8), .output_bytes = 0});
  EXPECT_EQ(starved.status, Status::timeout);
  // And the slot is usable afterwards.
  const auto fine = short_slot->run(rtl::accumulate_job(std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(fine.status, Status::ok) << fine.message;
  EXPECT_EQ(fine.value, 6u);
  // Announces 1 value but streams 5 beats: the input skid buffer takes two surplus beats, the
  // remaining ones are never taken.
  const auto extra =
      slot->run(rtl::RtlJob{.args = {1}, .input = std::vector<uint8_t>(40), .output_bytes = 0});
  EXPECT_EQ(extra.status, Status::device_error);
  // Expects output the accelerator does not produce.
  const auto missing = slot->run(rtl::RtlJob{.args = {0}, .input = {}, .output_bytes = 8});
  EXPECT_EQ(missing.status, Status::device_error);
}

TEST(RtlAccelerator, SlotsRunConcurrentlyInThreads) {
  // The real-time driver runs each slot in its own thread: models must not share state.
  TestRng rng(81);
  std::vector<rtl::RtlJob> jobs;
  for (rtl::RtlFunction f : rtl::kAllRtlFunctions) jobs.push_back(sample_job(f, rng));
  std::vector<rtl::RtlResult> alone;
  for (size_t i = 0; i < jobs.size(); ++i) {
    alone.push_back(make_slot(rtl::kAllRtlFunctions[i])->run(jobs[i]));
  }
  std::vector<rtl::RtlResult> together(jobs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < jobs.size(); ++i) {
    threads.emplace_back([&, i] {
      auto slot = rtl::make_rtl_accelerator(rtl::kAllRtlFunctions[i]);
      if (!slot) return;
      for (int repeat = 0; repeat < 3; ++repeat) together[i] = slot.value()->run(jobs[i]);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_EQ(together[i].status, Status::ok) << together[i].message;
    EXPECT_EQ(together[i].output, alone[i].output);
    EXPECT_EQ(together[i].value, alone[i].value);
    EXPECT_EQ(together[i].cycles, alone[i].cycles);
  }
}

}  // namespace
}  // namespace tandem::testing
