// The discrete-event simulator: determinism, conservation of work, and the sanity laws of the thesis's
// evaluation (speedup 0 changes nothing; a static single-function cluster approaches Eq 5.8).
#include <gtest/gtest.h>

#include "model/cost_model.hpp"
#include "sim/experiment.hpp"
#include "sim/simulator.hpp"
#include "sim/workload.hpp"

namespace tandem::sim {
namespace {

constexpr engine::FunctionId kF0 = TANDEM_FN_WORK_BASE;

WorkloadSpec small_workload(uint32_t apps, uint32_t functions, double total_s = 1.0) {
  WorkloadSpec w;
  w.apps = apps;
  w.functions = functions;
  w.first_function = kF0;
  w.total_sw_s = total_s;
  w.seed = 7;
  return w;
}

SimConfig dynamic_config(double speedup, double period_ms, const std::string& policy) {
  SimConfig c;
  c.speedup = speedup;
  c.period_ns = static_cast<Time>(period_ms * 1e6);
  c.policy = policy;
  return c;
}

TEST(Workload, CallsAreUniformAndAddUpToTheTotal) {
  WorkloadSpec w = small_workload(4, 16, 8.0);
  const std::vector<AppSpec> apps = make_workload(w);
  ASSERT_EQ(apps.size(), 4u);
  const uint64_t per_app = static_cast<uint64_t>(8.0 * w.cpu_hz) / 4;
  std::array<int, 16> seen{};
  for (const AppSpec& a : apps) {
    EXPECT_EQ(a.units(), per_app);
    for (size_t i = 0; i < a.calls.size(); ++i) {
      const LibraryCall& c = a.calls[i];
      ASSERT_GE(c.function, kF0);
      ASSERT_LT(c.function, kF0 + 16);
      ++seen[c.function - kF0];
      EXPECT_LE(c.units, static_cast<uint64_t>(0.1 * w.cpu_hz) + 1);
      if (i + 1 < a.calls.size()) {  // the last is trimmed
        EXPECT_GE(c.units, static_cast<uint64_t>(1e-3 * w.cpu_hz));
      }
    }
  }
  for (int n : seen) EXPECT_GT(n, 0) << "every function is called";
  // Different apps, different lists; the same seed, the same lists.
  EXPECT_NE(apps[0].calls[0].units, apps[1].calls[0].units);
  const std::vector<AppSpec> again = make_workload(w);
  EXPECT_EQ(again[3].calls.size(), apps[3].calls.size());
  EXPECT_EQ(again[3].calls.back().units, apps[3].calls.back().units);
}

TEST(Simulator, SameSeedSameBytes) {
  const std::vector<AppSpec> apps = make_workload(small_workload(4, 16));
  SimConfig c = dynamic_config(4, 1, "algorithm1");
  c.trace = true;
  c.jitter_seed = 99;
  const SimResult a = simulate(c, apps);
  const SimResult b = simulate(c, apps);
  EXPECT_EQ(a.makespan, b.makespan);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.app_finish, b.app_finish);
  EXPECT_EQ(chrome_trace_json(a, apps), chrome_trace_json(b, apps));
  EXPECT_EQ(residency_csv(a), residency_csv(b));
  EXPECT_GT(a.reconfigurations, 0u);
  // Another repetition seed perturbs the run (it models a real machine's noise).
  c.jitter_seed = 100;
  EXPECT_NE(simulate(c, apps).makespan, a.makespan);
}

// Automatic mode with measured progress (issue 15): its decisions come from virtual time only, so the
// same configuration decides the same, and every unit is still processed once.
TEST(Simulator, MeasuredCpuRateIsDeterministicAndConservesWork) {
  const std::vector<AppSpec> apps = make_workload(small_workload(6, 4));
  SimConfig c = dynamic_config(4, 1, "algorithm1");
  c.measured_cpu_rate = true;
  c.jitter_seed = 7;
  const SimResult a = simulate(c, apps);
  const SimResult b = simulate(c, apps);
  EXPECT_EQ(a.makespan, b.makespan);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.sw_units, b.sw_units);
  EXPECT_EQ(a.hw_units, b.hw_units);
  EXPECT_EQ(a.jobs_completed, b.jobs_completed);
  EXPECT_EQ(a.sw_units + a.hw_units, a.total_units);
  // Six apps time-slice two CPUs: the measured rate is below the idle core's, so the splits differ
  // from the model's (more goes to the hardware).
  c.measured_cpu_rate = false;
  const SimResult modelled = simulate(c, apps);
  EXPECT_NE(modelled.hw_units, a.hw_units);
}

