#include "sim/study.hpp"

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <time.h>
#include <unistd.h>

#include "abi/status.hpp"
#include "base/stats.hpp"
#include "config/toml_checks.hpp"
#include "config/text_file.hpp"
#include "model/cost_model.hpp"
#include "sim/toml_text.hpp"

namespace tandem::sim {

namespace {

namespace fs = std::filesystem;
using config::check_keys;
using config::toml_fail;



// `over` merged into `base`, key by key (tables recursively): a sweep file refines its base scenario.
void merge(toml::table& base, const toml::table& over) {
  for (const auto& [key, node] : over) {
    toml::node* mine = base.get(key.str());
    if (mine != nullptr && mine->is_table() && node.is_table()) {
      merge(*mine->as_table(), *node.as_table());
    } else {
      base.insert_or_assign(key.str(), node);
    }
  }
}

// A TOML value as literal text ("8", "1.5", "\"sticky\"").
std::string literal(const toml::node& n) {
  std::ostringstream os;
  n.visit([&](const auto& v) { os << v; });
  return os.str();
}

std::vector<std::string> axis_values(const toml::table& axis, std::string_view field, const std::string& where,
                                     std::string_view source) {
  std::vector<std::string> out;
  const toml::node* n = axis.get(field);
  if (n == nullptr) return out;
  const auto* arr = n->as_array();
  if (arr == nullptr || arr->empty()) toml_fail(source, where + "." + std::string(field) + ": must be a non-empty list");
  for (const toml::node& v : *arr) {
    if (v.is_table() || v.is_array()) toml_fail(source, where + "." + std::string(field) + ": values must be numbers, strings or booleans");
    out.push_back(literal(v));
  }
  return out;
}

// from, to, step (inclusive): integers if all three are, else numbers.
std::vector<std::string> range_values(const toml::table& axis, const std::string& where, std::string_view source) {
  const auto num = [&](std::string_view k) {
    const toml::node* n = axis.get(k);
    if (n == nullptr) toml_fail(source, where + ": a range needs from, to and step");
    if (const auto* i = n->as_integer()) return static_cast<double>(i->get());
    if (const auto* f = n->as_floating_point()) return f->get();
    toml_fail(source, where + "." + std::string(k) + ": must be a number");
  };
  const double from = num("from"), to = num("to"), step = num("step");
  if (!(step > 0) || to < from) toml_fail(source, where + ": a range needs step > 0 and to >= from");
  const bool ints = axis.get("from")->is_integer() && axis.get("to")->is_integer() && axis.get("step")->is_integer();
  std::vector<std::string> out;
  for (size_t k = 0;; ++k) {
    const double v = from + static_cast<double>(k) * step;
    if (v > to + 1e-9 * step) break;
    if (out.size() >= 100000) toml_fail(source, where + ": more than 100000 values");
    char buf[40];
    if (ints) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(std::llround(v)));
    } else {
      std::snprintf(buf, sizeof buf, "%.17g", v);
      if (std::string_view(buf).find_first_of(".eEn") == std::string_view::npos) std::strcat(buf, ".0");
    }
    out.emplace_back(buf);
  }
  return out;
}

