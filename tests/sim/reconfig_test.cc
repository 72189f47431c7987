// Algorithm 1 (thesis 5.4.7) and our sticky policy on hand-written engine states, including the two
// prohibitions, and the monitor's demand on scripted traces.
#include <gtest/gtest.h>

#include <set>

#include "engine/reconfig.hpp"

namespace tandem::engine {
namespace {

constexpr FunctionId kA = 1, kB = 2, kC = 3, kD = 4;
constexpr Time kP = 1'000'000;  // P = 1 ms
// 1 unit = 1 ns of SW work (X_c = 1e9): C_RECONFIG = 0.5 ms = 500'000 units, C_REPLICATE = P/2 = 500'000.

struct Rig {
  explicit Rig(uint32_t slots = 4) {
    config.slots = slots;
    for (FunctionId f : {kA, kB, kC, kD}) {
      config.known.set(f);
      config.models[f].throughput = 1e9;  // accelerator = CPU speed: a job of w units takes w ns
      config.models[f].reconfig_s = 1e-3;
    }
    engine = std::make_unique<Engine>(config);
    session = engine->open_session();
    MonitorConfig mc;
    mc.period_ns = kP;
    monitor = std::make_unique<Monitor>(config, mc);
    params.period_ns = kP;
    params.default_xc = 1e9;
  }
  void resident(SlotId s, FunctionId f) {
    ASSERT_TRUE(engine->load(s, f, 0, out));
    engine->configure_done(s, 0, out);
    out.clear();
  }
  void submit(FunctionId f, uint64_t work, Time now) {
    JobSpec j;
    j.function = f;
    j.workload = work;
    j.session = session;
    j.completion = ++key;
    engine->submit(j, now, out);
  }
  void request(FunctionId f) {  // a NOT_ACCELERATED demand packet
    JobSpec j;
    j.function = f;
    j.flags = TANDEM_FLAG_DEMAND_ONLY;
    j.session = session;
    engine->submit(j, 0, out);
  }
  // Samples the period ending at `now` and runs the policy; returns the slots it began to configure.
  std::vector<std::pair<SlotId, FunctionId>> period(ReconfigPolicy& policy, Time now) {
    monitor->sample(*engine, now);
    out.clear();
    policy.on_period(*engine, *monitor, now, out);
    std::vector<std::pair<SlotId, FunctionId>> loads;
    for (const Action& a : out) {
      if (a.kind == ActionKind::begin_configure) loads.emplace_back(a.slot, a.function);
    }
    out.clear();
    return loads;
  }
  EngineConfig config;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Monitor> monitor;
  ReconfigParams params;
  SessionId session = 0;
  uint64_t key = 0;
  Actions out;
};

using Loads = std::vector<std::pair<SlotId, FunctionId>>;

TEST(Algorithm1, ThresholdsComeFromTable53) {
  ReconfigParams p;
  p.period_ns = 100'000'000;
  Algorithm1Policy a(p);
  EXPECT_DOUBLE_EQ(a.c_reconfig_s(), 0.5e-3);
  EXPECT_DOUBLE_EQ(a.c_replicate_s(), 50e-3) << "C_REPLICATE = P / 2";
}

TEST(Algorithm1, ReplicatesTheMostDemandedAcceleratorIntoIdleLowDemandSlots) {
  Rig r;
  r.resident(0, kA);
  r.resident(1, kB);
  r.resident(2, kC);
  // A: 2 ms of work queued behind a running job (demand 2.0 ms > C_REPLICATE); B and C idle, no demand.
  r.monitor->sample(*r.engine, 0);
  r.submit(kA, 1'000'000, 0);
  r.submit(kA, 1'000'000, 0);
  Algorithm1Policy alg(r.params);
  const Loads loads = r.period(alg, 1000);
  // Every idle slot below C_RECONFIG replicates A: s_h does not change during the loop.
  EXPECT_EQ(loads, (Loads{{1, kA}, {2, kA}, {3, kA}}));
  EXPECT_EQ(r.engine->slot(0).state, SlotState::busy) << "prohibition 1: the busy slot is left alone";
  // A slot is unusable for the reconfiguration delay.
  EXPECT_EQ(r.engine->accelerators(kA), 1u);
  EXPECT_EQ(r.engine->configuring(kA), 3u);
  r.engine->configure_done(1, 1000 + 1'000'000, r.out);
  EXPECT_EQ(r.engine->accelerators(kA), 2u);
}

TEST(Algorithm1, KeepsSlotsWhoseDemandIsAboveCReconfig) {
  Rig r;
  r.resident(0, kA);
  r.resident(1, kB);
  r.monitor->sample(*r.engine, 0);
  r.submit(kA, 3'000'000, 0);  // A: 3 ms per accelerator
  r.submit(kB, 600'000, 0);    // B: 0.6 ms >= C_RECONFIG, runs and finishes within the period
  r.engine->job_finished(1, Status::ok, 0, 600'000, r.out);
  Algorithm1Policy alg(r.params);
  // B's slot is idle but was used: its demand (work submitted in the period) keeps it. Slots 2 and 3
  // (empty) replicate A.
  EXPECT_EQ(r.period(alg, 1'000'000), (Loads{{2, kA}, {3, kA}}));
  EXPECT_EQ(r.engine->slot(1).function, kB);
}

TEST(Algorithm1, LoadsRequestedFunctionsIntoFreeQueuesAndClearsTheBitmap) {
  Rig r(3);
  r.resident(0, kA);
  r.monitor->sample(*r.engine, 0);
  r.request(kC);
  r.request(kB);
  EXPECT_TRUE(r.engine->requests()[kB] && r.engine->requests()[kC]);
  Algorithm1Policy alg(r.params);
  // No accelerator above C_REPLICATE: each idle low-demand slot takes the next request.
  // Slot 0 (A: idle, no demand) takes B, empty slot 1 takes C; nothing is left for slot 2.
  EXPECT_EQ(r.period(alg, kP), (Loads{{0, kB}, {1, kC}}));
  EXPECT_TRUE(r.engine->requests().none()) << "line 19";
  // With no request and no overloaded accelerator nothing changes.
  for (SlotId s = 0; s < 3; ++s) r.engine->configure_done(s, 2 * kP, r.out);
  EXPECT_TRUE(r.period(alg, 3 * kP).empty());
}

TEST(Algorithm1, NeverStrandsANonEmptyQueue) {
  // Prohibition 2 through the engine: the only slot of a function with queued jobs is never
  // reconfigured; a busy slot never is either.
  Rig r(3);
  r.resident(0, kA);
  r.resident(2, kB);
  ASSERT_TRUE(r.engine->load(1, kC, 0, r.out));  // slot 1 loads C
  r.submit(kC, 5'000'000, 10);                    // queued: C's only slot is still configuring
  r.monitor->sample(*r.engine, 0);
  r.submit(kA, 2'000'000, 20);                    // A: busy, 2 ms queued behind: the hottest
  r.submit(kA, 2'000'000, 20);
  r.out.clear();
  EXPECT_FALSE(r.engine->can_reconfigure(1));
  EXPECT_FALSE(r.engine->load(1, kA, 20, r.out)) << "C's queue would be stranded";
  EXPECT_FALSE(r.engine->can_reconfigure(0)) << "busy";
  Algorithm1Policy alg(r.params);
  // Only B's idle slot changes; C's configuring slot and A's busy slot stay.
  EXPECT_EQ(r.period(alg, 100), (Loads{{2, kA}}));
  EXPECT_EQ(r.engine->slot(1).function, kC);
  EXPECT_EQ(r.engine->slot(1).state, SlotState::configuring);
  r.engine->configure_done(1, 1'000'000, r.out);  // C's slot is ready and runs the queued job
  EXPECT_EQ(r.engine->slot(1).state, SlotState::busy);
}

TEST(Algorithm1, ThresholdsUseTheFunctionsCpuThroughput) {
  Rig r(2);
  r.resident(0, kA);
  r.resident(1, kB);
  r.params.xc[kB] = 1e8;  // B's SW is 10x slower: 100'000 units are 1 ms of SW work
  r.monitor->sample(*r.engine, 0);
  r.submit(kB, 100'000, 0);
  r.engine->job_finished(1, Status::ok, 0, 100'000, r.out);
  r.submit(kA, 400'000, 0);  // A: 0.4 ms, below C_REPLICATE
  r.request(kC);
  Algorithm1Policy alg(r.params);
  // B's idle slot has 1 ms of demand (>= C_RECONFIG): kept. A's slot is busy. C waits.
  EXPECT_TRUE(r.period(alg, kP).empty());
  EXPECT_TRUE(r.engine->requests().none());
}

TEST(Monitor, DemandSeesJobsThatFilledAndDrainedWithinThePeriod) {
  Rig r(1);
  r.resident(0, kA);
  r.monitor->sample(*r.engine, 0);
  // Two 100 us jobs submitted and finished within the period: nothing remains at the sample, but
  // the submitted work is the demand (thesis 5.4.7: either metric alone misleads).
  r.submit(kA, 100'000, 0);
  r.engine->job_finished(0, Status::ok, 0, 100'000, r.out);
  r.submit(kA, 100'000, 200'000);
  r.engine->job_finished(0, Status::ok, 0, 300'000, r.out);
  r.monitor->sample(*r.engine, kP);
  const abi::FunctionMetrics& m = r.monitor->metrics(kA);
  EXPECT_EQ(m.outstanding_work, 0u);
  EXPECT_EQ(m.submitted_work, 200'000u);
  EXPECT_DOUBLE_EQ(m.demand, 200'000.0);
  EXPECT_NEAR(m.utilization, 0.2, 1e-12);
  // Work submitted before the period and still queued counts through the remaining work.
  r.submit(kA, 3'000'000, kP);
  r.submit(kA, 2'000'000, kP);
  r.monitor->sample(*r.engine, 2 * kP);
  r.monitor->sample(*r.engine, 3 * kP);
  EXPECT_EQ(r.monitor->metrics(kA).submitted_work, 0u);
  EXPECT_DOUBLE_EQ(r.monitor->metrics(kA).demand, 5'000'000.0) << "running + queued, whole workloads";
  EXPECT_DOUBLE_EQ(r.monitor->metrics(kA).utilization, 1.0);
}

TEST(Sticky, FillsEmptySlotsWithDistinctFunctionsAndKeepsBusyOnes) {
  Rig r(4);
  StickyPolicy sticky(r.params);
  r.request(kC);
  // Empty slots: the requested function first, then the others, one slot each.
  const Loads loads = r.period(sticky, kP);
  ASSERT_EQ(loads.size(), 4u);
  EXPECT_EQ(loads[0].second, kC);
  std::set<FunctionId> distinct;
  for (const auto& l : loads) distinct.insert(l.second);
  EXPECT_EQ(distinct.size(), 4u);
}

TEST(Sticky, ReplicatesInProportionToDemandWithoutTakingSlotsInUse) {
  Rig r(4);
  r.resident(0, kA);
  r.resident(1, kB);
  r.resident(2, kC);
  r.resident(3, kD);
  r.monitor->sample(*r.engine, 0);
  StickyPolicy sticky(r.params);
  r.submit(kA, 2'000'000, 0);
  r.submit(kA, 2'000'000, 0);  // A: 4 ms of demand
  r.submit(kB, 600'000, 0);    // B: 0.6 ms, done within the period: in use, one slot is enough
  r.engine->job_finished(1, Status::ok, 0, 600'000, r.out);
  // Targets: A 3 (4 ms over 3 replicas is still above C_REPLICATE = 0.5 ms), B 1, C and D 0.
  EXPECT_EQ(r.period(sticky, kP), (Loads{{2, kA}, {3, kA}}));
  EXPECT_EQ(r.engine->slot(1).function, kB);
  // Nothing moves while the figures stay the same (no churn).
  for (SlotId s = 2; s < 4; ++s) r.engine->configure_done(s, 2 * kP, r.out);
  r.out.clear();
  EXPECT_TRUE(r.period(sticky, 2 * kP).empty());
}

}  // namespace
}  // namespace tandem::engine