// libtandem's rule (SimConfig::split_needs_free_core): an app without a core to itself does not split its
// call; where every app has a core (and the engine none) the rule changes nothing.
TEST(Simulator, NoSplitWithoutAFreeCoreAsLibtandemDecides) {
  std::vector<AppSpec> apps(3);
  for (AppSpec& a : apps) a.calls.assign(20, LibraryCall{kF0, 2'000'000, 0});  // 3 ms each at 667 MHz
  SimConfig c = dynamic_config(4, 1, "none");
  c.resident.assign(c.slots, kF0);
  const SimResult split = simulate(c, apps);
  c.split_needs_free_core = true;
  const SimResult whole = simulate(c, apps);
  EXPECT_EQ(whole.sw_units + whole.hw_units, whole.total_units);
  ASSERT_GT(split.sw_units, 0u);
  // Three apps on two CPUs: every call wholly on the accelerators (4x a core) while all three are in
  // calls; only the last calls, once fewer apps remain than CPUs, are split.
  EXPECT_LT(whole.sw_units * 4, split.sw_units);
  // Two apps on two CPUs: a core each, the same simulation...
  apps.resize(2);
  c.split_needs_free_core = false;
  const SimResult two = simulate(c, apps);
  c.split_needs_free_core = true;
  const SimResult two_rule = simulate(c, apps);
  EXPECT_EQ(two_rule.events, two.events);
  EXPECT_EQ(two_rule.makespan, two.makespan);
  EXPECT_EQ(two_rule.sw_units, two.sw_units);
  // ...unless the engine keeps a core busy.
  c.engine_cores = 1;
  EXPECT_LT(simulate(c, apps).sw_units * 4, two.sw_units);
}

// A real engine's busy cores (SimConfig::engine_cores) are CPU the applications do not get: their software
// runs at (cpus - engine_cores) / cpus of a CPU's speed. The software-only baseline has an idle engine.
TEST(Simulator, AnEnginesBusyCoresSlowTheApplicationsSoftware) {
  std::vector<AppSpec> apps(2);
  for (AppSpec& a : apps) a.calls.assign(10, LibraryCall{kF0, 2'000'000, 0});
  SimConfig c = dynamic_config(4, 1, "none");
  c.partitioner.policy = engine::PartitionPolicy::sw_only;
  const Time idle = simulate(c, apps).makespan;
  c.engine_cores = 1;
  const Time busy = simulate(c, apps).makespan;
  EXPECT_NEAR(static_cast<double>(busy) / static_cast<double>(idle), 2.0, 0.01);
  EXPECT_EQ(simulate_sw_baseline(c, apps).makespan, idle);
}

// Data access on (docs/access.md): the method is chosen per call as libtandem chooses, deterministically,
// and each method's costs land where they belong (the slot's time, the calling CPU's staging copy).
SimConfig access_config(const std::string& method, double bytes_per_unit, bool registered) {
  SimConfig c = dynamic_config(4, 1, "algorithm1");
  c.access.method = method;
  c.access.bytes_per_unit = bytes_per_unit;
  c.access.registered = registered;
  c.access.remote = true;
  c.access.transfer.link_bps = 2e9;
  c.access.transfer.dma_setup_s = 1e-6;
  c.access.transfer.sg_setup_s = 2e-6;
  c.access.transfer.sg_page_s = 50e-9;
  c.access.host.memcpy_bps = 8e9;
  c.access.host.gather_bps = 4e9;
  c.access.host.gather_page_s = 100e-9;
  c.access.host.handoff_s = 6e-6;
  return c;
}

TEST(SimulatorAccess, NoBytesIsTheWorldWithoutAccessCosts) {
  const std::vector<AppSpec> apps = make_workload(small_workload(4, 4));
  const SimResult plain = simulate(dynamic_config(4, 1, "algorithm1"), apps);
  SimConfig c = access_config("copy", 0, false);  // every figure set, but no bytes: off
  const SimResult off = simulate(c, apps);
  EXPECT_EQ(off.makespan, plain.makespan);
  EXPECT_EQ(off.events, plain.events);
  EXPECT_EQ(off.bytes_moved, 0u);
  EXPECT_EQ(off.calls_by_method, plain.calls_by_method);
}

