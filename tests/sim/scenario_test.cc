// Scenario files and studies (src/sim/scenario.*, study.*): every key parsed, every error named, axes
// expanded in order, runs deduplicated, and the workload and simulator features the keys reach.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "abi/status.hpp"
#include "sim/scenario.hpp"
#include "sim/study.hpp"

namespace tandem::sim {
namespace {

constexpr engine::FunctionId kF0 = TANDEM_FN_WORK_BASE;

// The message of the Error `text` raises, or "" if it parses.
std::string error_of(const std::string& text, const ScenarioOptions& o = {}) {
  try {
    parse_scenario(text, "s.toml", o);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument) << e.what();
    return e.what();
  }
  return "";
}

ScenarioOptions with_calibration() {
  ScenarioOptions o;
  o.read_calibration = [](const std::string& path, const std::string& fn) -> std::optional<CalibratedCosts> {
    if (path != "cal.toml" || fn != "accumulate") return std::nullopt;
    return CalibratedCosts{1e9, 5e9, 40e-9, 90e-9, 400e-9};
  };
  return o;
}

TEST(Scenario, AnEmptyFileIsTheSimulatorsDefaults) {
  const Scenario s = parse_scenario("", "s.toml");
  const SimConfig d;
  const WorkloadSpec w;
  EXPECT_EQ(s.config.cpus, d.cpus);
  EXPECT_EQ(s.config.time_slice_ns, d.time_slice_ns);
  EXPECT_EQ(s.config.slots, d.slots);
  EXPECT_EQ(s.config.speedup, d.speedup);
  EXPECT_EQ(s.config.da_s, d.da_s);
  EXPECT_EQ(s.config.oc_s, d.oc_s);
  EXPECT_EQ(s.config.o0_s, d.o0_s);
  EXPECT_EQ(s.config.period_ns, d.period_ns);
  EXPECT_EQ(s.config.reconfig_ns, d.reconfig_ns);
  EXPECT_EQ(s.config.policy, d.policy);
  EXPECT_EQ(s.config.partitioner.jobs_per_round, d.partitioner.jobs_per_round);
  EXPECT_EQ(s.config.partitioner.cowork_max_seconds, d.partitioner.cowork_max_seconds);
  EXPECT_EQ(s.workload.apps, w.apps);
  EXPECT_EQ(s.workload.functions, w.functions);
  EXPECT_EQ(s.workload.first_function, kF0);
  EXPECT_EQ(s.workload.total_sw_s, w.total_sw_s);
  EXPECT_TRUE(s.config.function_costs.empty());
  EXPECT_EQ(s.seeds, 1u);
  EXPECT_EQ(s.reps, 1u);
}

TEST(Scenario, EveryKeyReachesItsField) {
  const std::string text = R"(
[scenario]
name = "every-key"
title = "All of them"
[cpus]
count = 4
time_slice_ms = 4
hz = 1e9
[accelerators]
slots = 12
speedup = 6
latency_us = 3
reconfig_ms = 7
calibration = "cal.toml"
calibrated_function = "accumulate"
[calls]
o0_us = 0.5
oc_us = 2
[functions]
count = 20
first = "work2"
[functions.3]
speedup = 9
latency_us = 5
reconfig_ms = 11
o0_us = 0.25
oc_us = 4
weight = 3
[functions.4]
calibrated_as = "accumulate"
[applications]
count = 6
total_sw_s = 2
call_min_ms = 2
call_max_ms = 40
call_mean_ms = 10
sizes = "exponential"
same_calls = true
arrival = "open"
rate_per_s = 50
[monitor]
period_ms = 5
[policy]
name = "reactive"
history = 0.5
min_gain = 3
in_use_first = 1
evict = 0
min_streak = 2
min_payoff = 0.3
payoff_weight = 0.4
request_weight_us = 50
c_reconfig_ms = 0.25
c_replicate_ms = 1
react = 1
react_idle_ms = 10
react_idle_delays = 2
react_period_chase = 1
react_payoff = 0
react_adapt = 0.2
react_scale_min = 0.5
react_scale_max = 8
[partitioner]
mode = "hw"
jobs_per_round = 3
cowork_max_us = 50
max_outstanding_jobs = 32
rebalance = false
[run]
seeds = 5
reps = 3
base_seed = 42
)";
  const Scenario s = parse_scenario(text, "s.toml", with_calibration());
  EXPECT_EQ(s.name, "every-key");
  EXPECT_EQ(s.title, "All of them");
  const SimConfig& c = s.config;
  const WorkloadSpec& w = s.workload;
  EXPECT_EQ(c.cpus, 4u);
  EXPECT_EQ(c.time_slice_ns, 4'000'000);
  EXPECT_EQ(c.cpu_hz, 1e9);
  EXPECT_EQ(w.cpu_hz, 1e9);
  EXPECT_EQ(c.slots, 12u);
  EXPECT_EQ(c.speedup, 6);
  EXPECT_DOUBLE_EQ(c.da_s, 3e-6);
  EXPECT_EQ(c.reconfig_ns, 7'000'000);
  EXPECT_DOUBLE_EQ(c.o0_s, 0.5e-6);
  EXPECT_DOUBLE_EQ(c.oc_s, 2e-6);
  EXPECT_EQ(w.functions, 20u);
  EXPECT_EQ(w.first_function, kF0 + 2);
  // Every function takes the calibrated accumulate's figures; function 3 overrides them, 4 names them.
  ASSERT_EQ(c.function_costs.size(), 20u);
  const SimConfig::FunctionCosts& f0 = c.function_costs.at(kF0 + 2);
  EXPECT_DOUBLE_EQ(f0.speedup, 5.0);
  EXPECT_DOUBLE_EQ(f0.da_s, 400e-9);
  EXPECT_DOUBLE_EQ(f0.oc_s, 90e-9);
  EXPECT_DOUBLE_EQ(f0.o0_s, 40e-9);
  const SimConfig::FunctionCosts& f3 = c.function_costs.at(kF0 + 5);
  EXPECT_EQ(f3.speedup, 9);
  EXPECT_DOUBLE_EQ(f3.da_s, 5e-6);
  EXPECT_DOUBLE_EQ(f3.reconfig_s, 11e-3);
  EXPECT_DOUBLE_EQ(f3.o0_s, 0.25e-6);
  EXPECT_DOUBLE_EQ(f3.oc_s, 4e-6);
  EXPECT_DOUBLE_EQ(c.function_costs.at(kF0 + 6).speedup, 5.0);
  ASSERT_EQ(w.weights.size(), 20u);
  EXPECT_EQ(w.weights[3], 3);
  EXPECT_EQ(w.weights[0], 1);
  EXPECT_EQ(w.apps, 6u);
  EXPECT_EQ(w.total_sw_s, 2);
  EXPECT_DOUBLE_EQ(w.call_min_s, 2e-3);
  EXPECT_DOUBLE_EQ(w.call_max_s, 40e-3);
  EXPECT_DOUBLE_EQ(w.call_mean_s, 10e-3);
  EXPECT_EQ(w.sizes, WorkloadSpec::Sizes::exponential);
  EXPECT_TRUE(w.same_calls_for_all);
  EXPECT_EQ(w.rate_per_s, 50);
  EXPECT_EQ(c.period_ns, 5'000'000);
  EXPECT_EQ(c.policy.rfind("reactive:history=0.5:min_gain=3:", 0), 0u) << c.policy;
  for (const char* k : {"in_use_first=1", "evict=0", "min_streak=2", "min_payoff=0.2999", "payoff_weight=0.4000",
                        "request_weight_us=50", "c_reconfig_ms=0.25", "c_replicate_ms=1", "react=1", "react_idle_ms=10",
                        "react_idle_delays=2", "react_period_chase=1", "react_payoff=0", "react_adapt=0.2",
                        "react_scale_min=0.5", "react_scale_max=8"}) {
    EXPECT_NE(c.policy.find(k), std::string::npos) << k << " in " << c.policy;
  }
  EXPECT_EQ(c.partitioner.policy, engine::PartitionPolicy::hw_only);
  EXPECT_EQ(c.partitioner.jobs_per_round, 3u);
  EXPECT_DOUBLE_EQ(c.partitioner.cowork_max_seconds, 50e-6);
  EXPECT_EQ(c.partitioner.max_outstanding_jobs, 32u);
  EXPECT_FALSE(c.partitioner.rebalance);
  EXPECT_EQ(s.seeds, 5u);
  EXPECT_EQ(s.reps, 3u);
  EXPECT_EQ(s.base_seed, 42u);
}

