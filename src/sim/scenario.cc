#include "sim/scenario.hpp"

#include <toml++/toml.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "abi/status.hpp"
#include "config/toml_checks.hpp"
#include "config/config.hpp"
#include "config/text_file.hpp"
#include "sim/toml_text.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::sim {

namespace {

using config::check_keys;
using config::toml_fail;

// The policy parameters config::parse_policy takes ("name:key=value"), the scenario's [policy] keys.
const std::vector<std::string_view> kPolicyParams = {
    "history", "min_gain", "in_use_first", "evict", "min_streak", "min_payoff", "payoff_weight",
    "request_weight_us", "c_reconfig_ms", "c_replicate_ms", "react", "react_idle_ms", "react_idle_delays",
    "react_period_chase", "react_payoff", "react_adapt", "react_scale_min", "react_scale_max"};

constexpr double kInf = std::numeric_limits<double>::infinity();

// One [table] of a scenario: typed reads that name "table.key" in every error.
class Section {
 public:
  Section(const toml::table* t, std::string where, std::string_view source)
      : t_(t), where_(std::move(where)), source_(source) {}

  bool has(std::string_view key) const { return t_ != nullptr && t_->contains(key); }
  std::string name(std::string_view key) const { return where_.empty() ? std::string(key) : where_ + "." + std::string(key); }
  [[noreturn]] void fail(std::string_view key, const std::string& what) const { toml_fail(source_, name(key) + ": " + what); }

  // A number in [lo, hi] (lo excluded when lo_open).
  double number(std::string_view key, double fallback, double lo, double hi, bool lo_open = false) const {
    if (!has(key)) return fallback;
    const toml::node& n = *t_->get(key);
    double v = 0;
    if (const auto* i = n.as_integer()) {
      v = static_cast<double>(i->get());
    } else if (const auto* f = n.as_floating_point()) {
      v = f->get();
    } else {
      fail(key, "must be a number");
    }
    const bool low = lo_open ? !(v > lo) : !(v >= lo);
    if (low || !(v <= hi) || std::isnan(v)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "must be %s %g%s (got %g)", lo_open ? ">" : ">=", lo,
                    std::isinf(hi) ? "" : (" and <= " + fmt_number(hi)).c_str(), v);
      fail(key, buf);
    }
    return v;
  }

  int64_t integer(std::string_view key, int64_t fallback, int64_t lo, int64_t hi) const {
    if (!has(key)) return fallback;
    const auto* i = t_->get(key)->as_integer();
    if (i == nullptr) fail(key, "must be an integer");
    const int64_t v = i->get();
    if (v < lo || v > hi) fail(key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " + std::to_string(v) + ")");
    return v;
  }

  bool boolean(std::string_view key, bool fallback) const {
    if (!has(key)) return fallback;
    const auto* b = t_->get(key)->as_boolean();
    if (b == nullptr) fail(key, "must be true or false");
    return b->get();
  }

  std::string string(std::string_view key, std::string fallback, std::initializer_list<std::string_view> allowed = {}) const {
    if (!has(key)) return fallback;
    const auto* s = t_->get(key)->as_string();
    if (s == nullptr) fail(key, "must be a string");
    const std::string v = s->get();
    if (allowed.size() == 0) return v;
    std::string list;
    for (std::string_view a : allowed) {
      if (v == a) return v;
      list += (list.empty() ? "" : ", ") + std::string(a);
    }
    fail(key, "'" + v + "' is not one of " + list);
  }

  const toml::table* table() const { return t_; }
  const std::string& where() const { return where_; }

 private:
  static std::string fmt_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }
  const toml::table* t_;
  std::string where_;
  std::string_view source_;
};

Section section(const toml::table& root, std::string_view key, std::string_view source) {
  const toml::node* n = root.get(key);
  if (n != nullptr && !n->is_table()) toml_fail(source, std::string(key) + ": must be a table ([" + std::string(key) + "])");
  return Section(n == nullptr ? nullptr : n->as_table(), std::string(key), source);
}