// "{key}" replaced by the point's value of key.
std::string fill(const std::string& templ, const std::string& text) {
  std::string out;
  for (size_t i = 0; i < templ.size();) {
    const size_t open = templ.find('{', i);
    if (open == std::string::npos) {
      out += templ.substr(i);
      break;
    }
    const size_t close = templ.find('}', open);
    if (close == std::string::npos) {
      out += templ.substr(i);
      break;
    }
    out += templ.substr(i, open - i);
    out += scenario_value_label(text, templ.substr(open + 1, close - open - 1));
    i = close + 1;
  }
  return out;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

fs::path run_path(const std::string& dir, const std::string& id) { return fs::path(dir) / "runs" / (id + ".json"); }

// A stored result that belongs to `spec` (a crash never leaves a partial file: results are renamed
// into place, but a foreign or damaged file is run again rather than trusted).
bool have_result(const std::string& dir, const RunSpec& spec) {
  std::ifstream in(run_path(dir, spec.id), std::ios::binary);
  if (!in) return false;
  std::string line;
  std::getline(in, line);
  try {
    const nlohmann::json j = nlohmann::json::parse(line);
    return j.value("id", "") == spec.id;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

// ---------------------------------------------------------------- study files

Study parse_study(std::string_view text, std::string_view source, const ScenarioOptions& options) {
  toml::table root = parse_toml_text(text, source);
  Study st;
  st.source = std::string(source);
  st.options = options;
  toml::table base;
  if (const toml::node* sw = root.get("sweep")) {
    if (!sw->is_table()) toml_fail(source, "sweep: must be a table");
    const toml::table& t = *sw->as_table();
    check_keys(t, "sweep", {"name", "scenario"}, source);
    if (const auto* n = t.get_as<std::string>("name")) st.name = n->get();
    if (const toml::node* sc = t.get("scenario")) {
      if (!sc->is_string()) toml_fail(source, "sweep.scenario: must be a file name");
      fs::path p(sc->as_string()->get());
      if (p.is_relative() && !options.base_dir.empty()) p = fs::path(options.base_dir) / p;
      base = parse_toml_text(config::read_text_file(p.string(), "scenario file"), p.string());
      if (base.contains("axis") || base.contains("sweep") || base.contains("figure")) {
        toml_fail(source, "sweep.scenario: '" + p.string() + "' must be a scenario, not a study");
      }
    }
  }
  if (const toml::node* fig = root.get("figure")) {
    if (!fig->is_table()) toml_fail(source, "figure: must be a table");
    const toml::table& t = *fig->as_table();
    check_keys(t, "figure", {"id", "title", "metric", "series", "x"}, source);
    FigureMeta m;
    const auto str = [&](std::string_view k, std::string& out) {
      if (const toml::node* n = t.get(k)) {
        if (!n->is_string()) toml_fail(source, "figure." + std::string(k) + ": must be a string");
        out = n->as_string()->get();
      }
    };
    str("id", m.id);
    str("title", m.title);
    str("metric", m.metric);
    str("series", m.series);
    str("x", m.x);
    if (m.metric != "normalized_makespan" && m.metric != "utilization") {
      toml_fail(source, "figure.metric: '" + m.metric + "' is not normalized_makespan or utilization");
    }
    if (m.x.empty()) toml_fail(source, "figure.x: the key on the x axis is required");
    st.figure = m;
  }
  if (const toml::node* axes = root.get("axis")) {
    const auto* arr = axes->as_array();
    if (arr == nullptr || !arr->is_array_of_tables()) toml_fail(source, "axis: must be [[axis]] tables");
    size_t i = 0;
    for (const toml::node& n : *arr) {
      const toml::table& t = *n.as_table();
      const std::string where = "axis[" + std::to_string(i++) + "]";
      check_keys(t, where, {"key", "values", "from", "to", "step", "quick"}, source);
      Axis a;
      const auto* key = t.get_as<std::string>("key");
      if (key == nullptr) toml_fail(source, where + ".key: the scenario key to vary is required");
      a.key = key->get();
      a.values = axis_values(t, "values", where, source);
      const bool range = t.contains("from") || t.contains("to") || t.contains("step");
      if (range && !a.values.empty()) toml_fail(source, where + ": values or from/to/step, not both");
      if (range) a.values = range_values(t, where, source);
      if (a.values.empty()) toml_fail(source, where + ": values = [...] or from/to/step are required");
      a.quick = axis_values(t, "quick", where, source);
      for (const Axis& other : st.axes) {
        if (other.key == a.key) toml_fail(source, where + ".key: '" + a.key + "' is already an axis");
      }
      st.axes.push_back(std::move(a));
    }
  }
  root.erase("sweep");
  root.erase("figure");
  root.erase("axis");
  merge(base, root);
  // A calibration file named relative to the study file: made absolute, so that a run spec executed
  // elsewhere (another process, a Ray worker) finds it.
  if (toml::table* acc = base.get_as<toml::table>("accelerators")) {
    if (const auto* cal = acc->get_as<std::string>("calibration")) {
      const fs::path p(cal->get());
      if (p.is_relative() && !options.base_dir.empty()) acc->insert_or_assign("calibration", fs::absolute(fs::path(options.base_dir) / p).string());
    }
  }
  st.base_text = toml_text(base);
  if (const auto* n = base.at_path("scenario.name").as_string(); n != nullptr && st.name.empty()) st.name = n->get();
  if (st.name.empty()) st.name = fs::path(std::string(source)).stem().string();
  // The base itself must be a valid scenario, so that a typo is reported once, by its own key.
  parse_scenario(st.base_text, source, options);
  if (st.figure) {
    bool x_is_axis = false;
    for (const Axis& a : st.axes) x_is_axis = x_is_axis || a.key == st.figure->x;
    if (!x_is_axis) toml_fail(source, "figure.x: '" + st.figure->x + "' is not one of the axes");
  }
  return st;
}

Study load_study(const std::string& path, const CalibrationReader& read_calibration) {
  ScenarioOptions o;
  o.base_dir = fs::path(path).parent_path().string();
  o.read_calibration = read_calibration;
  return parse_study(config::read_text_file(path, "study file"), path, o);
}

std::vector<StudyPoint> expand_study(const Study& study, bool quick) {
  std::vector<const std::vector<std::string>*> values;
  size_t total = 1;
  for (const Axis& a : study.axes) {
    values.push_back(quick && !a.quick.empty() ? &a.quick : &a.values);
    total *= values.back()->size();
  }
  if (total > 1000000) throw Error(Status::invalid_argument, study.source + ": more than a million points");
  std::vector<StudyPoint> points;
  std::vector<size_t> index(study.axes.size(), 0);
  for (size_t p = 0; p < total; ++p) {
    StudyPoint pt;
    std::string text = study.base_text;
    std::string where;
    for (size_t k = 0; k < study.axes.size(); ++k) {
      const std::string& v = (*values[k])[index[k]];
      text = set_scenario_key(text, study.axes[k].key, v, study.source);
      where += (where.empty() ? "" : ", ") + study.axes[k].key + " = " + v;
    }
    pt.text = canonical_scenario_text(text, study.source);
    for (const Axis& a : study.axes) pt.labels.push_back(scenario_value_label(pt.text, a.key));
    pt.scenario = parse_scenario(pt.text, where.empty() ? study.source : study.source + " (" + where + ")", study.options);
    points.push_back(std::move(pt));
    for (size_t k = study.axes.size(); k-- > 0;) {  // the last axis turns fastest
      if (++index[k] < values[k]->size()) break;
      index[k] = 0;
    }
  }
  return points;
}

FigureSpec figure_spec(const Study& study, bool quick) {
  if (!study.figure) throw Error(Status::invalid_argument, study.source + ": not a figure (no [figure] table)");
  const FigureMeta& m = *study.figure;
  FigureSpec f;
  f.metric = m.metric;
  for (StudyPoint& sp : expand_study(study, quick)) {
    if (f.points.empty()) {
      f.id = fill(m.id, sp.text);
      f.title = fill(m.title, sp.text);
    }
    Point p;
    p.series = fill(m.series, sp.text);
    p.x = std::stod(scenario_value_label(sp.text, m.x));
    p.config = sp.scenario.config;
    p.workload = sp.scenario.workload;
    p.slots_for_eq58 = p.config.slots;
    f.points.push_back(std::move(p));
  }
  return f;
}

// ---------------------------------------------------------------- runs

RunSpec make_run_spec(const std::string& scenario_text, bool baseline, uint32_t seed, uint32_t rep) {
  toml::table t = parse_toml_text(scenario_text, "<run spec>");
  if (baseline) {
    // The SW-only run ignores these (simulate_sw_baseline): points that differ only here share it.
    t.erase("policy");
    t.erase("monitor");
    if (toml::table* acc = t.get_as<toml::table>("accelerators")) {
      for (const char* k : {"slots", "speedup", "latency_us", "reconfig_ms", "resident"}) acc->erase(k);
      if (acc->empty()) t.erase("accelerators");
    }
  }
  toml::table exec;
  exec.insert("kind", baseline ? "baseline" : "run");
  exec.insert("seed", static_cast<int64_t>(seed));
  exec.insert("rep", static_cast<int64_t>(rep));
  t.insert_or_assign("exec", std::move(exec));
  RunSpec r;
  r.text = toml_text(t);
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(r.text)));
  r.id = buf;
  r.baseline = baseline;
  return r;
}

std::string execute_run(std::string_view spec_text, const ScenarioOptions& options, double* cpu_seconds, uint64_t* events) {
  toml::table t = parse_toml_text(spec_text, "<run spec>");
  const toml::table* exec = t.get_as<toml::table>("exec");
  if (exec == nullptr) toml_fail("<run spec>", "exec: the [exec] table (kind, seed, rep) is required");
  check_keys(*exec, "exec", {"kind", "seed", "rep"}, "<run spec>");
  const auto* kind = exec->get_as<std::string>("kind");
  const auto* seed = exec->get_as<int64_t>("seed");
  const auto* rep = exec->get_as<int64_t>("rep");
  if (kind == nullptr || seed == nullptr || rep == nullptr || (kind->get() != "run" && kind->get() != "baseline") ||
      seed->get() < 0 || rep->get() < 0) {
    toml_fail("<run spec>", "exec: kind (run or baseline), seed >= 0 and rep >= 0 are required");
  }
  const bool baseline = kind->get() == "baseline";
  toml::table scenario_table = t;
  scenario_table.erase("exec");
  const Scenario sc = parse_scenario(toml_text(scenario_table), "<run spec>", options);
  // As run_figure does it: the seed index picks the call lists, the repetition the start's jitter.
  WorkloadSpec w = sc.workload;
  w.seed = mix_seed(sc.base_seed, static_cast<uint64_t>(seed->get()));
  SimConfig c = sc.config;
  c.jitter_seed = sc.reps > 1 ? mix_seed(w.seed, static_cast<uint64_t>(rep->get()) + 1) : 0;
  const std::vector<AppSpec> apps = make_workload(w);
  // CPU time of this thread, not wall time: the speed of the simulator, whatever else the host runs.
  const auto thread_cpu = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  const double t0 = thread_cpu();
  const SimResult r = baseline ? simulate_sw_baseline(c, apps) : simulate(c, apps);
  if (cpu_seconds != nullptr) *cpu_seconds = thread_cpu() - t0;
  if (events != nullptr) *events = r.events;

  std::vector<double> lat(r.call_latency.begin(), r.call_latency.end());
  std::sort(lat.begin(), lat.end());
  nlohmann::ordered_json j;
  char id[24];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(fnv1a(spec_text)));
  j["id"] = id;
  j["kind"] = kind->get();
  j["seed"] = seed->get();
  j["rep"] = rep->get();
  j["makespan_ns"] = r.makespan;
  j["events"] = r.events;
  j["calls"] = r.calls;
  j["jobs_completed"] = r.jobs_completed;
  j["jobs_cancelled"] = r.jobs_cancelled;
  j["demand_packets"] = r.demand_packets;
  j["reconfigurations"] = r.reconfigurations;
  j["context_switches"] = r.context_switches;
  j["total_units"] = r.total_units;
  j["hw_units"] = r.hw_units;
  j["slot_busy_ns"] = r.slot_busy_ns;
  if (c.access.enabled()) {
    for (uint8_t m = 0; m < TANDEM_ACCESS_COUNT_; ++m) {
      j["calls_by_method"][std::string(model::access_method_name(m))] = r.calls_by_method[m];
    }
    j["bytes_moved"] = r.bytes_moved;
  }
  if (c.translation.enabled()) {
    j["tlb_hits"] = r.tlb_hits;
    j["tlb_misses"] = r.tlb_misses;
  }
  j["cpu_busy_ns"] = r.cpu_busy_ns;
  j["call_latency_p50_ns"] = percentile_sorted(lat, 0.50);
  j["call_latency_p95_ns"] = percentile_sorted(lat, 0.95);
  j["call_latency_p99_ns"] = percentile_sorted(lat, 0.99);
  j["call_latency_max_ns"] = lat.empty() ? 0.0 : lat.back();
  j["slot_jobs"] = r.slot_jobs;
  j["app_latency_ns"] = r.app_latency_ns;
  j["app_sw_ns"] = r.app_sw_ns;
  return j.dump() + "\n";
}