TEST(Scenario, TranslationKeysReachTheirFields) {
  const Scenario s = parse_scenario(R"(
[translation]
mode = "phasev"
tlb_entries = 128
tlb_ways = 4
tlb_scope = "per_slot"
tlb_walk_reads = 2.5
tlb_read_ns = 80
bytes_per_unit = 8
pattern = "sequential"
)",
                                    "s.toml");
  const SimConfig::Translation& t = s.config.translation;
  EXPECT_TRUE(t.enabled());
  EXPECT_EQ(t.tlb.entries, 128u);
  EXPECT_EQ(t.tlb.ways, 4u);
  EXPECT_TRUE(t.tlb.per_slot);
  EXPECT_DOUBLE_EQ(t.tlb.walk_reads, 2.5);
  EXPECT_DOUBLE_EQ(t.tlb.read_s, 80e-9);
  EXPECT_DOUBLE_EQ(t.bytes_per_unit, 8);
  EXPECT_FALSE(t.random);
  EXPECT_FALSE(parse_scenario("", "s.toml").config.translation.enabled()) << "AISLE unless asked";
}

// Each key scenario_keys() lists has a value here that is valid; a key added without one fails.
TEST(Scenario, EveryListedKeyCanBeSetByASweepAxis) {
  const std::map<std::string, std::string> value{
      {"scenario.name", "\"n\""}, {"scenario.title", "\"t\""}, {"cpus.count", "3"}, {"cpus.time_slice_ms", "5"},
      {"cpus.hz", "1e9"}, {"accelerators.slots", "4"}, {"accelerators.speedup", "2.5"},
      {"accelerators.latency_us", "1"}, {"accelerators.reconfig_ms", "\"period\""}, {"accelerators.resident", "\"work0\""},
      {"accelerators.calibration", "\"cal.toml\""}, {"accelerators.calibrated_function", "\"accumulate\""},
      {"calls.o0_us", "0.2"}, {"calls.oc_us", "1"}, {"functions.count", "8"}, {"functions.first", "16"},
      {"functions.N.speedup", "3"}, {"functions.N.latency_us", "2"}, {"functions.N.reconfig_ms", "1"},
      {"functions.N.o0_us", "0.1"}, {"functions.N.oc_us", "1"}, {"functions.N.weight", "2"},
      {"functions.N.calibrated_as", "\"accumulate\""}, {"applications.count", "3"}, {"applications.total_sw_s", "1"},
      {"applications.call_min_ms", "2"}, {"applications.call_max_ms", "50"}, {"applications.call_mean_ms", "10"},
      {"applications.sizes", "\"log_uniform\""}, {"applications.same_calls", "true"},
      {"applications.arrival", "\"closed\""}, {"applications.rate_per_s", "5"}, {"monitor.period_ms", "10"},
      {"policy.name", "\"sticky\""}, {"partitioner.mode", "\"sw\""}, {"partitioner.jobs_per_round", "2"},
      {"partitioner.cowork_max_us", "20"}, {"partitioner.max_outstanding_jobs", "8"}, {"partitioner.rebalance", "false"},
      {"access.method", "\"sg\""}, {"access.bytes_per_unit", "8"}, {"access.registered", "false"},
      {"access.remote", "true"}, {"access.link_gbps", "8"}, {"access.dma_setup_us", "1.5"}, {"access.sg_gbps", "6"},
      {"access.sg_setup_us", "2"}, {"access.sg_page_ns", "30"}, {"access.memcpy_gbps", "10"},
      {"access.gather_gbps", "5"}, {"access.gather_page_ns", "40"}, {"access.handoff_us", "6"},
      {"translation.mode", "\"phasev\""}, {"translation.tlb_entries", "32"}, {"translation.tlb_ways", "2"},
      {"translation.tlb_scope", "\"per_slot\""}, {"translation.tlb_walk_reads", "2"}, {"translation.tlb_read_ns", "80"},
      {"translation.bytes_per_unit", "8"}, {"translation.pattern", "\"sequential\""},
      {"run.seeds", "2"}, {"run.reps", "2"}, {"run.base_seed", "9"}};
  const std::vector<std::string> keys = scenario_keys();
  for (const std::string& key : keys) {
    if (key.rfind("policy.", 0) == 0 && key != "policy.name") {
      const std::string t = set_scenario_key("", key, "1", "s.toml");
      EXPECT_EQ(error_of(t, with_calibration()), "") << key;
      continue;
    }
    ASSERT_TRUE(value.count(key)) << "no test value for " << key;
    std::string k = key;
    if (k.rfind("functions.N.", 0) == 0) k = "functions.0." + k.substr(12);
    std::string t = set_scenario_key("", k, value.at(key), "s.toml");
    if (key == "accelerators.resident") t = set_scenario_key(t, "policy.name", "\"none\"", "s.toml");
    if (key == "accelerators.calibration") t = set_scenario_key(t, "accelerators.calibrated_function", "\"accumulate\"", "s.toml");
    if (key == "applications.rate_per_s") t = set_scenario_key(t, "applications.arrival", "\"open\"", "s.toml");
    if (key.rfind("access.", 0) == 0 && key != "access.bytes_per_unit") t = set_scenario_key(t, "access.bytes_per_unit", "8", "s.toml");
    if (key == "functions.N.calibrated_as" || key == "accelerators.calibrated_function") {
      t = set_scenario_key(t, "accelerators.calibration", "\"cal.toml\"", "s.toml");
    }
    EXPECT_EQ(error_of(t, with_calibration()), "") << key << ":\n" << t;
  }
  EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), keys.size());
}

