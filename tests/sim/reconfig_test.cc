// Algorithm 1 (thesis 5.4.7) and our sticky and reactive policies on hand-written engine states,
// including the two prohibitions, and the monitor's demand on scripted traces.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "config/config.hpp"
#include "engine/reconfig.hpp"

namespace tandem::engine {
namespace {

constexpr FunctionId kA = 1, kB = 2, kC = 3, kD = 4, kE = 5, kF = 6;
constexpr Time kP = 1'000'000;  // P = 1 ms
// 1 unit = 1 ns of SW work (X_c = 1e9): C_RECONFIG = 0.5 ms = 500'000 units, C_REPLICATE = P/2 = 500'000.

struct Rig {
  explicit Rig(uint32_t slots = 4) {
    config.slots = slots;
    for (FunctionId f : {kA, kB, kC, kD, kE, kF}) {
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
  // A demand packet for f at `now`, handed to an event-driven policy as the drivers do (on every
  // NOT_ACCELERATED completion); returns the slots it began to configure.
  std::vector<std::pair<SlotId, FunctionId>> demand(ReconfigPolicy& policy, FunctionId f, Time now) {
    out.clear();
    JobSpec j;
    j.function = f;
    j.flags = TANDEM_FLAG_DEMAND_ONLY;
    j.session = session;
    engine->submit(j, now, out);
    for (size_t i = 0; i < out.size(); ++i) {
      const Action a = out[i];
      if (a.kind == ActionKind::complete && a.status == Status::not_accelerated && policy.reacts()) {
        policy.on_demand(*engine, *monitor, a.function, now, out);
      }
    }
    std::vector<std::pair<SlotId, FunctionId>> loads;
    for (const Action& a : out) {
      if (a.kind == ActionKind::begin_configure) loads.emplace_back(a.slot, a.function);
    }
    out.clear();
    return loads;
  }
  void finish(SlotId s, Time now) {
    engine->job_finished(s, Status::ok, 0, now, out);
    out.clear();
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

// ---------------------------------------------------------------- reactive (sticky, event-driven)
// In the rig every reconfiguration takes 1 ms, so a resident may give its slot to a request after
// min(20 ms, 1 ms) = 1 ms idle.

constexpr Time kMs = 1'000'000;

TEST(Reactive, LoadsARequestedFunctionAtOnceAndTheDelayStillApplies) {
  Rig r(4);
  for (FunctionId f : {kA, kB, kC, kD}) r.resident(f - kA, f);
  const auto reactive = config::make_policy("reactive", r.params);
  const auto sticky = config::make_policy("sticky", r.params);
  EXPECT_TRUE(reactive->reacts());
  EXPECT_EQ(reactive->name(), "reactive");
  EXPECT_FALSE(sticky->reacts()) << "period-driven: the drivers never call its on_demand";
  EXPECT_TRUE(r.period(*reactive, 0).empty()) << "no demand: nothing moves";
  // 5.4 ms into the period, E is asked for: it is loaded now, not at the period boundary (P = 1 ms
  // here, 100 ms in the thesis's slow case). Every resident has been idle 5.4 ms: slot 0 goes.
  const Time t = 5 * kMs + 400'000;
  EXPECT_EQ(r.demand(*reactive, kE, t), (Loads{{0, kE}}));
  const SlotView v = r.engine->slot(0);
  EXPECT_EQ(v.state, SlotState::configuring);
  EXPECT_EQ(v.until, t + kMs) << "the reconfiguration delay still applies";
  EXPECT_EQ(r.engine->accelerators(kE), 0u) << "not an accelerator until configure_done";
  EXPECT_NE(r.engine->route(kE), kNone) << "routed: its jobs queue while it loads";
  r.engine->configure_done(0, t + kMs, r.out);
  EXPECT_EQ(r.engine->accelerators(kE), 1u);
  // The same request to sticky between periods changes nothing.
  Rig s(4);
  for (FunctionId f : {kA, kB, kC, kD}) s.resident(f - kA, f);
  EXPECT_TRUE(s.demand(*sticky, kE, t).empty());
}

TEST(Reactive, TakesOnlyEmptyOrLongIdleSlotsNeverBusyOrLoadingOnes) {
  Rig r(4);
  r.resident(0, kA);
  r.resident(2, kC);
  r.resident(3, kD);
  const auto reactive = config::make_policy("reactive", r.params);
  const Time t = 10 * kMs;
  r.submit(kA, 5 * kMs, t - 2 * kMs);            // slot 0: busy until t + 3 ms
  ASSERT_TRUE(r.engine->load(1, kB, t - kMs / 2, r.out));  // slot 1: B still loading
  r.submit(kB, kMs, t - kMs / 2);                 // ... with a job queued on it (prohibition 2)
  r.submit(kC, 100'000, t - kMs);                 // slot 2: C used until t - 0.9 ms
  r.finish(2, t - 900'000);
  r.out.clear();                                  // slot 3: D idle since 0
  EXPECT_EQ(r.demand(*reactive, kE, t), (Loads{{3, kE}}));
  // F: nothing else may go (busy, loading, C idle 0.9 ms only): it is refused, not forced.
  EXPECT_TRUE(r.demand(*reactive, kF, t).empty());
  EXPECT_EQ(r.engine->slot(0).function, kA);
  EXPECT_EQ(r.engine->slot(1).function, kB);
  EXPECT_EQ(r.engine->slot(2).function, kC);
  // Once C has been idle for one delay, F's next request takes it.
  EXPECT_EQ(r.demand(*reactive, kF, t + 200'000), (Loads{{2, kF}}));
}

TEST(Reactive, TakesAReplicaBeforeAFunctionsOnlySlot) {
  Rig r(4);
  r.resident(0, kA);
  r.resident(1, kA);
  r.resident(2, kB);
  r.resident(3, kC);
  const auto reactive = config::make_policy("reactive", r.params);
  const Time t = 10 * kMs;
  r.submit(kA, 100'000, 4 * kMs);  // both A replicas used until 4.1 ms; B and C idle since 0
  r.submit(kA, 100'000, 4 * kMs);
  r.finish(0, 4 * kMs + 100'000);
  r.finish(1, 4 * kMs + 200'000);
  // A keeps one slot; among the replicas the longer idle goes.
  EXPECT_EQ(r.demand(*reactive, kD, t), (Loads{{0, kD}}));
  // With no replica left, the longest idle: B (slot 2) before C? Both since 0: the first found.
  EXPECT_EQ(r.demand(*reactive, kE, t), (Loads{{2, kE}}));
}

TEST(Reactive, DoesNotThrash) {
  Rig r(4);
  for (FunctionId f : {kA, kB, kC, kD}) r.resident(f - kA, f);
  const auto reactive = config::make_policy("reactive", r.params);
  const Time t = 10 * kMs;
  EXPECT_EQ(r.demand(*reactive, kE, t), (Loads{{0, kE}}));
  // E is routed from now on: its further requests are not turned away, so nothing reacts.
  EXPECT_TRUE(r.demand(*reactive, kE, t + 1).empty());
  // At most one reaction per function per delay, even if something else took its slot meanwhile
  // (slots 1-3 have been idle for 10 ms).
  ASSERT_TRUE(r.engine->load(0, kA, t + 100'000, r.out));
  r.out.clear();
  EXPECT_EQ(r.engine->route(kE), kNone);
  EXPECT_TRUE(r.demand(*reactive, kE, t + 500'000).empty());
  EXPECT_EQ(r.demand(*reactive, kE, t + kMs), (Loads{{1, kE}}));
  // A freshly loaded slot is not idle while it loads, and once ready its function has one delay of
  // grace: F takes C's slot (idle 12.5 ms), not E's (idle 0.5 ms) nor A's (loading).
  r.engine->configure_done(1, t + 2 * kMs, r.out);
  r.out.clear();
  EXPECT_EQ(r.demand(*reactive, kF, t + 2 * kMs + 500'000), (Loads{{2, kF}}));
}

TEST(Reactive, WaitsLongerAfterTakingASlotThatWasStillInUse) {
  // Idle threshold min(0.1 ms x scale, 1 ms); each judged eviction doubles or halves the scale.
  for (const bool premature : {true, false}) {
    Rig r(3);
    r.resident(0, kA);
    r.resident(1, kB);
    r.resident(2, kC);
    const auto reactive = config::make_policy("reactive:react_idle_ms=0.1:react_adapt=1", r.params);
    const Time t = 10 * kMs;
    ASSERT_EQ(r.demand(*reactive, kD, t), (Loads{{0, kD}}));
    // A, evicted at t, is asked for again: within its delay (still in use: scale 2, threshold
    // 0.2 ms) or after it (fair: scale 0.5, 0.05 ms). Its reaction takes B's slot either way.
    const Time again = premature ? t + 200'000 : t + 1'200'000;
    ASSERT_EQ(r.demand(*reactive, kA, again), (Loads{{1, kA}}));
    // C's slot, used until 0.1 ms ago, is the only candidate left for E.
    r.submit(kC, 100'000, again + 100'000);
    r.finish(2, again + 200'000);
    const Loads loads = r.demand(*reactive, kE, again + 300'000);
    if (premature) {
      EXPECT_TRUE(loads.empty()) << "C idle 0.1 ms < 0.2 ms";
    } else {
      EXPECT_EQ(loads, (Loads{{2, kE}})) << "C idle 0.1 ms >= 0.05 ms";
    }
  }
}

TEST(Reactive, ThePeriodOnlyAddsReplicasItLeavesChasingToTheReactions) {
  // Every resident was used 0.5 ms ago, so E's request finds no slot to take. At the period,
  // sticky (which chases new demand until it learns that it does not pay) displaces one for E;
  // reactive leaves it: a slot will be taken by E's next request once one has been idle long enough.
  for (const char* name : {"sticky", "reactive"}) {
    Rig r(2);
    r.resident(0, kA);
    r.resident(1, kB);
    const auto policy = config::make_policy(name, r.params);
    r.period(*policy, 0);
    r.submit(kA, 10'000, 0);  // A and B: 10 us of work each, E's request stands for 100 us
    r.submit(kB, 10'000, 0);
    r.finish(0, 400'000);
    r.finish(1, 500'000);
    EXPECT_TRUE(r.demand(*policy, kE, 900'000).empty()) << name;
    const Loads loads = r.period(*policy, kP);
    if (std::string_view(name) == "sticky") {
      EXPECT_EQ(loads.size(), 1u) << name;
    } else {
      EXPECT_TRUE(loads.empty()) << name;
      EXPECT_EQ(r.demand(*policy, kE, 1'500'000), (Loads{{0, kE}})) << "A idle 1.1 ms";
    }
  }
}

TEST(Reactive, SpecAndParameters) {
  ReconfigParams p;
  EXPECT_FALSE(config::make_policy("sticky", p)->reacts());
  EXPECT_TRUE(config::make_policy("sticky:react=1", p)->reacts());
  EXPECT_FALSE(config::make_policy("reactive:react=0", p)->reacts());
  EXPECT_NO_THROW(config::make_policy("reactive:react_idle_ms=5:react_idle_delays=0.5:react_period_chase=1", p));
  EXPECT_NO_THROW(config::make_policy("reactive:react_adapt=0:react_payoff=0:react_scale_min=1:react_scale_max=4", p));
  EXPECT_THROW(config::make_policy("reactive:react_idle=5", p), Error);
  EXPECT_FALSE(config::make_policy("algorithm1", p)->reacts()) << "Algorithm 1 stays period-driven";
  const std::vector<std::string> names = config::policy_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "reactive"), names.end());
}

}  // namespace
}  // namespace tandem::engine