StudyPlan plan_study(const Study& study, bool quick) {
  StudyPlan plan;
  plan.points = expand_study(study, quick);
  std::map<std::string, size_t> by_id;
  const auto add = [&](RunSpec spec) {
    auto it = by_id.find(spec.id);
    if (it == by_id.end()) {
      it = by_id.emplace(spec.id, plan.runs.size()).first;
      plan.runs.push_back(std::move(spec));
    }
    return it->second;
  };
  for (const StudyPoint& p : plan.points) {
    std::vector<std::pair<size_t, size_t>> runs;
    for (uint32_t s = 0; s < p.scenario.seeds; ++s) {
      for (uint32_t r = 0; r < p.scenario.reps; ++r) {
        const size_t run = add(make_run_spec(p.text, false, s, r));
        const size_t base = add(make_run_spec(p.text, true, s, r));
        runs.emplace_back(run, base);
      }
    }
    plan.point_runs.push_back(std::move(runs));
  }
  return plan;
}

void store_run_result(const std::string& dir, const std::string& id, std::string_view text) {
  const fs::path path = run_path(dir, id);
  fs::create_directories(path.parent_path());
  const fs::path tmp = path.string() + ".tmp" + std::to_string(::getpid()) + "-" +
                       std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.flush()) throw Error(Status::io_error, "cannot write '" + tmp.string() + "'");
  }
  fs::rename(tmp, path);
}