TEST(Scenario, EveryErrorNamesItsKey) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[cpus]\ncount = 0", "cpus.count"},
      {"[access]\nmethod = \"dma\"\nbytes_per_unit = 4", "access.method: 'dma' is not one of auto, zero_copy, copy, sg"},
      {"[access]\nmethod = \"copy\"", "access.bytes_per_unit: must be > 0"},
      {"[access]\nbytes_per_unit = -1", "access.bytes_per_unit"},
      {"[access]\nbytes_per_unit = 4\nlink = 3", "unknown key 'link' in [access]"},
      {"[translation]\nmode = \"phase\"", "translation.mode: 'phase' is not one of aisle, phasev"},
      {"[translation]\ntlb_entries = 8\ntlb_ways = 16", "translation.tlb_ways: must not exceed tlb_entries"},
      {"[translation]\ntlb_scope = \"slot\"", "translation.tlb_scope"},
      {"[translation]\npattern = \"strided\"", "translation.pattern"},
      {"[translation]\ntlb_entries = 0", "translation.tlb_entries"},
      {"[cpus]\ncount = 2.5", "cpus.count: must be an integer"},
      {"[cpus]\ntime_slice_ms = 0", "cpus.time_slice_ms"},
      {"[cpus]\nhz = -1", "cpus.hz"},
      {"[cpus]\ncores = 2", "unknown key 'cores' in [cpus]"},
      {"[accelerators]\nslots = 0", "accelerators.slots"},
      {"[accelerators]\nspeedup = -1", "accelerators.speedup"},
      {"[accelerators]\nspeedup = \"fast\"", "accelerators.speedup: must be a number"},
      {"[accelerators]\nlatency_us = -2", "accelerators.latency_us"},
      {"[accelerators]\nreconfig_ms = \"soon\"", "accelerators.reconfig_ms"},
      {"[accelerators]\nresident = \"work99\"\n[policy]\nname = \"none\"", "accelerators.resident"},
      {"[accelerators]\nresident = \"work0\"", "accelerators.resident: a static cluster needs policy.name = \"none\""},
      {"[accelerators]\nslots = 1\nresident = [\"work0\", \"work1\"]\n[policy]\nname = \"none\"", "more functions than there are slots"},
      {"[accelerators]\nresident = 3\n[policy]\nname = \"none\"", "accelerators.resident: must be a function name"},
      {"[accelerators]\ncalibration = \"cal.toml\"", "accelerators.calibration: name the calibrated function"},
      {"[accelerators]\ncalibration = \"cal.toml\"\ncalibrated_function = \"sobel\"", "has no function 'sobel'"},
      {"[accelerators]\nslot = 3", "unknown key 'slot' in [accelerators]"},
      {"[calls]\noc_us = -1", "calls.oc_us"},
      {"[calls]\nocc = 1", "unknown key 'occ' in [calls]"},
      {"[functions]\ncount = 0", "functions.count"},
      {"[functions]\nfirst = \"sobel\"", "functions.first"},
      {"[functions]\nfirst = 300", "functions.first"},
      {"[functions]\ncount = 300", "functions.count"},
      {"[functions]\ncount = 4\n[functions.4]\nspeedup = 2", "[functions.4]: the scenario has 4 functions"},
      {"[functions]\nmystery = 1", "unknown key 'mystery' in [functions]"},
      {"[functions.0]\nspeed = 2", "unknown key 'speed' in [functions.0]"},
      {"[functions.0]\nspeedup = -3", "functions.0.speedup"},
      {"[functions.0]\nweight = -1", "functions.0.weight"},
      {"[functions]\ncount = 2\n[functions.0]\nweight = 0\n[functions.1]\nweight = 0", "weights must not all be 0"},
      {"[functions.0]\ncalibrated_as = \"accumulate\"", "functions.0.calibrated_as: needs accelerators.calibration"},
      {"[applications]\ncount = 0", "applications.count"},
      {"[applications]\ntotal_sw_s = 0", "applications.total_sw_s"},
      {"[applications]\ncall_min_ms = 0", "applications.call_min_ms"},
      {"[applications]\ncall_min_ms = 10\ncall_max_ms = 5", "applications.call_max_ms: must be >= applications.call_min_ms"},
      {"[applications]\ncall_mean_ms = 500", "applications.call_mean_ms"},
      {"[applications]\nsizes = \"gaussian\"", "applications.sizes: 'gaussian' is not one of"},
      {"[applications]\nsame_calls = 1", "applications.same_calls: must be true or false"},
      {"[applications]\narrival = \"bursty\"", "applications.arrival"},
      {"[applications]\narrival = \"open\"", "applications.rate_per_s: arrival = \"open\" needs a rate"},
      {"[applications]\narrival = \"open\"\nrate_per_s = 0", "applications.rate_per_s"},
      {"[applications]\nrate_per_s = 5", "applications.rate_per_s: only with arrival = \"open\""},
      {"[applications]\napps = 4", "unknown key 'apps' in [applications]"},
      {"[monitor]\nperiod_ms = 0", "monitor.period_ms"},
      {"[monitor]\nperiod = 1", "unknown key 'period' in [monitor]"},
      {"[policy]\nname = \"greedy\"", "policy.name: 'greedy' is not one of"},
      {"[policy]\nname = \"sticky:bogus=1\"", "policy.name"},
      {"[policy]\nhistroy = 0.5", "unknown key 'histroy' in [policy]"},
      {"[policy]\nhistory = \"a lot\"", "policy.history: must be a number"},
      {"[partitioner]\nmode = \"alpha\"", "partitioner.mode"},
      {"[partitioner]\njobs_per_round = -1", "partitioner.jobs_per_round"},
      {"[partitioner]\ncowork_max_us = 0", "partitioner.cowork_max_us"},
      {"[partitioner]\nmax_outstanding_jobs = 0", "partitioner.max_outstanding_jobs"},
      {"[partitioner]\nrebalance = \"yes\"", "partitioner.rebalance"},
      {"[partitioner]\njobs = 2", "unknown key 'jobs' in [partitioner]"},
      {"[run]\nseeds = 0", "run.seeds"},
      {"[run]\nreps = 0", "run.reps"},
      {"[run]\nbase_seed = -1", "run.base_seed"},
      {"[run]\nrepetitions = 3", "unknown key 'repetitions' in [run]"},
      {"[scenario]\nname = 3", "scenario.name: must be a string"},
      {"[scenario]\nauthor = \"x\"", "unknown key 'author' in [scenario]"},
      {"cpus = 4", "cpus: must be a table"},
      {"[gpu]\ncount = 1", "unknown key 'gpu'"},
      {"[cpus\ncount = 1", "s.toml:"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string got = error_of(text, with_calibration());
    EXPECT_NE(got.find(expected), std::string::npos) << "input:\n" << text << "\nerror: '" << got << "'\nexpected: " << expected;
    EXPECT_EQ(got.rfind("s.toml", 0), 0u) << got;
  }
}

