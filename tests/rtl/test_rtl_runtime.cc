// The Verilator RTL device as a tandem device: RtlFabric on its own (every function against the
// software path, tiling, reconfiguration, refusals, stable cycle counts), and end to end through
// the embedded runtime with [device] kinds = ["rtl"] (packets through rings, buffers translated, the
// engine's completion records), and beside the emulated fabric in one runtime.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "client/embedded.hpp"
#include "config/config.hpp"
#include "devices/emu/emu_device.hpp"
#include "devices/rtl/calibrate.hpp"
#include "devices/rtl/rtl_fabric.hpp"
#include "funcs/function.hpp"
#include "funcs/ref/pq_ref.hpp"
#include "random_calls.hpp"
#include "rt/completion.hpp"
#include "rtl_cases.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

namespace rtl = devices::rtl;
using funcs::Call;
using testing::accumulate_case;
using testing::address;
using testing::call_of;
using testing::Case;
using testing::dct_case;
using testing::matmul_case;
using testing::pq_case;
using testing::run_software;
using testing::sobel_case;

// A fabric with one slot per accelerator: accumulate 0, sobel 1, matmul 2, dct_quant 3, priority_queue 4.
std::unique_ptr<rtl::RtlFabric> full_fabric(const rtl::RtlFabricOptions& options = {}) {
  auto fabric = std::make_unique<rtl::RtlFabric>(5, options);
  const uint16_t fns[] = {TANDEM_FN_ACCUMULATE, TANDEM_FN_SOBEL, TANDEM_FN_MATMUL, TANDEM_FN_DCT_QUANT,
                          TANDEM_FN_PRIORITY_QUEUE};
  for (uint32_t s = 0; s < 5; ++s) fabric->configure(s, fns[s]);
  return fabric;
}

uint32_t slot_of(uint16_t function) {
  switch (function) {
    case TANDEM_FN_ACCUMULATE: return 0;
    case TANDEM_FN_SOBEL: return 1;
    case TANDEM_FN_MATMUL: return 2;
    case TANDEM_FN_DCT_QUANT: return 3;
    default: return 4;
  }
}

// Runs `make(seed)` in software and on the device; outputs and values must be equal.
template <class Make>
rtl::ExecResult expect_device_equals_software(rtl::RtlFabric& fabric, Make make, uint64_t seed,
                                                  const char* what) {
  Case sw = make(seed), hw = make(seed);
  const int64_t want = run_software(sw);
  const Call call = call_of(hw);
  const uint32_t slot = slot_of(hw.function);
  const uint64_t cycles_before = fabric.stats(slot).cycles;
  const rtl::ExecResult r = fabric.execute(slot, call);
  EXPECT_EQ(r.status, Status::ok) << what << ": " << fabric.last_error(slot);
  EXPECT_EQ(r.value, want) << what;
  if (sw.output != SIZE_MAX) {
    EXPECT_TRUE(sw.out() == hw.out()) << what << ": output differs from the software path";
  }
  // Device time is the cycles counted, at the fabric clock.
  const uint64_t cycles = fabric.stats(slot).cycles - cycles_before;
  EXPECT_GT(cycles, 0u) << what;
  EXPECT_EQ(r.device_ns, static_cast<int64_t>(std::ceil(static_cast<double>(cycles) * 1e9 /
                                                        fabric.options().accelerator.clock_hz)))
      << what;
  return r;
}