std::vector<const RunSpec*> missing_runs(const StudyPlan& plan, const std::string& dir) {
  std::vector<const RunSpec*> out;
  for (const RunSpec& r : plan.runs) {
    if (!have_result(dir, r)) out.push_back(&r);
  }
  return out;
}

LocalRunStats run_missing(const StudyPlan& plan, const std::string& dir, uint32_t threads, const ScenarioOptions& options,
                          const std::function<void(size_t, size_t, size_t)>& progress) {
  const std::vector<const RunSpec*> todo = missing_runs(plan, dir);
  LocalRunStats stats;
  stats.reused = plan.runs.size() - todo.size();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::max<uint32_t>(1, std::min<uint32_t>(threads, static_cast<uint32_t>(std::max<size_t>(todo.size(), 1))));
  std::atomic<size_t> next{0};
  std::mutex mutex;  // guards stats, progress and the first error
  std::string error;
  size_t done = 0;
  if (progress) progress(stats.reused, plan.runs.size(), stats.reused);
  const auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < todo.size(); i = next.fetch_add(1)) {
      try {
        double seconds = 0;
        uint64_t events = 0;
        const std::string result = execute_run(todo[i]->text, options, &seconds, &events);
        store_run_result(dir, todo[i]->id, result);
        std::lock_guard lock(mutex);
        ++stats.executed;
        stats.events += events;
        stats.cpu_seconds += seconds;
        ++done;
        if (progress) progress(stats.reused + done, plan.runs.size(), stats.reused);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        if (error.empty()) error = e.what();
        next.store(todo.size());
      }
    }
  };
  std::vector<std::thread> pool;
  for (uint32_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (!error.empty()) throw Error(Status::invalid_argument, error);
  return stats;
}