TEST(Scenario, CalibrationNeedsTheCommandsReader) {
  EXPECT_NE(error_of("[accelerators]\ncalibration = \"cal.toml\"\ncalibrated_function = \"accumulate\"")
                .find("read by the tandem command"),
            std::string::npos);
}

TEST(Study, AxesExpandFirstOutermostWithRangesAndQuickValues) {
  const Study st = parse_study(R"(
[applications]
count = 2
total_sw_s = 0.1
[[axis]]
key = "accelerators.slots"
values = [2, 4]
quick = [4]
[[axis]]
key = "monitor.period_ms"
from = 1
to = 5
step = 2
[[axis]]
key = "accelerators.speedup"
from = 0.5
to = 1.0
step = 0.25
)", "sw.toml");
  const std::vector<StudyPoint> pts = expand_study(st, false);
  ASSERT_EQ(pts.size(), 2u * 3u * 3u);
  EXPECT_EQ(pts[0].labels, (std::vector<std::string>{"2", "1", "0.5"}));
  EXPECT_EQ(pts[1].labels, (std::vector<std::string>{"2", "1", "0.75"}));
  EXPECT_EQ(pts[3].labels, (std::vector<std::string>{"2", "3", "0.5"}));
  EXPECT_EQ(pts.back().labels, (std::vector<std::string>{"4", "5", "1"}));
  EXPECT_EQ(pts.back().scenario.config.slots, 4u);
  EXPECT_EQ(pts.back().scenario.config.period_ns, 5'000'000);
  EXPECT_EQ(pts.back().scenario.config.speedup, 1.0);
  EXPECT_EQ(expand_study(st, true).size(), 1u * 3u * 3u);
}