void check(const Section& s, std::initializer_list<std::string_view> keys, std::string_view source) {
  if (s.table() != nullptr) check_keys(*s.table(), s.where(), keys, source);
}

Time ms_to_ns(double ms) { return static_cast<Time>(ms * 1e6); }


// "work0".."work15": the thesis's synthetic functions.
engine::FunctionId work_function(const std::string& v, const Section& where, std::string_view key) {
  if (v.rfind("work", 0) == 0 && v.size() > 4 && v.size() <= 6 && v.find_first_not_of("0123456789", 4) == std::string::npos) {
    const int index = std::stoi(v.substr(4));
    if (index < TANDEM_WORK_FUNCTIONS) return static_cast<engine::FunctionId>(TANDEM_FN_WORK_BASE + index);
  }
  where.fail(key, "'" + v + "' is not work0..work15");
}

// The function id a [functions] first = "work3" or 19 names.
engine::FunctionId first_function(const Section& fns) {
  if (!fns.has("first")) return TANDEM_FN_WORK_BASE;
  if (const auto* s = fns.table()->get("first")->as_string()) return work_function(s->get(), fns, "first");
  return static_cast<engine::FunctionId>(fns.integer("first", TANDEM_FN_WORK_BASE, 0, TANDEM_FN_MAX - 1));
}

void parse_functions(const toml::table& root, Scenario& sc, const ScenarioOptions& options, std::string_view source,
                     const std::string& calibration, const std::string& calibrated_function) {
  const Section fns = section(root, "functions", source);
  WorkloadSpec& w = sc.workload;
  w.first_function = first_function(fns);
  w.functions = static_cast<uint32_t>(fns.integer("count", w.functions, 1, TANDEM_FN_MAX - w.first_function));
  // Per-function tables: [functions.N] for the N-th function (0-based) of the scenario.
  std::vector<double> weights;
  const auto read_calibrated = [&](const std::string& fn_name, const Section& where, std::string_view key) {
    if (calibration.empty()) where.fail(key, "needs accelerators.calibration (a file from tandem calibrate)");
    if (!options.read_calibration) where.fail(key, "calibration files are read by the tandem command, not here");
    std::filesystem::path path(calibration);
    if (path.is_relative() && !options.base_dir.empty()) path = std::filesystem::path(options.base_dir) / path;
    const std::optional<CalibratedCosts> c = options.read_calibration(path.string(), fn_name);
    if (!c) where.fail(key, path.string() + " has no function '" + fn_name + "'");
    if (!(c->xc > 0) || !(c->xa >= 0)) where.fail(key, path.string() + ": '" + fn_name + "' has no usable X_c / X_a");
    SimConfig::FunctionCosts fc;
    fc.speedup = c->xa / c->xc;
    fc.da_s = c->da_s;
    fc.oc_s = c->oc_s;
    fc.o0_s = c->o0_s;
    return fc;
  };
  SimConfig::FunctionCosts all;  // from accelerators.calibrated_function, for every function
  const bool calibrated_all = !calibrated_function.empty();
  if (calibrated_all) {
    all = read_calibrated(calibrated_function, section(root, "accelerators", source), "calibrated_function");
  }
  if (fns.table() != nullptr) {
    for (const auto& [key, node] : *fns.table()) {
      const std::string k(key.str());
      if (k == "count" || k == "first") continue;
      if (k.find_first_not_of("0123456789") != std::string::npos || k.empty()) {
        toml_fail(source, "unknown key '" + k + "' in [functions] (count, first, or a table [functions.N])");
      }
      const uint32_t index = static_cast<uint32_t>(std::stoul(k));
      if (index >= w.functions) {
        toml_fail(source, "[functions." + k + "]: the scenario has " + std::to_string(w.functions) + " functions (0.." +
                              std::to_string(w.functions - 1) + ")");
      }
      if (!node.is_table()) toml_fail(source, "functions." + k + ": must be a table");
      const Section f(node.as_table(), "functions." + k, source);
      check(f, {"speedup", "latency_us", "reconfig_ms", "o0_us", "oc_us", "weight", "calibrated_as"}, source);
      SimConfig::FunctionCosts fc = calibrated_all ? all : SimConfig::FunctionCosts{};
      if (f.has("calibrated_as")) fc = read_calibrated(f.string("calibrated_as", ""), f, "calibrated_as");
      fc.speedup = f.number("speedup", fc.speedup, 0, 1e6);
      if (f.has("latency_us")) fc.da_s = f.number("latency_us", 0, 0, 1e9) / 1e6;
      if (f.has("reconfig_ms")) fc.reconfig_s = f.number("reconfig_ms", 0, 0, 1e9) / 1e3;
      if (f.has("o0_us")) fc.o0_s = f.number("o0_us", 0, 0, 1e9) / 1e6;
      if (f.has("oc_us")) fc.oc_s = f.number("oc_us", 0, 0, 1e9) / 1e6;
      sc.config.function_costs[static_cast<engine::FunctionId>(w.first_function + index)] = fc;
      if (f.has("weight")) {
        if (weights.empty()) weights.assign(w.functions, 1.0);
        weights[index] = f.number("weight", 1, 0, 1e12);
      }
    }
  }
  if (calibrated_all) {
    for (uint32_t i = 0; i < w.functions; ++i) {
      sc.config.function_costs.emplace(static_cast<engine::FunctionId>(w.first_function + i), all);
    }
  }
  if (!weights.empty()) {
    double sum = 0;
    for (double x : weights) sum += x;
    if (!(sum > 0)) toml_fail(source, "functions.N.weight: the weights must not all be 0");
    w.weights = weights;
  }
}

