// The start-up measurement of a data-parallel device's cost model (devices/kernel_models.hpp), run
// against a fake device whose job time grows with the job's work: every probe fits the device's largest
// buffer, and X_a is still measured for every function.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "base/clock.hpp"
#include "devices/kernel_models.hpp"
#include "funcs/function.hpp"

namespace tandem::devices {
namespace {

TEST(KernelModels, ProbesFitTheLargestBufferAndStillMeasureXa) {
  // 16 KiB: every large probe shrinks (matmul's to 64 x 64), and stays larger than the small one.
  for (const uint64_t limit : {UINT64_MAX, uint64_t{1} << 20, uint64_t{64} << 10, uint64_t{16} << 10}) {
    DeviceInfo info;
    for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
      KernelId id{};
      if (kernel_for_function(fn->id, id)) info.loadable.set(fn->id);
    }
    uint64_t largest = 0;
    const auto run = [&](const funcs::Call& call) {
      const funcs::FunctionInfo* fn = funcs::find_function(call.function);
      // The probes pass their buffers as pointers and 0 for the address arguments: describe() sees
      // distinct addresses instead (a zero word is an address in every probe).
      std::array<uint64_t, TANDEM_MAX_ARG_WORDS> args = call.args;
      for (uint32_t i = 0; i < fn->max_args; ++i) {
        if (args[i] == 0) args[i] = uint64_t{i + 1} << 40;
      }
      funcs::BufferList buffers;
      uint64_t workload = 0;
      EXPECT_EQ(fn->describe(std::span<const uint64_t>(args.data(), fn->max_args), workload, buffers), Status::ok) << fn->name;
      for (uint32_t i = 0; i < buffers.count; ++i) largest = std::max(largest, buffers.items[i].bytes);
      // 2 us, plus 50 us per doubling of the work: a larger probe always takes longer.
      const int64_t until = now_ns() + 2000 + static_cast<int64_t>(50e3 * std::log2(1.0 + static_cast<double>(workload)));
      while (now_ns() < until) {
      }
      return true;
    };
    measure_kernel_models(info, [](KernelId) { return true; }, run, limit);
    EXPECT_LE(largest, limit);
    for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
      if (!info.loadable[fn->id] || fn->id == TANDEM_FN_NOP) continue;
      EXPECT_GT(info.models[fn->id].throughput, 0) << fn->name << ", buffers up to " << limit << " bytes";
      EXPECT_GT(info.models[fn->id].latency_s, 0) << fn->name;
    }
  }
}

// A device measured in place and with copies: each sample of the copied way right after the in-place
// one, both models filled; the copied way, slower by a set-up and per unit of work, measures slower.
TEST(KernelModels, BothWaysAreMeasuredInTurn) {
  DeviceInfo info;
  info.loadable.set(TANDEM_FN_ACCUMULATE);
  info.loadable.set(TANDEM_FN_NOP);
  std::vector<char> order;
  const auto busy = [](int64_t ns) {
    const int64_t until = now_ns() + ns;
    while (now_ns() < until) {
    }
  };
  const auto in_place = [&](const funcs::Call& call) {
    order.push_back('p');
    busy(20'000 + static_cast<int64_t>(call.workload / 100));  // 20 us + 10 ns per unit
    return true;
  };
  const auto copied = [&](const funcs::Call& call) {
    order.push_back('c');
    EXPECT_EQ(reinterpret_cast<uintptr_t>(call.buffers[0]) % 64, 0u) << "aligned as session memory";
    busy(60'000 + static_cast<int64_t>(call.workload / 50));  // 60 us + 20 ns per unit
    return true;
  };
  measure_kernel_models(info, [](KernelId) { return true; }, in_place, UINT64_MAX, copied);
  ASSERT_FALSE(order.empty());
  for (size_t i = 0; i + 1 < order.size(); i += 2) {
    ASSERT_EQ(order[i], 'p');
    ASSERT_EQ(order[i + 1], 'c');
  }
  const model::AccelModel& p = info.models[TANDEM_FN_ACCUMULATE];
  const model::AccelModel& c = info.copy_models[TANDEM_FN_ACCUMULATE];
  EXPECT_GT(c.latency_s, p.latency_s);
  EXPECT_GT(p.throughput, c.throughput);
  EXPECT_GT(info.copy_models[TANDEM_FN_NOP].latency_s, info.models[TANDEM_FN_NOP].latency_s);
  EXPECT_EQ(info.copy_models[TANDEM_FN_NOP].throughput, 0);
  // A way that fails from its second large run on keeps what it measured, and the other way is whole.
  DeviceInfo failing;
  failing.loadable.set(TANDEM_FN_ACCUMULATE);
  int large_runs = 0;
  const auto copied_failing = [&](const funcs::Call& call) {
    if (call.workload > 4096 && ++large_runs > 1) return false;
    return copied(call);
  };
  measure_kernel_models(failing, [](KernelId) { return true; }, in_place, UINT64_MAX, copied_failing);
  EXPECT_EQ(large_runs, 2) << "not run again after it failed";
  EXPECT_GT(failing.models[TANDEM_FN_ACCUMULATE].throughput, failing.copy_models[TANDEM_FN_ACCUMULATE].throughput);
  EXPECT_GT(failing.copy_models[TANDEM_FN_ACCUMULATE].throughput, 0) << "its one large sample";
  // One way only: no copied models.
  DeviceInfo single;
  single.loadable.set(TANDEM_FN_ACCUMULATE);
  measure_kernel_models(single, [](KernelId) { return true; }, in_place);
  EXPECT_GT(single.models[TANDEM_FN_ACCUMULATE].latency_s, 0);
  EXPECT_EQ(single.copy_models[TANDEM_FN_ACCUMULATE].latency_s, 0);
}

}  // namespace
}  // namespace tandem::devices