TEST(Study, ErrorsNameTheAxisOrKey) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[[axis]]\nvalues = [1]", "axis[0].key"},
      {"[[axis]]\nkey = \"cpus.count\"", "axis[0]: values"},
      {"[[axis]]\nkey = \"cpus.count\"\nvalues = []", "axis[0].values: must be a non-empty list"},
      {"[[axis]]\nkey = \"cpus.count\"\nvalues = [1]\nfrom = 1\nto = 2\nstep = 1", "values or from/to/step"},
      {"[[axis]]\nkey = \"cpus.count\"\nfrom = 3\nto = 1\nstep = 1", "step > 0 and to >= from"},
      {"[[axis]]\nkey = \"cpus.count\"\nvalues = [1]\n[[axis]]\nkey = \"cpus.count\"\nvalues = [2]", "already an axis"},
      {"[[axis]]\nkey = \"cpus.count\"\nvalues = [1]\nstride = 2", "unknown key 'stride' in [axis[0]]"},
      {"[figure]\nx = \"accelerators.speedup\"\n[[axis]]\nkey = \"cpus.count\"\nvalues = [1]", "figure.x"},
      {"[figure]\nmetric = \"latency\"\nx = \"cpus.count\"", "figure.metric"},
      {"[sweep]\nscenarios = \"x\"", "unknown key 'scenarios' in [sweep]"},
      {"[cpus]\ncores = 2", "unknown key 'cores' in [cpus]"},
  };
  for (const auto& [text, expected] : cases) {
    std::string got;
    try {
      parse_study(text, "sw.toml");
    } catch (const Error& e) {
      got = e.what();
    }
    EXPECT_NE(got.find(expected), std::string::npos) << text << "\n-> '" << got << "'";
  }
  // An impossible value on an axis is reported with the point it makes.
  const Study st = parse_study("[[axis]]\nkey = \"accelerators.slots\"\nvalues = [4, 0]", "sw.toml");
  try {
    expand_study(st, false);
    FAIL() << "slots = 0 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("accelerators.slots"), std::string::npos) << e.what();
  }
}