TEST(RtlFabric, EveryFunctionEqualsTheSoftwarePath) {
  auto fabric = full_fabric();
  for (uint16_t f : {TANDEM_FN_ACCUMULATE, TANDEM_FN_SOBEL, TANDEM_FN_MATMUL, TANDEM_FN_DCT_QUANT,
                     TANDEM_FN_PRIORITY_QUEUE}) {
    EXPECT_TRUE(fabric->supports(f));
    EXPECT_EQ(fabric->loaded(slot_of(f)), f);
  }
  EXPECT_FALSE(fabric->supports(TANDEM_FN_WORK));
  for (uint64_t n : {0u, 1u, 2u, 7u, 1000u}) {
    expect_device_equals_software(*fabric, [n](uint64_t s) { return accumulate_case(s, n); }, n, "accumulate");
  }
  const std::pair<uint32_t, uint32_t> images[] = {{0, 0}, {1, 1}, {3, 3}, {17, 9}, {16, 16}, {100, 20}};
  for (auto [w, h] : images) {
    expect_device_equals_software(*fabric, [w, h](uint64_t s) { return sobel_case(s, w, h); }, w + h, "sobel");
  }
  const uint32_t dims[][3] = {{0, 3, 3}, {1, 1, 1}, {3, 0, 5}, {9, 17, 13}, {20, 20, 20}};
  for (auto [m, k, n] : dims) {
    expect_device_equals_software(*fabric, [m, k, n](uint64_t s) { return matmul_case(s, m, k, n); }, m + k + n,
                                  "matmul");
  }
  for (uint32_t mode : {TANDEM_DCT_MODE_DCT, TANDEM_DCT_MODE_QUANTIZE, TANDEM_DCT_MODE_DCT_QUANTIZE}) {
    for (uint32_t blocks : {0u, 1u, 9u}) {
      expect_device_equals_software(*fabric, [=](uint64_t s) { return dct_case(s, blocks, mode); }, blocks + mode,
                                    "dct_quant");
    }
  }
  for (uint32_t n : {0u, 1u, 300u, 900u}) {
    expect_device_equals_software(*fabric, [n](uint64_t s) { return pq_case(s, n); }, n, "priority_queue");
  }
}

TEST(RtlFabric, LargeCallsRunAsSeveralHardwareJobs) {
  rtl::RtlFabricOptions o;
  o.accumulate_values_per_job = 7;
  o.sobel_rows_per_job = 4;
  o.matmul_tile = 7;
  o.dct_blocks_per_job = 3;
  o.pq_commands_per_job = 5;
  auto fabric = full_fabric(o);
  expect_device_equals_software(*fabric, [](uint64_t s) { return accumulate_case(s, 50); }, 1, "accumulate");
  expect_device_equals_software(*fabric, [](uint64_t s) { return sobel_case(s, 30, 19); }, 2, "sobel");
  expect_device_equals_software(*fabric, [](uint64_t s) { return matmul_case(s, 16, 15, 9); }, 3, "matmul");
  expect_device_equals_software(*fabric, [](uint64_t s) { return matmul_case(s, 8, 0, 9); }, 4, "matmul k=0");
  expect_device_equals_software(
      *fabric, [](uint64_t s) { return dct_case(s, 10, TANDEM_DCT_MODE_DCT_QUANTIZE); }, 5, "dct_quant");
  // priority_queue keeps its contents from one chunk to the next within a call.
  expect_device_equals_software(*fabric, [](uint64_t s) { return pq_case(s, 41); }, 6, "priority_queue");
  EXPECT_EQ(fabric->stats(0).hardware_jobs, 8u);       // ceil(50 / 7)
  EXPECT_EQ(fabric->stats(1).hardware_jobs, 5u);       // ceil(19 / 4)
  EXPECT_EQ(fabric->stats(2).hardware_jobs, 3u * 2u * 3u + 2u * 2u);  // m, n, k blocks of 7; then k = 0
  EXPECT_EQ(fabric->stats(3).hardware_jobs, 4u);
  EXPECT_EQ(fabric->stats(4).hardware_jobs, 9u);
}

TEST(RtlFabric, HardwareLimitsAreTiledAway) {
  auto fabric = full_fabric();
  // Wider than the line buffers (1920): two column strips with a halo column each.
  expect_device_equals_software(*fabric, [](uint64_t s) { return sobel_case(s, 2000, 4); }, 7, "sobel 2000 wide");
  EXPECT_EQ(fabric->stats(1).hardware_jobs, 2u);
  // Each dimension above the accelerator's 100 in turn.
  expect_device_equals_software(*fabric, [](uint64_t s) { return matmul_case(s, 101, 3, 5); }, 8, "matmul m");
  expect_device_equals_software(*fabric, [](uint64_t s) { return matmul_case(s, 3, 101, 5); }, 9, "matmul k");
  expect_device_equals_software(*fabric, [](uint64_t s) { return matmul_case(s, 3, 5, 101); }, 10, "matmul n");
  EXPECT_EQ(fabric->stats(2).hardware_jobs, 6u);
  // The 3-lane Sobel with 40-pixel line buffers: strips of 38 columns.
  rtl::RtlFabricOptions small;
  small.accelerator.sobel_small_variant = true;
  small.sobel_rows_per_job = 6;
  rtl::RtlFabric narrow(2, small);
  narrow.configure(1, TANDEM_FN_SOBEL);
  expect_device_equals_software(narrow, [](uint64_t s) { return sobel_case(s, 100, 13); }, 11, "sobel 3 lanes");
  EXPECT_EQ(narrow.stats(1).hardware_jobs, 3u * 3u);
}