Scenario parse_table(const toml::table& root, std::string_view source, const ScenarioOptions& options) {
  check_keys(root, "the scenario's top level",
             {"scenario", "cpus", "accelerators", "calls", "functions", "applications", "monitor", "policy",
              "partitioner", "access", "translation", "run"},
             source);
  Scenario sc;
  SimConfig& c = sc.config;
  WorkloadSpec& w = sc.workload;

  const Section meta = section(root, "scenario", source);
  check(meta, {"name", "title"}, source);
  sc.name = meta.string("name", "");
  sc.title = meta.string("title", "");

  const Section cpus = section(root, "cpus", source);
  check(cpus, {"count", "time_slice_ms", "hz"}, source);
  c.cpus = static_cast<uint32_t>(cpus.integer("count", c.cpus, 1, 4096));
  if (cpus.has("time_slice_ms")) c.time_slice_ns = ms_to_ns(cpus.number("time_slice_ms", 0, 1e-3, 1e6));
  if (cpus.has("hz")) c.cpu_hz = w.cpu_hz = cpus.number("hz", 0, 1e3, 1e12);

  const Section acc = section(root, "accelerators", source);
  check(acc, {"slots", "speedup", "latency_us", "reconfig_ms", "resident", "calibration", "calibrated_function"}, source);
  c.slots = static_cast<uint32_t>(acc.integer("slots", c.slots, 1, 1024));
  c.speedup = acc.number("speedup", c.speedup, 0, 1e6);
  if (acc.has("latency_us")) c.da_s = acc.number("latency_us", 0, 0, 1e9) / 1e6;
  if (acc.has("reconfig_ms")) {
    const toml::node& n = *acc.table()->get("reconfig_ms");
    if (n.is_string()) {
      acc.string("reconfig_ms", "", {"period"});
      c.reconfig_ns = -1;
    } else {
      c.reconfig_ns = ms_to_ns(acc.number("reconfig_ms", 0, 0, 1e9));
    }
  }
  const std::string calibration = acc.string("calibration", "");
  const std::string calibrated_function = acc.string("calibrated_function", "");
  if (!calibration.empty() && calibrated_function.empty() && !root.contains("functions")) {
    acc.fail("calibration", "name the calibrated function to use: accelerators.calibrated_function or functions.N.calibrated_as");
  }

  const Section calls = section(root, "calls", source);
  check(calls, {"o0_us", "oc_us"}, source);
  if (calls.has("o0_us")) c.o0_s = calls.number("o0_us", 0, 0, 1e9) / 1e6;
  if (calls.has("oc_us")) c.oc_s = calls.number("oc_us", 0, 0, 1e9) / 1e6;

  parse_functions(root, sc, options, source, calibration, calibrated_function);

  // Resident functions (a static cluster): "work0" in every slot, or one name per slot.
  if (acc.has("resident")) {
    const toml::node& n = *acc.table()->get("resident");
    const auto id_of = [&](const toml::node& item) -> engine::FunctionId {
      const auto* s = item.as_string();
      if (s == nullptr) acc.fail("resident", "must be a function name or a list of them");
      return work_function(s->get(), acc, "resident");
    };
    if (n.is_string()) {
      c.resident.assign(c.slots, id_of(n));
    } else if (const auto* arr = n.as_array()) {
      if (arr->size() > c.slots) acc.fail("resident", "names more functions than there are slots");
      for (const toml::node& item : *arr) c.resident.push_back(id_of(item));
    } else {
      acc.fail("resident", "must be a function name or a list of them");
    }
  }

  const Section apps = section(root, "applications", source);
  check(apps, {"count", "total_sw_s", "call_min_ms", "call_max_ms", "call_mean_ms", "sizes", "same_calls", "arrival",
               "rate_per_s"},
        source);
  w.apps = static_cast<uint32_t>(apps.integer("count", w.apps, 1, 100000));
  w.total_sw_s = apps.number("total_sw_s", w.total_sw_s, 0, 1e6, true);
  if (apps.has("call_min_ms")) w.call_min_s = apps.number("call_min_ms", 0, 0, 1e9, true) / 1e3;
  if (apps.has("call_max_ms")) w.call_max_s = apps.number("call_max_ms", 0, 0, 1e9, true) / 1e3;
  if (w.call_max_s < w.call_min_s) apps.fail("call_max_ms", "must be >= applications.call_min_ms");
  if (apps.has("call_mean_ms")) {
    w.call_mean_s = apps.number("call_mean_ms", 0, 0, 1e9, true) / 1e3;
    if (w.call_mean_s < w.call_min_s || w.call_mean_s > w.call_max_s) {
      apps.fail("call_mean_ms", "must lie between applications.call_min_ms and call_max_ms");
    }
  }
  const std::string sizes = apps.string("sizes", "uniform", {"uniform", "log_uniform", "exponential", "fixed"});
  w.sizes = sizes == "log_uniform"   ? WorkloadSpec::Sizes::log_uniform
            : sizes == "exponential" ? WorkloadSpec::Sizes::exponential
            : sizes == "fixed"       ? WorkloadSpec::Sizes::fixed
                                     : WorkloadSpec::Sizes::uniform;
  w.same_calls_for_all = apps.boolean("same_calls", w.same_calls_for_all);
  const std::string arrival = apps.string("arrival", "closed", {"closed", "open"});
  if (arrival == "open") {
    if (!apps.has("rate_per_s")) apps.fail("rate_per_s", "arrival = \"open\" needs a rate (calls per second per application)");
    w.rate_per_s = apps.number("rate_per_s", 0, 0, 1e9, true);
  } else if (apps.has("rate_per_s")) {
    apps.fail("rate_per_s", "only with arrival = \"open\"");
  }

  const Section mon = section(root, "monitor", source);
  check(mon, {"period_ms"}, source);
  if (mon.has("period_ms")) c.period_ns = ms_to_ns(mon.number("period_ms", 0, 1e-3, 1e6));

  const Section pol = section(root, "policy", source);
  std::vector<std::string_view> pol_keys{"name"};
  pol_keys.insert(pol_keys.end(), kPolicyParams.begin(), kPolicyParams.end());
  if (pol.table() != nullptr) {
    for (const auto& [key, node] : *pol.table()) {
      (void)node;
      bool ok = false;
      for (std::string_view k : pol_keys) ok = ok || key.str() == k;
      if (!ok) toml_fail(source, "unknown key '" + std::string(key.str()) + "' in [policy]");
    }
  }
  const std::vector<std::string> names = config::policy_names();
  // A name, or the engine's "name:key=value:..." form (as tandem experiment --policy takes it).
  std::string spec = pol.string("name", c.policy);
  const std::string name = spec.substr(0, spec.find(':'));
  bool known = false;
  std::string list;
  for (const std::string& n : names) {
    known = known || n == name;
    list += (list.empty() ? "" : ", ") + n;
  }
  if (!known) pol.fail("name", "'" + name + "' is not one of " + list);
  try {
    config::parse_policy(spec, {});
  } catch (const Error& e) {
    pol.fail("name", e.what());
  }
  for (std::string_view k : kPolicyParams) {
    if (!pol.has(k)) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, ":%s=%.17g", std::string(k).c_str(), pol.number(k, 0, -1e12, 1e12));
    spec += buf;
  }
  try {
    config::parse_policy(spec, {});  // the engine checks the parameters' values too
  } catch (const Error& e) {
    toml_fail(source, std::string("policy: ") + e.what());
  }
  c.policy = spec;
  if (!c.resident.empty() && name != "none") {
    acc.fail("resident", "a static cluster needs policy.name = \"none\" (a policy would reconfigure it)");
  }

  const Section part = section(root, "partitioner", source);
  check(part, {"mode", "jobs_per_round", "cowork_max_us", "max_outstanding_jobs", "rebalance"}, source);
  const std::string mode = part.string("mode", "auto", {"auto", "sw", "hw"});
  c.partitioner.policy = mode == "sw"   ? engine::PartitionPolicy::sw_only
                         : mode == "hw" ? engine::PartitionPolicy::hw_only
                                        : engine::PartitionPolicy::automatic;
  c.partitioner.jobs_per_round = static_cast<uint32_t>(part.integer("jobs_per_round", c.partitioner.jobs_per_round, 0, 1024));
  if (part.has("cowork_max_us")) c.partitioner.cowork_max_seconds = part.number("cowork_max_us", 0, 0, 1e9, true) / 1e6;
  c.partitioner.max_outstanding_jobs =
      static_cast<uint32_t>(part.integer("max_outstanding_jobs", c.partitioner.max_outstanding_jobs, 1, 4096));
  c.partitioner.rebalance = part.boolean("rebalance", c.partitioner.rebalance);

  // [access]: how jobs' data reaches the slots (SimConfig::Access); off unless bytes_per_unit > 0.
  const Section acc_s = section(root, "access", source);
  check(acc_s, {"method", "bytes_per_unit", "registered", "remote", "link_gbps", "dma_setup_us", "sg_gbps", "sg_setup_us",
                "sg_page_ns", "memcpy_gbps", "gather_gbps", "gather_page_ns", "handoff_us"},
        source);
  SimConfig::Access& a = c.access;
  a.method = acc_s.string("method", a.method, {"auto", "zero_copy", "copy", "sg"});
  a.bytes_per_unit = acc_s.number("bytes_per_unit", a.bytes_per_unit, 0, 1e9);
  a.registered = acc_s.boolean("registered", a.registered);
  a.remote = acc_s.boolean("remote", a.remote);
  a.transfer.link_bps = acc_s.number("link_gbps", a.transfer.link_bps / 1e9, 0, 1e6) * 1e9;
  a.transfer.dma_setup_s = acc_s.number("dma_setup_us", a.transfer.dma_setup_s * 1e6, 0, 1e9) / 1e6;
  a.transfer.sg_bps = acc_s.number("sg_gbps", a.transfer.sg_bps / 1e9, 0, 1e6) * 1e9;
  a.transfer.sg_setup_s = acc_s.number("sg_setup_us", a.transfer.sg_setup_s * 1e6, 0, 1e9) / 1e6;
  a.transfer.sg_page_s = acc_s.number("sg_page_ns", a.transfer.sg_page_s * 1e9, 0, 1e9) / 1e9;
  a.host.memcpy_bps = acc_s.number("memcpy_gbps", a.host.memcpy_bps / 1e9, 0, 1e6) * 1e9;
  a.host.gather_bps = acc_s.number("gather_gbps", a.host.gather_bps / 1e9, 0, 1e6) * 1e9;
  a.host.gather_page_s = acc_s.number("gather_page_ns", a.host.gather_page_s * 1e9, 0, 1e9) / 1e9;
  a.host.handoff_s = acc_s.number("handoff_us", a.host.handoff_s * 1e6, 0, 1e9) / 1e6;
  if (acc_s.table() != nullptr && !a.enabled() && acc_s.table()->size() > 0) {
    acc_s.fail("bytes_per_unit", "must be > 0 for the [access] settings to mean anything (0: data moves free)");
  }

  // [translation]: a PHASE/V session's device TLB (SimConfig::Translation); "aisle" leaves it out.
  const Section tr_s = section(root, "translation", source);
  check(tr_s, {"mode", "tlb_entries", "tlb_ways", "tlb_scope", "tlb_walk_reads", "tlb_read_ns", "bytes_per_unit", "pattern"},
        source);
  SimConfig::Translation& tr = c.translation;
  tr.mode = tr_s.string("mode", tr.mode, {"aisle", "phasev"});
  tr.tlb.entries = static_cast<uint32_t>(tr_s.integer("tlb_entries", tr.tlb.entries, 1, 1 << 20));
  tr.tlb.ways = static_cast<uint32_t>(tr_s.integer("tlb_ways", tr.tlb.ways, 1, 1 << 20));
  tr.tlb.per_slot = tr_s.string("tlb_scope", tr.tlb.per_slot ? "per_slot" : "shared", {"shared", "per_slot"}) == "per_slot";
  tr.tlb.walk_reads = tr_s.number("tlb_walk_reads", tr.tlb.walk_reads, 0, 1e6);
  tr.tlb.read_s = tr_s.number("tlb_read_ns", tr.tlb.read_s * 1e9, 0, 1e9) / 1e9;
  tr.bytes_per_unit = tr_s.number("bytes_per_unit", tr.bytes_per_unit, 0, 1e9);
  tr.random = tr_s.string("pattern", tr.random ? "random" : "sequential", {"random", "sequential"}) == "random";
  if (tr.tlb.ways > tr.tlb.entries) tr_s.fail("tlb_ways", "must not exceed tlb_entries");

  const Section run = section(root, "run", source);
  check(run, {"seeds", "reps", "base_seed"}, source);
  sc.seeds = static_cast<uint32_t>(run.integer("seeds", sc.seeds, 1, 1000000));
  sc.reps = static_cast<uint32_t>(run.integer("reps", sc.reps, 1, 1000000));
  sc.base_seed = static_cast<uint64_t>(run.integer("base_seed", static_cast<int64_t>(sc.base_seed), 0,
                                                   std::numeric_limits<int64_t>::max()));
  return sc;
}

