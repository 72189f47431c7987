// The function catalog: argument rules, split/combine equal to the whole, calibrated work loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "funcs/function.hpp"
#include "funcs/throughput.hpp"

namespace tandem::funcs {
namespace {

TEST(Funcs, CatalogNamesAndIds) {
  EXPECT_EQ(find_function("accumulate")->id, TANDEM_FN_ACCUMULATE);
  EXPECT_EQ(find_function(TANDEM_FN_NOP)->name, "nop");
  EXPECT_EQ(find_function("work15")->id, TANDEM_FN_WORK_BASE + 15);
  EXPECT_EQ(find_function(uint16_t{200}), nullptr);
  EXPECT_EQ(find_function("nothing"), nullptr);
  EXPECT_EQ(all_functions().size(), 10u + TANDEM_WORK_FUNCTIONS);
  EXPECT_EQ(find_function("copy")->id, TANDEM_FN_COPY);
}

// The copy engines' function: a transfer that splits at any byte, each part moving its own bytes.
TEST(Funcs, CopyMovesItsBytesAndSplitsAnywhere) {
  std::vector<uint8_t> src(1000), dst(1000, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7);
  const FunctionInfo* fn = find_function(TANDEM_FN_COPY);
  const uint64_t args[3] = {reinterpret_cast<uintptr_t>(dst.data()), reinterpret_cast<uintptr_t>(src.data()), 1000};
  Call call;
  BufferList buffers;
  ASSERT_EQ(describe_call(*fn, args, call, buffers), Status::ok);
  ASSERT_EQ(buffers.count, 2u);
  EXPECT_TRUE(buffers.items[0].write) << "the destination first";
  EXPECT_FALSE(buffers.items[1].write);
  EXPECT_EQ(call.workload, 1000u);
  call.buffers[0] = dst.data();
  call.buffers[1] = src.data();
  Call a, b;
  fn->slice(call, 0, 333, a);
  fn->slice(call, 333, 1000, b);
  EXPECT_EQ(fn->run_sw(a, 0, a.workload) + fn->run_accel(b, 0, b.workload), 1000);
  EXPECT_EQ(dst, src);
  const uint64_t too_much[3] = {1, 2, uint64_t{1} << 41};
  EXPECT_EQ(describe_call(*fn, too_much, call, buffers), Status::invalid_argument);
}

TEST(Funcs, AccumulateSplitsAndCombinesToTheWholeSum) {
  std::mt19937 rng(1);
  std::vector<int32_t> data(1001);
  for (auto& v : data) v = static_cast<int32_t>(rng());
  data[0] = INT32_MIN;
  data[1] = INT32_MAX;
  const int64_t expected = std::accumulate(data.begin(), data.end(), int64_t{0});
  const FunctionInfo* fn = find_function(TANDEM_FN_ACCUMULATE);
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data.data()), data.size()};
  Call call;
  BufferList buffers;
  ASSERT_EQ(describe_call(*fn, args, call, buffers), Status::ok);
  ASSERT_EQ(buffers.count, 1u);
  EXPECT_EQ(buffers.items[0].bytes, data.size() * 4);
  call.buffers[0] = data.data();
  EXPECT_EQ(run_sw(*fn, call), expected);
  for (uint64_t cut : {uint64_t{0}, uint64_t{8}, uint64_t{1000}, uint64_t{4004}}) {
    Call a, b;
    fn->slice(call, 0, cut, a);
    fn->slice(call, cut, call.workload, b);
    EXPECT_EQ(a.workload + b.workload, call.workload);
    EXPECT_EQ(fn->combine(fn->run_accel(a, 0, a.workload), fn->run_sw(b, 0, b.workload)), expected) << cut;
    EXPECT_EQ(b.args[0], args[0] + cut) << "the slice names its own client address";
  }
}