TEST(SimulatorAccess, TheChoiceIsDeterministicAndFollowsTheBuffers) {
  const std::vector<AppSpec> apps = make_workload(small_workload(4, 4));
  const SimConfig heap = access_config("auto", 2, false);
  const SimResult a = simulate(heap, apps);
  const SimResult b = simulate(heap, apps);
  EXPECT_EQ(a.makespan, b.makespan);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.calls_by_method, b.calls_by_method);
  // Heap buffers: never zero-copy (nothing to map in place), and every call counted once.
  EXPECT_EQ(a.calls_by_method[TANDEM_ACCESS_ZERO_COPY], 0u);
  EXPECT_EQ(a.calls_by_method[TANDEM_ACCESS_COPY] + a.calls_by_method[TANDEM_ACCESS_SCATTER_GATHER], a.calls);
  EXPECT_GT(a.bytes_moved, 0u);
  // Cheaper gathering than copying: calls large enough to repay scatter-gather's set-up go to it.
  SimConfig fast_gather = heap;
  fast_gather.access.host.memcpy_bps = 1e9;
  fast_gather.access.host.gather_bps = 40e9;
  fast_gather.access.host.gather_page_s = 0;
  fast_gather.access.host.handoff_s = 0;
  const SimResult g = simulate(fast_gather, apps);
  EXPECT_GT(g.calls_by_method[TANDEM_ACCESS_SCATTER_GATHER], 0u);
  EXPECT_EQ(g.calls_by_method[TANDEM_ACCESS_COPY] + g.calls_by_method[TANDEM_ACCESS_SCATTER_GATHER], g.calls);
  EXPECT_EQ(a.calls_by_method[TANDEM_ACCESS_COPY], a.calls);
  // Session memory: in place, always.
  const SimResult reg = simulate(access_config("auto", 2, true), apps);
  EXPECT_EQ(reg.calls_by_method[TANDEM_ACCESS_ZERO_COPY], reg.calls);
  EXPECT_EQ(reg.hw_units + reg.sw_units, reg.total_units);
}

TEST(SimulatorAccess, EachMethodCostsWhereItShould) {
  const std::vector<AppSpec> apps = make_workload(small_workload(2, 1));
  SimConfig c = access_config("zero_copy", 4, true);
  c.partitioner.policy = engine::PartitionPolicy::hw_only;
  c.policy = "none";
  c.resident = {kF0};
  const SimResult zero = simulate(c, apps);
  c.access.method = "copy";
  const SimResult copy = simulate(c, apps);
  // The same jobs; the copy's staging is CPU time the zero-copy run does not spend.
  EXPECT_EQ(copy.hw_units, zero.hw_units);
  EXPECT_GT(copy.cpu_busy_ns, zero.cpu_busy_ns);
  // A slower link lengthens the slots' busy time of every method that crosses it.
  c.access.method = "zero_copy";
  c.access.transfer.link_bps = 0.2e9;
  const SimResult slow = simulate(c, apps);
  EXPECT_GT(slow.slot_busy_ns, zero.slot_busy_ns);
  EXPECT_GT(slow.makespan, zero.makespan);
  for (const SimResult* r : {&zero, &copy, &slow}) EXPECT_EQ(r->hw_units + r->sw_units, r->total_units);
}

// A PHASE/V session's device TLB in the simulator (issue 12): one application, one slot, one job per
// call, so every read of a call goes through the TLB in one job.
SimConfig translation_config(const std::string& mode, bool random) {
  SimConfig c = dynamic_config(4, 1, "none");
  c.slots = 1;
  c.resident = {kF0};
  c.partitioner.policy = engine::PartitionPolicy::hw_only;
  c.partitioner.jobs_per_round = 1;
  c.translation.mode = mode;
  c.translation.random = random;
  c.translation.tlb.entries = 64;  // seed 004's: 64 entries, direct mapped
  c.translation.tlb.ways = 1;
  c.translation.tlb.walk_reads = 1.5;
  return c;
}

std::vector<AppSpec> one_app(std::initializer_list<uint64_t> call_units) {
  AppSpec a;
  for (uint64_t u : call_units) a.calls.push_back({kF0, u, 0});
  return {a};
}