// Walks/creates the tables of a dotted key; returns the last table and the last key part.
std::pair<toml::table*, std::string> locate(toml::table& root, std::string_view key, std::string_view source) {
  toml::table* t = &root;
  std::string_view rest = key;
  for (;;) {
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos) break;
    const std::string part(rest.substr(0, dot));
    rest = rest.substr(dot + 1);
    toml::node* n = t->get(part);
    if (n == nullptr) n = t->insert(part, toml::table{}).first->second.as_table();
    if (!n->is_table()) toml_fail(source, std::string(key) + ": '" + part + "' is not a table");
    t = n->as_table();
  }
  if (rest.empty()) toml_fail(source, "empty key in '" + std::string(key) + "'");
  return {t, std::string(rest)};
}


}  // namespace

Scenario parse_scenario(std::string_view text, std::string_view source, const ScenarioOptions& options) {
  return parse_table(parse_toml_text(text, source), source, options);
}

Scenario load_scenario(const std::string& path, const CalibrationReader& read_calibration) {
  const std::string text = config::read_text_file(path, "scenario file");
  ScenarioOptions o;
  o.base_dir = std::filesystem::path(path).parent_path().string();
  o.read_calibration = read_calibration;
  return parse_scenario(text, path, o);
}

std::vector<std::string> scenario_keys() {
  std::vector<std::string> keys = {
      "scenario.name", "scenario.title", "cpus.count", "cpus.time_slice_ms", "cpus.hz", "accelerators.slots",
      "accelerators.speedup", "accelerators.latency_us", "accelerators.reconfig_ms", "accelerators.resident",
      "accelerators.calibration", "accelerators.calibrated_function", "calls.o0_us", "calls.oc_us",
      "functions.count", "functions.first", "functions.N.speedup", "functions.N.latency_us",
      "functions.N.reconfig_ms", "functions.N.o0_us", "functions.N.oc_us", "functions.N.weight",
      "functions.N.calibrated_as", "applications.count", "applications.total_sw_s", "applications.call_min_ms",
      "applications.call_max_ms", "applications.call_mean_ms", "applications.sizes", "applications.same_calls",
      "applications.arrival", "applications.rate_per_s", "monitor.period_ms", "policy.name"};
  for (std::string_view p : kPolicyParams) keys.push_back("policy." + std::string(p));
  for (const char* k : {"partitioner.mode", "partitioner.jobs_per_round", "partitioner.cowork_max_us",
                        "partitioner.max_outstanding_jobs", "partitioner.rebalance", "access.method",
                        "access.bytes_per_unit", "access.registered", "access.remote", "access.link_gbps",
                        "access.dma_setup_us", "access.sg_gbps", "access.sg_setup_us", "access.sg_page_ns",
                        "access.memcpy_gbps", "access.gather_gbps", "access.gather_page_ns", "access.handoff_us",
                        "translation.mode", "translation.tlb_entries", "translation.tlb_ways", "translation.tlb_scope",
                        "translation.tlb_walk_reads", "translation.tlb_read_ns", "translation.bytes_per_unit",
                        "translation.pattern", "run.seeds", "run.reps", "run.base_seed"}) {
    keys.push_back(k);
  }
  return keys;
}