// ---------------------------------------------------------------- results

namespace {

struct RunResult {
  double makespan_s = 0;
  uint64_t events = 0;
  uint64_t reconfigurations = 0;
  uint64_t jobs = 0;
  uint64_t min_slot_jobs = 0, max_slot_jobs = 0;
  double slot_busy_s = 0, cpu_busy_s = 0;
  double p50_s = 0, p95_s = 0, p99_s = 0, max_s = 0;
  double hw_fraction = 0;
  std::vector<double> slowdown;  // per application: its calls' latency / their SW-only time
};

RunResult read_result(const std::string& dir, const RunSpec& spec) {
  std::ifstream in(run_path(dir, spec.id), std::ios::binary);
  if (!in) throw Error(Status::io_error, "run " + spec.id + " has no result in " + dir + "/runs");
  std::string line;
  std::getline(in, line);
  const nlohmann::json j = nlohmann::json::parse(line);
  RunResult r;
  r.makespan_s = static_cast<double>(j.at("makespan_ns").get<int64_t>()) * 1e-9;
  r.events = j.at("events").get<uint64_t>();
  r.reconfigurations = j.at("reconfigurations").get<uint64_t>();
  r.jobs = j.at("jobs_completed").get<uint64_t>();
  const std::vector<uint64_t> slot_jobs = j.at("slot_jobs").get<std::vector<uint64_t>>();
  if (!slot_jobs.empty()) {
    r.min_slot_jobs = *std::min_element(slot_jobs.begin(), slot_jobs.end());
    r.max_slot_jobs = *std::max_element(slot_jobs.begin(), slot_jobs.end());
  }
  r.slot_busy_s = static_cast<double>(j.at("slot_busy_ns").get<int64_t>()) * 1e-9;
  r.cpu_busy_s = static_cast<double>(j.at("cpu_busy_ns").get<int64_t>()) * 1e-9;
  r.p50_s = j.at("call_latency_p50_ns").get<double>() * 1e-9;
  r.p95_s = j.at("call_latency_p95_ns").get<double>() * 1e-9;
  r.p99_s = j.at("call_latency_p99_ns").get<double>() * 1e-9;
  r.max_s = j.at("call_latency_max_ns").get<double>() * 1e-9;
  const uint64_t total = j.at("total_units").get<uint64_t>();
  r.hw_fraction = total > 0 ? static_cast<double>(j.at("hw_units").get<uint64_t>()) / static_cast<double>(total) : 0;
  const auto lat = j.at("app_latency_ns").get<std::vector<int64_t>>();
  const auto sw = j.at("app_sw_ns").get<std::vector<int64_t>>();
  for (size_t a = 0; a < lat.size() && a < sw.size(); ++a) {
    r.slowdown.push_back(sw[a] > 0 ? static_cast<double>(lat[a]) / static_cast<double>(sw[a]) : 0);
  }
  return r;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void append(std::string& out, const char* fmt, auto... args) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof buf, fmt, args...);
  if (n > 0) out.append(buf, static_cast<size_t>(std::min<int>(n, sizeof buf - 1)));
}

}  // namespace