TEST(SimulatorTranslation, AisleHasNoTlbAndPhasevChargesEveryWalk) {
  const std::vector<AppSpec> apps = one_app({131072});  // 16-byte reads over 2 MiB: 512 pages, 8x the TLB
  const SimResult aisle = simulate(translation_config("aisle", true), apps);
  EXPECT_EQ(aisle.tlb_hits + aisle.tlb_misses, 0u);
  const SimConfig c = translation_config("phasev", true);
  const SimResult phasev = simulate(c, apps);
  EXPECT_EQ(phasev.tlb_hits + phasev.tlb_misses, 131072u) << "one lookup per pointer-chasing read";
  // Uniform reads over 8x the entries of a direct-mapped TLB hit about 1 time in 8.
  const double miss_ratio = static_cast<double>(phasev.tlb_misses) / 131072.0;
  EXPECT_NEAR(miss_ratio, 0.875, 0.01);
  // Each walk costs 1.5 reads of the function's per-unit time (as the emulated fabric charges it).
  const double per_unit_ns = 1e9 / (c.speedup * c.cpu_hz);
  const auto walks_ns = static_cast<Time>(std::ceil(static_cast<double>(phasev.tlb_misses) * 1.5 * per_unit_ns));
  EXPECT_EQ(phasev.slot_busy_ns - aisle.slot_busy_ns, walks_ns);
  EXPECT_GT(phasev.makespan, aisle.makespan);
  EXPECT_EQ(phasev.hw_units, aisle.hw_units);
  // Deterministic: the same reads, the same walks.
  const SimResult again = simulate(c, apps);
  EXPECT_EQ(again.tlb_misses, phasev.tlb_misses);
  EXPECT_EQ(again.makespan, phasev.makespan);
}

TEST(SimulatorTranslation, AWorkingSetThatFitsMissesOncePerPage) {
  // 16384 reads over 256 KiB = 64 pages: each page misses once (64 contiguous pages fill the 64 sets),
  // and the second call reads the same buffer through a warm TLB.
  const SimResult r = simulate(translation_config("phasev", true), one_app({16384, 16384}));
  EXPECT_EQ(r.tlb_misses, 64u);
  EXPECT_EQ(r.tlb_hits, 2u * 16384 - 64);
  // Streaming reads look a page up once: 2 MiB in order through 64 entries misses on every page.
  const SimResult seq = simulate(translation_config("phasev", false), one_app({131072}));
  EXPECT_EQ(seq.tlb_hits + seq.tlb_misses, 512u);
  EXPECT_EQ(seq.tlb_misses, 512u);
}

TEST(Simulator, FigureFilesDoNotDependOnThreads) {
  FigureSpec spec = thesis_figure("5.15", true);
  RunOptions o;
  o.seeds = 2;
  o.reps = 2;
  o.threads = 1;
  const std::string one = figure_csv(run_figure(spec, o));
  o.threads = 3;
  EXPECT_EQ(figure_csv(run_figure(spec, o)), one);
}

// Every unit of work is processed exactly once: by a SW step or by a completed job.
TEST(Simulator, ConservesWork) {
  const std::vector<AppSpec> apps = make_workload(small_workload(6, 16));
  struct Case {
    const char* name;
    SimConfig config;
  };
  std::vector<Case> cases;
  cases.push_back({"algorithm1 P=1ms", dynamic_config(3, 1, "algorithm1")});
  cases.push_back({"algorithm1 P=100ms", dynamic_config(10, 100, "algorithm1")});
  cases.push_back({"sticky P=1ms", dynamic_config(2, 1, "sticky")});
  cases.push_back({"reactive P=1ms", dynamic_config(2, 1, "reactive")});
  cases.push_back({"reactive P=100ms", dynamic_config(10, 100, "reactive")});
  SimConfig one_job = dynamic_config(5, 1, "algorithm1");
  one_job.partitioner.jobs_per_round = 0;
  cases.push_back({"one job per replica", one_job});
  SimConfig no_rebalance = dynamic_config(5, 1, "none");
  no_rebalance.resident.assign(8, kF0);
  no_rebalance.partitioner.rebalance = false;
  cases.push_back({"static, no rebalancing", no_rebalance});
  for (const Case& k : cases) {
    const SimResult r = simulate(k.config, apps);
    EXPECT_EQ(r.sw_units + r.hw_units, r.total_units) << k.name;
    EXPECT_GT(r.hw_units, 0u) << k.name;
    EXPECT_GT(r.jobs_completed, 0u) << k.name;
    uint64_t calls = 0;
    for (const AppSpec& a : apps) calls += a.calls.size();
    EXPECT_EQ(r.calls, calls) << k.name;
    for (Time t : r.app_finish) EXPECT_LE(t, r.makespan) << k.name;
  }
}