std::string set_scenario_key(std::string_view text, std::string_view key, std::string_view value, std::string_view source) {
  toml::table root = parse_toml_text(text, source);
  toml::table wrapped = parse_toml_text("v = " + std::string(value), std::string(source) + " (value of " + std::string(key) + ")");
  const toml::node* v = wrapped.get("v");
  if (v == nullptr || v->is_table() || v->is_array_of_tables()) {
    toml_fail(source, std::string(key) + ": a sweep value must be a number, string, boolean or list");
  }
  auto [table, last] = locate(root, key, source);
  table->insert_or_assign(last, *v);
  return toml_text(root);
}

std::string canonical_scenario_text(std::string_view text, std::string_view source) {
  return toml_text(parse_toml_text(text, source));
}

std::string scenario_value_label(std::string_view text, std::string_view key) {
  const toml::table root = parse_toml_text(text, "<label>");
  const toml::node_view<const toml::node> v = root.at_path(key);
  if (!v) return "";
  if (const auto* s = v.as_string()) return s->get();
  if (const auto* i = v.as_integer()) return std::to_string(i->get());
  if (const auto* f = v.as_floating_point()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", f->get());
    return buf;
  }
  if (const auto* b = v.as_boolean()) return b->get() ? "true" : "false";
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace tandem::sim