TEST(Funcs, ArgumentRules) {
  const FunctionInfo* acc = find_function(TANDEM_FN_ACCUMULATE);
  Call call;
  BufferList buffers;
  const uint64_t one[1] = {0};
  EXPECT_EQ(describe_call(*acc, one, call, buffers), Status::invalid_argument) << "too few words";
  const uint64_t huge[2] = {64, uint64_t{1} << 60};
  EXPECT_EQ(describe_call(*acc, huge, call, buffers), Status::invalid_argument);
  const uint64_t empty[2] = {0, 0};
  EXPECT_EQ(describe_call(*acc, empty, call, buffers), Status::ok);
  EXPECT_EQ(buffers.count, 0u);
  const FunctionInfo* work = find_function(TANDEM_FN_WORK);
  const uint64_t units[1] = {12345};
  ASSERT_EQ(describe_call(*work, units, call, buffers), Status::ok);
  EXPECT_EQ(call.workload, 12345u);
  EXPECT_EQ(work->run_accel(call, 0, call.workload), 12345) << "accelerator result: units processed";
}

TEST(Funcs, WorkLoopSpendsRoughlyItsCycles) {
  const double hz = cycles_per_second();
  ASSERT_GT(hz, 1e8);
  EXPECT_DOUBLE_EQ(software_throughput(TANDEM_FN_WORK), hz);
  EXPECT_DOUBLE_EQ(software_throughput(TANDEM_FN_WORK_BASE + 3), hz);
  EXPECT_GT(software_throughput(TANDEM_FN_ACCUMULATE), 0);
  EXPECT_EQ(software_throughput(TANDEM_FN_NOP), 0);
}

// A figure adopted from tandemd's hello replaces the process's own measurement, but never one it already
// has, and nothing that is not a positive rate. In a fresh process (the death test re-runs the binary),
// where no figure is known yet.
TEST(Funcs, AdoptedFiguresReplaceMeasurementOnlyWhereNothingIsKnown) {
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        int failures = 0;
        const auto check = [&](bool ok, const char* what) {
          if (!ok) {
            std::fprintf(stderr, "failed: %s\n", what);
            ++failures;
          }
        };
        check(adopt_software_throughput(TANDEM_FN_ACCUMULATE, 1.25e9), "adopting an unknown figure");
        check(software_throughput(TANDEM_FN_ACCUMULATE) == 1.25e9, "the adopted figure is the process's");
        check(!adopt_software_throughput(TANDEM_FN_ACCUMULATE, 2e9), "a known figure is not replaced");
        check(software_throughput(TANDEM_FN_ACCUMULATE) == 1.25e9, "and stays");
        const double measured = software_throughput(TANDEM_FN_SOBEL);
        check(measured > 0 && !adopt_software_throughput(TANDEM_FN_SOBEL, 1.0), "a measured figure is not replaced");
        check(software_throughput(TANDEM_FN_SOBEL) == measured, "and stays");
        for (double bad : {0.0, -1.0, 0.5, 1e14, std::nan(""), std::numeric_limits<double>::infinity()}) {
          check(!adopt_software_throughput(TANDEM_FN_MATMUL, bad), "a rate outside [1, 1e13] is refused");
        }
        for (double bad : {0.0, 1e5, 1e12, std::nan(""), std::numeric_limits<double>::infinity()}) {
          check(!adopt_cycles_per_second(bad), "a TSC rate outside [1e6, 1e11] is refused");
        }
        check(!adopt_software_throughput(TANDEM_FN_WORK, 1e9), "work's unit is a cycle, not a figure");
        check(!adopt_software_throughput(TANDEM_FN_NOP, 1e9), "nop has no rate to adopt");
        check(!adopt_software_throughput(TANDEM_FN_MAX, 1e9), "a function id out of range");
        check(adopt_cycles_per_second(3e9) && cycles_per_second() == 3e9, "adopting the TSC rate");
        check(software_throughput(TANDEM_FN_WORK) == 3e9, "work's rate is the TSC's");
        check(!adopt_cycles_per_second(2e9) && cycles_per_second() == 3e9, "a known TSC rate stays");
        std::exit(failures == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  GTEST_FLAG_SET(death_test_style, style);
}

}  // namespace
}  // namespace tandem::funcs
