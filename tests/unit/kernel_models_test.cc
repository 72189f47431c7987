// The start-up measurement of a data-parallel device's cost model (devices/kernel_models.hpp), run
// against a fake device whose job time grows with the job's work: every probe fits the device's largest
// buffer, and X_a is still measured for every function.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>

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

}  // namespace
}  // namespace tandem::devices
