// Automatic mode's corrections (issue 15): the CPU contention model as event scripts, the robust
// running estimates, their convergence after a speed change, and the persisted learnt file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "client/learned_costs.hpp"
#include "model/learning.hpp"

namespace tandem::model {
namespace {

// An event script: one event per line, applied in order to a CpuLoad; `expect S` checks the share.
//   cores N | runnable +1 | runnable -1 | engine X | expect S
void run_script(const std::string& script) {
  CpuLoad load{1, 0, 0};
  std::istringstream in(script);
  std::string op;
  int line = 0;
  while (in >> op) {
    ++line;
    double v = 0;
    ASSERT_TRUE(in >> v) << "line " << line;
    if (op == "cores") {
      load.cores = v;
    } else if (op == "runnable") {
      load.runnable_threads += v;
    } else if (op == "engine") {
      load.engine_cores = v;
    } else if (op == "expect") {
      EXPECT_NEAR(cpu_share(load), v, 1e-9) << "after event " << line << " of:\n" << script;
    } else {
      FAIL() << "unknown event " << op;
    }
  }
}

TEST(CpuContention, FreeCoresGiveAWholeCore) {
  run_script(R"(cores 2
                runnable +1  expect 1
                engine 1     expect 1
                runnable +1  engine 0  expect 1)");
}

TEST(CpuContention, EmbeddedDispatcherPollingTakesItsFairShare) {
  // This machine: 2 cores, the dispatcher polling one while jobs are in flight.
  run_script(R"(cores 2  engine 1
                runnable +1  expect 1
                runnable +1  expect 0.6666666666666666
                runnable +1  expect 0.5
                runnable +1  expect 0.4
                runnable -3  expect 1)");
}

TEST(CpuContention, ALightlyBusyEngineLeavesTheRestToTheApplications) {
  // The engine uses less than a fair share: the application threads split what it leaves.
  run_script(R"(cores 2  engine 0.2
                runnable +4  expect 0.45
                engine 0     expect 0.5
                cores 8      expect 1)");
}

TEST(CpuContention, OversubscribedWithoutEngine) {
  run_script(R"(cores 1
                runnable +2  expect 0.5
                runnable +2  expect 0.25)");
}

TEST(RunningMedian, PriorUntilSamplesAndRobustToOutliers) {
  RunningMedian m;
  m.seed(100);
  EXPECT_EQ(m.value(), 100);
  m.add(110);
  EXPECT_EQ(m.samples(), 1u);
  EXPECT_DOUBLE_EQ(m.value(), 105);  // the prior keeps a vote while samples are few
  for (int i = 0; i < 20; ++i) m.add(200);
  EXPECT_EQ(m.value(), 200);
  m.add(1e9);  // a preempted measurement
  m.add(0.001);
  EXPECT_EQ(m.value(), 200);
  m.add(std::numeric_limits<double>::quiet_NaN());
  m.add(-1);
  EXPECT_EQ(m.samples(), 23u);
}

// The mean (D_a's host part) keeps paid tails but caps one wild sample: a first call that waited for a
// process's start-up must not make the hardware look slow for the next kWindow calls.
TEST(RunningMedian, MeanCapsAWildSampleAtAFewMedians) {
  RunningMedian m;
  m.seed(1e-6);
  for (int i = 0; i < 14; ++i) m.add(1e-6);
  m.add(8e-3);  // the first call of a process: 8 ms of start-up in its round
  EXPECT_DOUBLE_EQ(m.value(), 1e-6);
  EXPECT_NEAR(m.mean(), (14 * 1e-6 + RunningMedian::kMeanCap * 1e-6) / 15, 1e-12);
  // Tails that are common enough move the median, and then count in full.
  RunningMedian t;
  for (int i = 0; i < 8; ++i) t.add(1e-6);
  for (int i = 0; i < 7; ++i) t.add(3e-6);
  EXPECT_NEAR(t.mean(), (8 * 1e-6 + 7 * 3e-6) / 15, 1e-12);
}

// A device whose speed changes mid-run: the learnt X_a follows within a bounded number of jobs.
TEST(CostEstimator, ConvergesAfterTheDeviceSpeedChanges) {
  CostParams seed;
  seed.xc = 1e9;
  seed.xa = 2e9;
  seed.da = 2e-6;
  seed.oc = 400e-9;
  CostEstimator e;
  e.seed(seed);
  const double latency = 0.5e-6;
  double xa = 3e9;  // the real device is faster than the seed says
  const auto job = [&](int i) {
    const double units = (i % 2 == 0 ? 1 : 3) * 100'000.0;  // two job sizes: the slope separates X_a from D_a
    e.observe_job(units, latency + units / xa, 1e-6);
  };
  for (int i = 0; i < 20; ++i) job(i);
  EXPECT_NEAR(e.params().xa, 3e9, 0.01 * 3e9);
  EXPECT_NEAR(e.params().da, latency + 1e-6, 0.05e-6);
  xa = 1e9;  // reconfigured with a third of the speed
  int calls = 0;
  while (std::abs(e.params().xa - xa) > 0.02 * xa && calls < 100) job(calls++);
  EXPECT_LE(calls, static_cast<int>(RunningMedian::kWindow / 2 + 2)) << "X_a took " << calls << " jobs to follow";
  EXPECT_NEAR(e.params().da, latency + 1e-6, 0.05e-6);
}

// A round trip that includes waking a sleeping dispatcher is an upper bound on D_a's host part: it
// lowers a figure above it and is dropped otherwise.
TEST(CostEstimator, AWakeUpsRoundTripOnlyLowersTheFigure) {
  CostParams seed;
  seed.xc = 1e9;
  seed.xa = 2e9;
  seed.da = 2e-6;
  CostEstimator e;
  e.seed(seed);
  for (int i = 0; i < 10; ++i) e.observe_job(100'000, 50e-6, 1e-6);
  const double awake = e.params().da;
  const uint64_t samples = e.round_trip_samples();
  for (int i = 0; i < 10; ++i) e.observe_job(100'000, 50e-6, 150e-6, /*round_trip_bound=*/true);
  EXPECT_EQ(e.round_trip_samples(), samples) << "bounds above the figure are dropped";
  EXPECT_DOUBLE_EQ(e.params().da, awake);
  // Where every call wakes the dispatcher, the wake-up is what calls pay: after a window of bounds
  // in a row they are samples again.
  for (uint32_t i = 10; i < 2 * RunningMedian::kWindow; ++i) e.observe_job(100'000, 50e-6, 150e-6, true);
  EXPECT_GT(e.round_trip_samples(), samples);
  EXPECT_GT(e.params().da, 100e-6);
  // The same samples as full ones would have taken over the median.
  CostEstimator plain;
  plain.seed(seed);
  for (int i = 0; i < 10; ++i) plain.observe_job(100'000, 50e-6, 1e-6);
  for (int i = 0; i < 10; ++i) plain.observe_job(100'000, 50e-6, 150e-6);
  EXPECT_GT(plain.params().da, 100e-6);
  // A figure far too high (a slow start) is corrected by bounds below it.
  CostEstimator high;
  seed.da = 1e-3;
  high.seed(seed);
  for (int i = 0; i < 10; ++i) high.observe_job(100'000, 50e-6, 20e-6, /*round_trip_bound=*/true);
  EXPECT_LT(high.params().da, 100e-6);
}

TEST(CostEstimator, LearnsAnIdleCoresThroughputFromContendedCalls) {
  CostParams seed;
  seed.xc = 1e9;
  CostEstimator e;
  e.seed(seed);
  // The thread got half a core: 1e6 units took 4 ms at an idle core's 5e8 units/s.
  for (int i = 0; i < 10; ++i) e.observe_cpu(1e6, 4e-3, 0.5);
  EXPECT_NEAR(e.params().xc, 5e8, 1);
  EXPECT_EQ(e.cpu_samples(), 10u);
}

}  // namespace
}  // namespace tandem::model

namespace tandem::client {
namespace {

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
  std::ofstream(path) << text;
  return path;
}

TEST(LearnedCosts, RoundTripsThroughTheLearntFile) {
  LearnedCosts learned;
  const funcs::FunctionInfo* fn = funcs::find_function("accumulate");
  ASSERT_NE(fn, nullptr);
  model::CostParams seed;
  seed.xc = 1e9;
  seed.xa = 2e9;
  seed.da = 2e-6;
  seed.oc = 4e-7;
  seed.granularity = fn->granularity;
  learned.seed(fn->id, seed);
  CallObservation o;
  o.sw_units = 1e6;
  o.sw_wall_s = 2e-3;
  for (int i = 0; i < 8; ++i) learned.observe(fn->id, o);
  EXPECT_NEAR(learned.params(fn->id).xc, 5e8, 1);
  const std::string path = ::testing::TempDir() + "/learned-emu.toml." + std::to_string(::getpid());
  Calibration snapshot = learned.snapshot("emu");
  snapshot.learnt_on[fn->id] = LearntOnDevice{2.5e9, 3e-6};  // as Runtime::save_learned records it
  save_calibration(snapshot, path);
  std::string warning;
  std::optional<Calibration> back = load_learned_costs(path, "emu", warning);
  ASSERT_TRUE(back) << warning;
  EXPECT_TRUE(warning.empty());
  ASSERT_TRUE(back->functions[fn->id]);
  EXPECT_NEAR(back->functions[fn->id]->xc, 5e8, 1);
  EXPECT_EQ(back->samples[fn->id].cpu, 8u);
  ASSERT_TRUE(back->learnt_on[fn->id]);
  EXPECT_NEAR(back->learnt_on[fn->id]->xa, 2.5e9, 1);
  EXPECT_NEAR(back->learnt_on[fn->id]->da_s, 3e-6, 1e-12);
  LearnedCosts next;
  next.seed(fn->id, seed);
  next.restore(*back);
  EXPECT_NEAR(next.params(fn->id).xc, 5e8, 1);
  EXPECT_EQ(next.samples(fn->id).cpu, 8u);
  std::remove(path.c_str());
}

// A software call that read the thread's CPU clock teaches an idle core's X_c from it, whatever share
// was assumed: a share counted too low (threads blocked on their jobs counted as competing) must not
// make the core look faster than it is. Without a CPU time, wall time / share as before.
TEST(LearnedCosts, ACallsCpuTimeTeachesXcWhateverTheShareAssumed) {
  const funcs::FunctionInfo* fn = funcs::find_function("accumulate");
  ASSERT_NE(fn, nullptr);
  model::CostParams seed;
  seed.xc = 3e9;
  seed.granularity = fn->granularity;
  CallObservation o;
  o.sw_units = 1e6;
  o.sw_wall_s = 1.1e-3;  // it had a core to itself: wall time about its CPU time
  o.share = 0.4;         // but was planned as one of many
  LearnedCosts measured;
  measured.seed(fn->id, seed);
  o.sw_cpu_s = 1e-3;
  for (int i = 0; i < 8; ++i) measured.observe(fn->id, o);
  EXPECT_NEAR(measured.params(fn->id).xc, 1e9, 1);
  LearnedCosts wall_only;
  wall_only.seed(fn->id, seed);
  o.sw_cpu_s = -1;
  for (int i = 0; i < 8; ++i) wall_only.observe(fn->id, o);
  EXPECT_NEAR(wall_only.params(fn->id).xc, 1e6 / 1.1e-3 / 0.4, 1);  // 2.3x the core's real rate
}

TEST(LearnedCosts, CorruptFileIsIgnoredWithAWarning) {
  const std::string path = temp_file("learned-corrupt.toml", "[calibration\nversion = = 1\n\x01\x02");
  std::string warning;
  EXPECT_FALSE(load_learned_costs(path, "emu", warning));
  EXPECT_NE(warning.find("ignoring learnt cost figures"), std::string::npos) << warning;
  std::remove(path.c_str());
}

TEST(LearnedCosts, ForeignFileIsIgnoredWithAWarning) {
  const std::string body =
      "[functions.accumulate]\nxc = 1e9\nxa = 2e9\no0_ns = 60.0\noc_ns = 400.0\nda_ns = 2000.0\nsamples_cpu = 5\n";
  // Another device kind on this host, and this device kind on another host.
  const std::string other_kind = temp_file("learned-kind.toml", "[calibration]\nversion = 1\ndevice = \"rtl\"\nhost = \"" +
                                                                    learned_host_name() + "\"\n" + body);
  const std::string other_host =
      temp_file("learned-host.toml", "[calibration]\nversion = 1\ndevice = \"emu\"\nhost = \"elsewhere\"\n" + body);
  std::string warning;
  EXPECT_FALSE(load_learned_costs(other_kind, "emu", warning));
  EXPECT_NE(warning.find("made for device 'rtl'"), std::string::npos) << warning;
  EXPECT_FALSE(load_learned_costs(other_host, "emu", warning));
  EXPECT_NE(warning.find("on host 'elsewhere'"), std::string::npos) << warning;
  EXPECT_TRUE(load_learned_costs(other_kind, "rtl", warning)) << warning;
  std::remove(other_kind.c_str());
  std::remove(other_host.c_str());
}

// Learnt figures correct the device's own; a device that now measures far otherwise (OpenCL's
// access = "copy" against "job" on a GPU, another emulated speedup) does not take them.
TEST(LearnedCosts, LearntFiguresFitOnlyADeviceThatMeasuresAlike) {
  model::AccelModel now;
  now.throughput = 1e9;
  now.latency_s = 100e-6;
  EXPECT_TRUE(learnt_figures_fit(LearntOnDevice{1e9, 100e-6}, now));
  EXPECT_TRUE(learnt_figures_fit(LearntOnDevice{0.45e9, 180e-6}, now));  // start-up noise: within 3x
  EXPECT_TRUE(learnt_figures_fit(LearntOnDevice{3e9, 100e-6}, now));     // exactly 3x still fits
  EXPECT_FALSE(learnt_figures_fit(LearntOnDevice{0.3e9, 100e-6}, now));  // X_a 3.3x slower
  EXPECT_FALSE(learnt_figures_fit(LearntOnDevice{4e9, 100e-6}, now));    // X_a 4x faster
  EXPECT_FALSE(learnt_figures_fit(LearntOnDevice{1e9, 400e-6}, now));    // D_a 4x and 300 us longer
  now.latency_s = 2e-6;
  EXPECT_TRUE(learnt_figures_fit(LearntOnDevice{1e9, 15e-6}, now));  // small latencies: within 20 us
  now.throughput = 0;
  EXPECT_TRUE(learnt_figures_fit(LearntOnDevice{0, 2e-6}, now));  // no benefit then and now
  EXPECT_FALSE(learnt_figures_fit(LearntOnDevice{1e9, 2e-6}, now));
  EXPECT_FALSE(learnt_figures_fit(LearntOnDevice{0, 2e-6}, model::AccelModel{1e9, 2e-6, 0, 0}));
  EXPECT_FALSE(learnt_figures_fit(LearntOnDevice{1e9, 2e-6}, model::AccelModel{NAN, 2e-6, 0, 0}));
}

TEST(LearnedCosts, ADeviceFigureWithoutItsPartnerIsRefused) {
  const std::string path = temp_file("learned-half.toml", "[calibration]\nversion = 1\ndevice = \"emu\"\nhost = \"" +
                                                              learned_host_name() +
                                                              "\"\n[functions.accumulate]\nxc = 1e9\nxa = 2e9\no0_ns = 60.0\n"
                                                              "oc_ns = 400.0\nda_ns = 2000.0\ndevice_xa = 2e9\n");
  std::string warning;
  EXPECT_FALSE(load_learned_costs(path, "emu", warning));
  EXPECT_NE(warning.find("needs both device_xa and device_da_ns"), std::string::npos) << warning;
  std::remove(path.c_str());
}

TEST(LearnedCosts, MissingFileIsNoWarning) {
  std::string warning = "stale";
  EXPECT_FALSE(load_learned_costs(::testing::TempDir() + "/no-such-learned.toml", "emu", warning));
  EXPECT_TRUE(warning.empty());
}

}  // namespace
}  // namespace tandem::client