TEST(Study, BaselinesAreSharedByPointsThatDifferOnlyInTheAccelerators) {
  const Study st = parse_study(R"(
[applications]
count = 2
total_sw_s = 0.05
[run]
seeds = 2
reps = 2
[[axis]]
key = "policy.name"
values = ["algorithm1", "sticky"]
[[axis]]
key = "accelerators.slots"
values = [2, 4]
)", "sw.toml");
  const StudyPlan plan = plan_study(st, false);
  ASSERT_EQ(plan.points.size(), 4u);
  size_t baselines = 0;
  for (const RunSpec& r : plan.runs) baselines += r.baseline ? 1 : 0;
  EXPECT_EQ(plan.runs.size() - baselines, 4u * 2u * 2u);
  EXPECT_EQ(baselines, 2u * 2u);  // one per seed and repetition
  std::set<std::string> ids;
  for (const RunSpec& r : plan.runs) ids.insert(r.id);
  EXPECT_EQ(ids.size(), plan.runs.size());
  // A result is a function of the spec alone.
  EXPECT_EQ(execute_run(plan.runs[0].text), execute_run(plan.runs[0].text));
}

TEST(Workload, WeightsSizesAndOpenArrivals) {
  WorkloadSpec w;
  w.apps = 2;
  w.functions = 4;
  w.first_function = kF0;
  w.total_sw_s = 4;
  w.weights = {0, 0, 1, 3};
  w.sizes = WorkloadSpec::Sizes::log_uniform;
  w.rate_per_s = 20;
  const std::vector<AppSpec> apps = make_workload(w);
  std::array<int, 4> seen{};
  const uint64_t lo = static_cast<uint64_t>(std::llround(w.call_min_s * w.cpu_hz));
  const uint64_t hi = static_cast<uint64_t>(std::llround(w.call_max_s * w.cpu_hz));
  for (const AppSpec& a : apps) {
    int64_t last = 0;
    for (size_t i = 0; i < a.calls.size(); ++i) {
      const LibraryCall& c = a.calls[i];
      ++seen[c.function - kF0];
      if (i + 1 < a.calls.size()) {
        EXPECT_GE(c.units, lo);
        EXPECT_LE(c.units, hi);
      }
      EXPECT_GT(c.arrival_ns, last);
      last = c.arrival_ns;
    }
    // Poisson at 20/s: the mean gap is 50 ms (within 40% over these few calls).
    const double mean_gap = static_cast<double>(last) / static_cast<double>(a.calls.size()) * 1e-9;
    EXPECT_NEAR(mean_gap, 0.05, 0.02);
  }
  EXPECT_EQ(seen[0], 0);
  EXPECT_EQ(seen[1], 0);
  EXPECT_GT(seen[3], 2 * seen[2]);
  for (WorkloadSpec::Sizes s : {WorkloadSpec::Sizes::exponential, WorkloadSpec::Sizes::fixed}) {
    w.sizes = s;
    w.call_mean_s = 20e-3;
    for (const AppSpec& a : make_workload(w)) {
      for (size_t i = 0; i + 1 < a.calls.size(); ++i) {
        EXPECT_GE(a.calls[i].units, lo);
        EXPECT_LE(a.calls[i].units, hi);
        if (s == WorkloadSpec::Sizes::fixed) {
          EXPECT_EQ(a.calls[i].units, static_cast<uint64_t>(20e-3 * w.cpu_hz));
        }
      }
    }
  }
}