TEST(RtlFabric, CycleCountsAreStableAcrossRunsAndSlots) {
  auto a = full_fabric();
  auto b = full_fabric();
  const auto first = expect_device_equals_software(*a, [](uint64_t s) { return matmul_case(s, 12, 9, 30); }, 1, "m");
  const auto again = expect_device_equals_software(*a, [](uint64_t s) { return matmul_case(s, 12, 9, 30); }, 1, "m");
  const auto other = expect_device_equals_software(*b, [](uint64_t s) { return matmul_case(s, 12, 9, 30); }, 1, "m");
  EXPECT_EQ(first.device_ns, again.device_ns);
  EXPECT_EQ(first.device_ns, other.device_ns);
  const auto pq1 = expect_device_equals_software(*a, [](uint64_t s) { return pq_case(s, 500); }, 2, "pq");
  const auto pq2 = expect_device_equals_software(*b, [](uint64_t s) { return pq_case(s, 500); }, 2, "pq");
  EXPECT_EQ(pq1.device_ns, pq2.device_ns);
  // Nominal timing (docs/rtl.md): dct_quant chained takes 16 cycles per block plus 48.
  const auto d = expect_device_equals_software(
      *a, [](uint64_t s) { return dct_case(s, 100, TANDEM_DCT_MODE_DCT_QUANTIZE); }, 3, "dct");
  EXPECT_EQ(d.device_ns, (16 * 100 + 48) * 5);  // 5 ns per cycle at 200 MHz
}

TEST(RtlFabric, ReconfiguringASlotLoadsAFreshAccelerator) {
  rtl::RtlFabric fabric(2, {});
  EXPECT_EQ(fabric.loaded(0), rtl::RtlFabric::kEmpty);
  Case s = sobel_case(1, 20, 10);
  EXPECT_EQ(fabric.execute(0, call_of(s)).status, Status::device_error) << "an empty slot runs nothing";
  fabric.configure(0, TANDEM_FN_SOBEL);
  EXPECT_EQ(fabric.execute(0, call_of(s)).status, Status::ok);
  fabric.configure(0, TANDEM_FN_MATMUL);
  EXPECT_EQ(fabric.loaded(0), TANDEM_FN_MATMUL);
  EXPECT_EQ(fabric.execute(0, call_of(s)).status, Status::device_error);
  EXPECT_NE(fabric.last_error(0).find("not loaded"), std::string::npos) << fabric.last_error(0);
  Case m = matmul_case(2, 5, 6, 7), m_sw = matmul_case(2, 5, 6, 7);
  run_software(m_sw);
  EXPECT_EQ(fabric.execute(0, call_of(m)).status, Status::ok);
  EXPECT_EQ(m.out(), m_sw.out());
  EXPECT_EQ(fabric.stats(0).models_built, 2u);
  // A function without an accelerator leaves the slot empty.
  fabric.configure(0, TANDEM_FN_WORK);
  EXPECT_EQ(fabric.loaded(0), rtl::RtlFabric::kEmpty);
  EXPECT_EQ(fabric.execute(0, call_of(m)).status, Status::device_error);
  EXPECT_EQ(fabric.execute(7, call_of(m)).status, Status::device_error) << "no such slot";
  fabric.configure(7, TANDEM_FN_SOBEL);  // ignored
}