StudySummary write_study_results(const Study& study, const StudyPlan& plan, const std::string& dir) {
  std::vector<std::optional<RunResult>> results(plan.runs.size());
  const auto result = [&](size_t i) -> const RunResult& {
    if (!results[i]) results[i] = read_result(dir, plan.runs[i]);
    return *results[i];
  };
  std::string header = "point";
  for (const Axis& a : study.axes) header += "," + csv_field(a.key);
  std::string runs_csv = header +
                         ",seed,rep,makespan_s,baseline_s,normalized_makespan,utilization,slot_utilization,cpu_utilization,"
                         "reconfigurations,jobs,jobs_per_slot_min,jobs_per_slot_max,call_p50_ms,call_p95_ms,call_p99_ms,"
                         "call_max_ms,slowdown_mean,slowdown_max,fairness,hw_fraction,events\n";
  std::string points_csv = header +
                           ",normalized_makespan,utilization,makespan_s,baseline_s,slot_utilization,reconfigurations,"
                           "jobs_per_slot_mean,call_p99_ms,slowdown_mean,slowdown_max,fairness,hw_fraction\n";
  StudySummary summary;
  double sum_nm = 0;
  for (size_t p = 0; p < plan.points.size(); ++p) {
    const StudyPoint& pt = plan.points[p];
    const SimConfig& c = pt.scenario.config;
    std::string prefix = std::to_string(p);
    for (const std::string& l : pt.labels) prefix += "," + csv_field(l);
    const uint32_t seeds = pt.scenario.seeds, reps = pt.scenario.reps;
    std::vector<std::vector<double>> run_s(seeds), base_s(seeds);
    double slot_util = 0, reconf = 0, per_slot = 0, p99 = 0, slow_mean = 0, slow_max = 0, fair = 0, hw = 0;
    std::vector<double> app_slowdown;
    const double n = static_cast<double>(plan.point_runs[p].size());
    for (size_t k = 0; k < plan.point_runs[p].size(); ++k) {
      const auto [ri, bi] = plan.point_runs[p][k];
      const RunResult& r = result(ri);
      const RunResult& b = result(bi);
      const uint32_t seed = static_cast<uint32_t>(k / reps), rep = static_cast<uint32_t>(k % reps);
      run_s[seed].push_back(r.makespan_s);
      base_s[seed].push_back(b.makespan_s);
      const double nm = b.makespan_s > 0 ? r.makespan_s / b.makespan_s : 0;
      const double util = model::utilization(model::expected_makespan(b.makespan_s, c.slots, c.cpus, c.speedup), r.makespan_s);
      const double su = r.makespan_s > 0 ? r.slot_busy_s / (c.slots * r.makespan_s) : 0;
      const double cu = r.makespan_s > 0 ? r.cpu_busy_s / (c.cpus * r.makespan_s) : 0;
      std::vector<double> progress;
      double smean = 0, smax = 0;
      for (double s : r.slowdown) {
        smean += s / static_cast<double>(r.slowdown.size());
        smax = std::max(smax, s);
        progress.push_back(s > 0 ? 1.0 / s : 0);
      }
      const double fairness = jain_index(progress);
      if (app_slowdown.size() < r.slowdown.size()) app_slowdown.resize(r.slowdown.size(), 0);
      for (size_t a = 0; a < r.slowdown.size(); ++a) app_slowdown[a] += r.slowdown[a] / n;
      append(runs_csv, "%s,%u,%u,%.9f,%.9f,%.6f,%.6f,%.6f,%.6f,%llu,%llu,%llu,%llu,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%llu\n",
             prefix.c_str(), seed, rep, r.makespan_s, b.makespan_s, nm, util, su, cu,
             static_cast<unsigned long long>(r.reconfigurations), static_cast<unsigned long long>(r.jobs),
             static_cast<unsigned long long>(r.min_slot_jobs), static_cast<unsigned long long>(r.max_slot_jobs),
             r.p50_s * 1e3, r.p95_s * 1e3, r.p99_s * 1e3, r.max_s * 1e3, smean, smax, fairness, r.hw_fraction,
             static_cast<unsigned long long>(r.events));
      slot_util += su / n;
      reconf += static_cast<double>(r.reconfigurations) / n;
      per_slot += static_cast<double>(r.jobs) / c.slots / n;
      p99 += r.p99_s * 1e3 / n;
      slow_mean += smean / n;
      slow_max += smax / n;
      fair += fairness / n;
      hw += r.hw_fraction / n;
    }
    const PointAggregate agg = aggregate_point(run_s, base_s, c.slots, c.cpus, c.speedup);
    append(points_csv, "%s,%.6f,%.6f,%.9f,%.9f,%.6f,%.2f,%.2f,%.6f,%.6f,%.6f,%.6f,%.6f\n", prefix.c_str(),
           agg.normalized_makespan, agg.utilization, agg.makespan_s, agg.baseline_s, slot_util, reconf, per_slot, p99,
           slow_mean, slow_max, fair, hw);
    sum_nm += agg.normalized_makespan;
    if (plan.points.size() == 1) summary.app_slowdown = app_slowdown;
  }
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    summary.events += result(i).events;
    (plan.runs[i].baseline ? summary.baselines : summary.runs) += 1;
  }
  summary.avg_normalized_makespan = plan.points.empty() ? 0 : sum_nm / static_cast<double>(plan.points.size());
  const auto write = [&](const std::string& name, const std::string& text) {
    const fs::path path = fs::path(dir) / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.flush()) throw Error(Status::io_error, "cannot write '" + path.string() + "'");
  };
  write("runs.csv", runs_csv);
  write("points.csv", points_csv);
  return summary;
}

}  // namespace tandem::sim