TEST(Simulator, OpenArrivalsAndPerFunctionCostsAreHonoured) {
  Scenario s = parse_scenario(R"(
[applications]
count = 2
total_sw_s = 0.4
arrival = "open"
rate_per_s = 10
[functions]
count = 2
[functions.1]
speedup = 0
)", "s.toml");
  s.workload.seed = 3;
  const std::vector<AppSpec> apps = make_workload(s.workload);
  const SimResult r = simulate(s.config, apps);
  int64_t last_arrival = 0;
  for (const AppSpec& a : apps) last_arrival = std::max(last_arrival, a.calls.back().arrival_ns);
  EXPECT_GT(r.makespan, last_arrival) << "no call starts before it arrives";
  // Function 1 has no accelerator benefit: its calls never run jobs, so every job is function 0's.
  uint64_t f0_units = 0;
  for (const AppSpec& a : apps) {
    for (const LibraryCall& c : a.calls) f0_units += c.function == kF0 ? c.units : 0;
  }
  EXPECT_LE(r.hw_units, f0_units);
  EXPECT_GT(r.hw_units, 0u);
  EXPECT_EQ(r.call_latency.size(), r.calls);
  for (size_t i = 0; i < r.call_latency.size(); ++i) EXPECT_GT(r.call_latency[i], 0);
  uint64_t jobs = 0;
  for (uint64_t j : r.slot_jobs) jobs += j;
  EXPECT_EQ(jobs, r.jobs_completed);
}

}  // namespace
}  // namespace tandem::sim