TEST(RtlFabric, NoQueueContentsSurviveACall) {
  auto fabric = full_fabric();
  // Five pushes, then (another call) five pops: the second call starts from an empty queue.
  std::vector<uint64_t> pushes, pops, responses(5);
  for (uint32_t i = 0; i < 5; ++i) {
    pushes.push_back(funcs::ref::encode_pq_command({1, 100 + i, 7, false, false}));
    pops.push_back(funcs::ref::encode_pq_command({2, 0, 0, false, true}));
  }
  auto run = [&](std::vector<uint64_t>& cmds) {
    Call call;
    funcs::BufferList b;
    const uint64_t args[3] = {address(cmds.data()), address(responses.data()), cmds.size()};
    EXPECT_EQ(funcs::describe_call(*funcs::find_function(TANDEM_FN_PRIORITY_QUEUE), args, call, b), Status::ok);
    call.buffers = {cmds.data(), responses.data()};
    return fabric->execute(4, call);
  };
  EXPECT_EQ(run(pushes).value, 5);
  EXPECT_EQ(run(pops).value, 0);
  for (uint64_t r : responses) EXPECT_FALSE(funcs::ref::decode_pq_response(r).ok);
}

TEST(RtlFabric, RefusalsCompleteWithAStatus) {
  // A quantization table entry of 0: refused before the hardware starts, like the software path.
  auto fabric = full_fabric();
  Case bad = dct_case(5, 3, TANDEM_DCT_MODE_DCT_QUANTIZE, 0);
  const std::vector<uint8_t> before = bad.out();
  Case bad_sw = dct_case(5, 3, TANDEM_DCT_MODE_DCT_QUANTIZE, 0);
  EXPECT_EQ(run_software(bad_sw), 1);
  const auto r = fabric->execute(3, call_of(bad));
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_EQ(r.value, 1);
  EXPECT_EQ(r.device_ns, 0);
  EXPECT_EQ(bad.out(), before);
  // A hardware job that exceeds max_cycles fails with DEVICE_ERROR; the slot still works afterwards.
  rtl::RtlFabricOptions o;
  o.accelerator.max_cycles = 100;
  rtl::RtlFabric slow(1, o);
  slow.configure(0, TANDEM_FN_ACCUMULATE);
  Case big = accumulate_case(1, 1000);
  const auto timed_out = slow.execute(0, call_of(big));
  EXPECT_EQ(timed_out.status, Status::device_error);
  EXPECT_GE(timed_out.device_ns, 100 * 5);
  EXPECT_NE(slow.last_error(0).find("no completion"), std::string::npos) << slow.last_error(0);
  Case small = accumulate_case(2, 10), small_sw = accumulate_case(2, 10);
  const auto fine = slow.execute(0, call_of(small));
  EXPECT_EQ(fine.status, Status::ok);
  EXPECT_EQ(fine.value, run_software(small_sw));
}

// ---------------- end to end: the embedded runtime with [device] kinds = ["rtl"] ----------------

constexpr const char* kRtlConfig = "[device]\nkinds = [\"rtl\"]\n";

struct Submitted {
  tandem_completion_t record{};
  Status status = Status::ok;
};

// One packet through the default queue's ring; waits for its completion record.
Status submit_and_wait(client::Runtime& rt, const Case& c, uint64_t workload, tandem_completion_t& rec) {
  rt::reset_record(&rec);
  const Status s = rt.default_queue().dispatch(c.function, c.args.data(), static_cast<uint32_t>(c.args.size()),
                                               workload, &rec);
  if (s != Status::ok) return s;
  return rt.wait(&rec, {});
}

// Random high-level calls in every mode with every method (tests/random_calls.hpp), byte for byte
// against the references, split between the CPU and the Verilated accelerators.
TEST(RtlRuntime, RandomCallsInEveryModeWithEveryMethodGiveTheReference) {
  auto rt = testing::open_embedded(kRtlConfig);
  ASSERT_TRUE(rt);
  std::string report;
  int accelerated = 0;
  EXPECT_EQ(testing::run_random_calls(*rt, 1531, 60, {}, {.priority_queue = true}, report, &accelerated), 0) << report;
  EXPECT_GT(accelerated, 15);
}