TEST(Simulator, CpusAreSharedByTimeSlices) {
  // Four SW-only apps of equal work on two CPUs: both CPUs stay busy, nobody finishes first by much.
  const std::vector<AppSpec> apps = make_workload(small_workload(4, 1, 0.4));
  SimConfig c;
  const SimResult r = simulate_sw_baseline(c, apps);
  const double total_s = static_cast<double>(r.total_units) / c.cpu_hz;
  EXPECT_NEAR(static_cast<double>(r.makespan) * 1e-9, total_s / 2, 0.011);
  EXPECT_NEAR(static_cast<double>(r.cpu_busy_ns) * 1e-9, total_s, 0.001);
  EXPECT_GT(r.context_switches, 4u) << "10 ms slices over 100 ms of work per app";
  EXPECT_EQ(r.hw_units, 0u);
}

TEST(SanityLaws, SpeedupZeroChangesNothing) {
  const std::vector<AppSpec> apps = make_workload(small_workload(8, 16));
  for (const char* policy : {"algorithm1", "sticky", "reactive"}) {
    SimConfig c = dynamic_config(0, 1, policy);
    c.jitter_seed = 5;
    const SimResult with = simulate(c, apps);
    const SimResult base = simulate_sw_baseline(c, apps);
    EXPECT_EQ(with.makespan, base.makespan) << policy;
    EXPECT_EQ(with.hw_units, 0u);
    // No call asks for an accelerator that cannot help (so nothing reacts); sticky and reactive only
    // fill the empty slots once.
    EXPECT_LE(with.reconfigurations, std::string(policy) == "algorithm1" ? 0u : c.slots) << policy;
  }
  FigureSpec spec = thesis_figure("5.11", true);
  RunOptions o;
  o.seeds = 1;
  o.reps = 1;
  const FigureResult r = run_figure(spec, o);
  for (const PointResult& p : r.points) {
    if (p.x == 0) {
      EXPECT_DOUBLE_EQ(p.normalized_makespan, 1.0) << p.series;
    }
  }
}

TEST(Simulator, EventDrivenPolicyLoadsBetweenPeriods) {
  // The simulator hands every NOT_ACCELERATED answer to a reacting policy: reactive begins loads
  // between period boundaries, sticky and Algorithm 1 only at them.
  const std::vector<AppSpec> apps = make_workload(small_workload(8, 16));
  for (const char* policy : {"algorithm1", "sticky", "reactive"}) {
    SimConfig c = dynamic_config(10, 100, policy);
    c.trace = true;
    const SimResult r = simulate(c, apps);
    uint32_t between = 0, configures = 0;
    for (const TraceSpan& s : r.trace) {
      if (s.kind != TraceSpan::configure) continue;
      ++configures;
      between += s.begin % c.period_ns != 0 ? 1 : 0;
    }
    EXPECT_GT(configures, 0u) << policy;
    if (std::string(policy) == "reactive") {
      EXPECT_GT(between, 0u) << policy;
    } else {
      EXPECT_EQ(between, 0u) << policy;
    }
  }
}

TEST(SanityLaws, StaticSingleFunctionClusterApproachesEq58) {
  // Two apps on two CPUs (no context-switch hazards), one function resident in every slot.
  const std::vector<AppSpec> apps = make_workload(small_workload(2, 1, 2.0));
  for (uint32_t slots : {2u, 8u}) {
    for (double s : {1.0, 4.0}) {
      SimConfig c;
      c.slots = slots;
      c.speedup = s;
      c.policy = "none";
      c.resident.assign(slots, kF0);
      const double t_sw = static_cast<double>(simulate_sw_baseline(c, apps).makespan);
      const double t_o = static_cast<double>(simulate(c, apps).makespan);
      const double t_e = model::expected_makespan(t_sw, slots, c.cpus, s);
      const double u = model::utilization(t_e, t_o);
      EXPECT_GT(u, 0.85) << slots << " slots, " << s << "x";
      EXPECT_LE(u, 1.0 + 1e-9) << "nothing beats Eq 5.8";
    }
  }
}

TEST(Experiment, QuickFiguresHaveEveryPoint) {
  for (const std::string& id : thesis_figure_ids()) {
    const FigureSpec f = thesis_figure(id, true);
    EXPECT_FALSE(f.points.empty()) << id;
    EXPECT_TRUE(f.metric == "utilization" || f.metric == "normalized_makespan") << id;
  }
  EXPECT_EQ(thesis_figure("5.15", false).points.size(), 8u * 11u);
  EXPECT_EQ(thesis_figure("5.18", false).points.size(), 7u * 11u);
  EXPECT_EQ(thesis_figure("5.20", false).points.front().config.partitioner.jobs_per_round, 0u);
  EXPECT_FALSE(thesis_figure("5.9", false).points.front().config.partitioner.rebalance);
  EXPECT_THROW(thesis_figure("5.10", true), Error);
}

}  // namespace
}  // namespace tandem::sim