TEST(RtlRuntime, PacketsThroughRingsEqualTheReferences) {
  auto rt = testing::open_embedded(kRtlConfig, client::Mode::hw);
  ASSERT_TRUE(rt);
  auto reference_fabric = full_fabric();  // the same jobs outside the engine: the same cycles
  struct Named {
    const char* what;
    std::function<Case(uint64_t)> make;
  };
  const Named cases[] = {
      {"accumulate", [](uint64_t s) { return accumulate_case(s, 777); }},
      {"sobel", [](uint64_t s) { return sobel_case(s, 64, 48); }},
      {"matmul", [](uint64_t s) { return matmul_case(s, 16, 24, 20); }},
      {"dct_quant", [](uint64_t s) { return dct_case(s, 12, TANDEM_DCT_MODE_DCT_QUANTIZE); }},
      {"dct", [](uint64_t s) { return dct_case(s, 5, TANDEM_DCT_MODE_DCT); }},
      {"quantize", [](uint64_t s) { return dct_case(s, 5, TANDEM_DCT_MODE_QUANTIZE); }},
      {"priority_queue", [](uint64_t s) { return pq_case(s, 200); }},
  };
  for (const Named& n : cases) {
    Case sw = n.make(3), hw = n.make(3), again = n.make(3);
    const int64_t want = run_software(sw);
    call_of(hw);
    tandem_completion_t rec;
    ASSERT_EQ(submit_and_wait(*rt, hw, hw.workload, rec), Status::ok) << n.what;
    EXPECT_EQ(static_cast<int64_t>(rec.value), want) << n.what;
    if (sw.output != SIZE_MAX) {
      EXPECT_TRUE(sw.out() == hw.out()) << n.what;
    }
    EXPECT_EQ(rec.slot, slot_of(hw.function)) << n.what << ": the resident slot";
    const rtl::ExecResult direct = reference_fabric->execute(slot_of(again.function), call_of(again));
    EXPECT_GT(rec.device_ns, 0u) << n.what;
    EXPECT_EQ(rec.device_ns, static_cast<uint64_t>(direct.device_ns)) << n.what << ": cycle-counted device time";
  }
  // The high-level call in hardware mode takes the same path.
  Case sw = matmul_case(4, 10, 10, 10), hw = matmul_case(4, 10, 10, 10);
  run_software(sw);
  funcs::Call call = call_of(hw);
  int64_t value = -1;
  ASSERT_EQ(rt->run(*funcs::find_function(TANDEM_FN_MATMUL), call, value), Status::ok);
  EXPECT_EQ(value, 0);
  EXPECT_EQ(sw.out(), hw.out());
  EXPECT_EQ(rt->stats().fallbacks.load(), 0u);
}

TEST(RtlRuntime, BadPacketsAndRefusedJobsCompleteWithAStatus) {
  auto rt = testing::open_embedded(kRtlConfig, client::Mode::hw);
  ASSERT_TRUE(rt);
  tandem_completion_t rec;
  Case s = sobel_case(1, 8, 8);
  s.args[3] |= uint64_t{1} << 40;  // a reserved bit of args[3]
  EXPECT_EQ(submit_and_wait(*rt, s, 64, rec), Status::invalid_packet);
  Case m = matmul_case(1, 4, 4, 4);
  m.args[2] += 2;  // C misaligned
  EXPECT_EQ(submit_and_wait(*rt, m, 64, rec), Status::invalid_packet);
  Case wrong_size = matmul_case(1, 4, 4, 4);
  EXPECT_EQ(submit_and_wait(*rt, wrong_size, 65, rec), Status::invalid_packet) << "workload disagrees";
  Case nowhere = sobel_case(1, 8, 8);
  nowhere.args[0] = 0;
  EXPECT_EQ(submit_and_wait(*rt, nowhere, 64, rec), Status::translation_fault);
  Case table = dct_case(1, 2, TANDEM_DCT_MODE_QUANTIZE, 0);
  EXPECT_EQ(submit_and_wait(*rt, table, 2, rec), Status::ok);
  EXPECT_EQ(rec.value, 1u) << "a bad quantization table: refused, nothing written";
  Case work;
  work.function = TANDEM_FN_WORK;
  work.args = {1000};
  EXPECT_EQ(submit_and_wait(*rt, work, 1000, rec), Status::not_accelerated) << "no RTL accelerator for work";
  // The runtime still serves good jobs.
  Case good = sobel_case(2, 8, 8), good_sw = sobel_case(2, 8, 8);
  run_software(good_sw);
  EXPECT_EQ(submit_and_wait(*rt, good, 64, rec), Status::ok);
  EXPECT_EQ(good.out(), good_sw.out());
}

TEST(RtlRuntime, ReconfiguredSlotsServeTheirNewFunction) {
  auto rt = testing::open_embedded(kRtlConfig, client::Mode::hw);
  ASSERT_TRUE(rt);
  auto& d = dynamic_cast<client::EmbeddedRuntime&>(*rt).dispatcher();
  ASSERT_EQ(d.snapshot().devices.size(), 1u);
  EXPECT_EQ(d.snapshot().devices[0].info.kind, "rtl");
  // Swap: slot 1 (sobel) gets matmul, slot 2 (matmul) gets sobel, each after the bitstream delay.
  ASSERT_TRUE(d.load(1, TANDEM_FN_MATMUL));
  ASSERT_TRUE(d.load(2, TANDEM_FN_SOBEL));
  bool ready = false;
  for (int i = 0; i < 5000 && !ready; ++i) {  // the delay is about 1 ms; wait up to 5 s
    const auto snap = d.snapshot();
    ready = snap.slots[1].state == engine::SlotState::idle && snap.slots[1].function == TANDEM_FN_MATMUL &&
            snap.slots[2].state == engine::SlotState::idle && snap.slots[2].function == TANDEM_FN_SOBEL;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(ready);
  for (int round = 0; round < 3; ++round) {
    Case m = matmul_case(10 + round, 7, 8, 9), m_sw = matmul_case(10 + round, 7, 8, 9);
    Case s = sobel_case(20 + round, 33, 7), s_sw = sobel_case(20 + round, 33, 7);
    run_software(m_sw);
    run_software(s_sw);
    call_of(m);
    call_of(s);
    tandem_completion_t rm, rs;
    ASSERT_EQ(submit_and_wait(*rt, m, m.workload, rm), Status::ok);
    ASSERT_EQ(submit_and_wait(*rt, s, s.workload, rs), Status::ok);
    EXPECT_EQ(rm.slot, 1u);
    EXPECT_EQ(rs.slot, 2u);
    EXPECT_EQ(m.out(), m_sw.out());
    EXPECT_EQ(s.out(), s_sw.out());
  }
}

// `tandem calibrate-rtl`'s layer loads as a configuration, and the emulated fabric then charges the
// RTL accelerators' times: for dct_quant (exactly linear) the same device time as the rtl device.
TEST(RtlCalibration, TheEmulatedFabricLoadsRtlDerivedTiming) {
  std::vector<rtl::Calibration> cals;
  for (rtl::RtlFunction f : {rtl::RtlFunction::accumulate, rtl::RtlFunction::dct_quant}) {
    const uint64_t sizes[] = {4, 64, 256};  // quick: bytes for accumulate, blocks for dct_quant
    auto c = rtl::calibrate(f, {}, sizes);
    ASSERT_TRUE(c.ok()) << c.message();
    cals.push_back(std::move(c).value());
  }
  const std::string layer = rtl::timing_config_layer(cals);
  const config::Config config = config::parse_config(layer, "calibrate-rtl");
  const auto models = devices::emu_models(config);
  for (const rtl::Calibration& c : cals) {
    const uint16_t id = funcs::find_function(rtl::to_string(c.function))->id;
    EXPECT_NEAR(models[id].throughput / c.throughput_units_per_s, 1.0, 1e-6) << rtl::to_string(c.function);
    EXPECT_NEAR(models[id].latency_s, c.latency_s, 1e-12) << rtl::to_string(c.function);
  }
  // The RTL device charges the accelerator's cycles only: no host transfer on the emulated side either.
  auto emu = testing::open_embedded(layer + "[device.emu]\nresident = [\"dct_quant\"]\nlink_gbps = 0\ndma_setup_us = 0\n",
                                    client::Mode::hw);
  ASSERT_TRUE(emu);
  Case e = dct_case(1, 100, TANDEM_DCT_MODE_DCT_QUANTIZE), r = dct_case(1, 100, TANDEM_DCT_MODE_DCT_QUANTIZE);
  call_of(e);
  tandem_completion_t rec;
  ASSERT_EQ(submit_and_wait(*emu, e, e.workload, rec), Status::ok);
  EXPECT_EQ(rec.device_ns, 240u + 100u * 80u) << "D_a + W / X_a: 48 cycles + 16 per block at 5 ns";
  auto fabric = full_fabric();
  EXPECT_EQ(fabric->execute(3, call_of(r)).device_ns, static_cast<int64_t>(rec.device_ns));
  EXPECT_EQ(e.out(), r.out()) << "and the same results";
}

}  // namespace
}  // namespace tandem
