// tandem experiment thesis --figure N   and   tandem experiment compare-policies
// The thesis's multitasking evaluation (seed 000, 5.5.3-5.5.5) on the discrete-event simulator.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "commands.hpp"
#include "output.hpp"
#include "plot.hpp"
#include "config/config.hpp"
#include "engine/reconfig.hpp"
#include "sim/experiment.hpp"
#include "abi/status.hpp"

namespace tandem::tools {

namespace {

namespace fs = std::filesystem;

struct ThesisOptions {
  std::string figure;
  uint32_t seeds = 30;
  uint32_t reps = 3;
  uint32_t threads = 2;
  uint64_t seed = 1;
  std::string out;
  std::string policy;  // overrides algorithm1 in the dynamic figures
  bool quick = false;
  bool trace = false;
  uint32_t trace_apps = 2;
  double trace_speedup = 10;
};

sim::RunOptions run_options(const ThesisOptions& o, const std::string& label) {
  sim::RunOptions r;
  r.seeds = o.quick ? std::min<uint32_t>(o.seeds, 2) : o.seeds;
  r.reps = o.quick ? 1 : o.reps;
  r.threads = o.threads;
  r.base_seed = o.seed;
  const auto t0 = std::chrono::steady_clock::now();
  r.progress = [label, t0](size_t done, size_t total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr, "{}: {}/{} runs ({:.0f}%), {:.1f} s\n", label, done, total,
               total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0, s);
  };
  return r;
}

nlohmann::json figure_json(const sim::FigureResult& r, const sim::RunOptions& ro) {
  nlohmann::json j;
  j["figure"] = r.spec.id;
  j["title"] = r.spec.title;
  j["metric"] = r.spec.metric;
  j["seeds"] = ro.seeds;
  j["reps"] = ro.reps;
  j["runs"] = r.runs;
  j["points"] = r.points.size();
  j["avg_normalized_makespan"] = r.avg_normalized_makespan;
  j["avg_utilization"] = r.avg_utilization;
  j["events"] = r.events;
  j["events_per_second"] = r.events_per_second();  // per simulation thread
  j["events_per_wall_second"] = r.wall_seconds > 0 ? static_cast<double>(r.events) / r.wall_seconds : 0;
  j["wall_seconds"] = r.wall_seconds;
  nlohmann::json series = nlohmann::json::object();
  std::map<std::string, std::pair<double, double>> sums;
  std::map<std::string, int> counts;
  for (const sim::PointResult& p : r.points) {
    sums[p.series].first += p.normalized_makespan;
    sums[p.series].second += p.utilization;
    ++counts[p.series];
  }
  for (const auto& [name, s] : sums) {
    series[name] = {{"avg_normalized_makespan", s.first / counts[name]}, {"avg_utilization", s.second / counts[name]}};
  }
  j["series"] = series;
  return j;
}

void write_trace(const ThesisOptions& o, const sim::FigureSpec& spec, const fs::path& dir) {
  // Fig 5.13/5.14: two applications with the same call list, 8 accelerators of 10x, the figure's P.
  const sim::Point& pt = spec.points.front();
  sim::WorkloadSpec w = pt.workload;
  w.apps = o.trace_apps;
  w.same_calls_for_all = o.trace_apps == 2;  // the thesis's traces: two apps, one seed
  w.seed = sim::mix_seed(o.seed, 0);
  if (o.quick) w.total_sw_s = 1.0;
  sim::SimConfig c = pt.config;
  c.speedup = o.trace_speedup;
  c.trace = true;
  const std::vector<sim::AppSpec> apps = sim::make_workload(w);
  const sim::SimResult r = sim::simulate(c, apps);
  write_file((dir / "trace.json").string(), sim::chrome_trace_json(r, apps));
  write_file((dir / "residency.csv").string(), sim::residency_csv(r));
  write_file((dir / "calls.csv").string(), sim::calls_csv(r));
  const std::string title = fmt::format("{} apps, {:g}x, P = {:g} ms, {}: makespan {:.1f} ms", w.apps, c.speedup,
                                        static_cast<double>(c.period_ns) * 1e-6, c.policy, static_cast<double>(r.makespan) * 1e-6);
  run_plot("plot_trace.py", {(dir / "residency.csv").string(), (dir / "calls.csv").string(), (dir / "trace.png").string(), title});
  fmt::print("trace: {} (open in ui.perfetto.dev), {}\n", (dir / "trace.json").string(), (dir / "trace.png").string());
}

int run_thesis(const ThesisOptions& o) {
  if (o.figure == "5.13" || o.figure == "5.14") {  // the timelines alone: P = 100 ms and P = 1 ms
    const fs::path dir = o.out.empty() ? fs::path("out") / "thesis" / ("fig-" + o.figure) : fs::path(o.out);
    const OutputDir out_dir(dir.string());
    sim::FigureSpec spec = sim::thesis_figure(o.figure == "5.13" ? "5.11" : "5.15", true);
    if (!o.policy.empty()) spec.points.front().config.policy = o.policy;
    write_trace(o, spec, dir);
    return 0;
  }
  sim::FigureSpec spec = sim::thesis_figure(o.figure, o.quick);
  if (!o.policy.empty()) {
    (void)config::parse_policy(o.policy, {});  // validates the name and parameters
    for (sim::Point& p : spec.points) {
      if (p.config.policy != "none") p.config.policy = o.policy;
    }
  }
  const fs::path dir = o.out.empty() ? fs::path("out") / "thesis" / ("fig-" + o.figure) : fs::path(o.out);
  const OutputDir out_dir(dir.string());
  const sim::RunOptions ro = run_options(o, "figure " + o.figure);
  const sim::FigureResult r = sim::run_figure(spec, ro);
  write_file((dir / "figure.csv").string(), sim::figure_csv(r));
  nlohmann::json j = figure_json(r, ro);
  j["quick"] = o.quick;
  j["policy"] = o.policy.empty() ? "default" : o.policy;
  write_file((dir / "summary.json").string(), j.dump(2) + "\n");
  run_plot("plot_thesis.py", {(dir / "figure.csv").string(), r.spec.metric, "Figure " + r.spec.id + ": " + r.spec.title,
                          (dir / "figure.png").string()});
  if (o.trace) write_trace(o, spec, dir);
  fmt::print("figure {}: {} points, {} runs, avg normalised makespan {:.3f}, avg utilisation {:.3f}\n", r.spec.id,
             r.points.size(), r.runs, r.avg_normalized_makespan, r.avg_utilization);
  fmt::print("{} events in {:.2f} s of simulation ({:.2f} M events/s per thread), {:.1f} s wall\n", r.events,
             r.run_seconds, r.events_per_second() / 1e6, r.wall_seconds);
  fmt::print("wrote {}\n", dir.string());
  return 0;
}

struct CompareOptions {
  ThesisOptions base;
  std::vector<std::string> policies{"algorithm1", "sticky", "reactive"};
};

int run_compare(const CompareOptions& co) {
  const ThesisOptions& o = co.base;
  const fs::path dir = o.out.empty() ? fs::path("out") / "thesis" / "compare-policies" : fs::path(o.out);
  const OutputDir out_dir(dir.string());
  nlohmann::json summary;
  summary["workload"] = "16 functions, 8 slots, 8 applications, P = 1 ms and 100 ms, speedups 0-10x";
  summary["quick"] = o.quick;
  nlohmann::json policies = nlohmann::json::object();
  std::string csv;
  double alg1 = 0, best = 0;
  std::string best_name;
  uint64_t events = 0;
  double run_seconds = 0;
  for (const std::string& name : co.policies) {
    (void)config::parse_policy(name, {});  // validates the name and parameters
    const sim::RunOptions ro = run_options(o, "policy " + name);
    const sim::FigureResult r = sim::run_figure(sim::policy_figure(name, o.quick), ro);
    events += r.events;
    run_seconds += r.run_seconds;
    std::string part = sim::figure_csv(r);
    csv += csv.empty() ? part : part.substr(part.find('\n') + 1);
    nlohmann::json pj = figure_json(r, ro);
    policies[name] = {{"avg_normalized_makespan", r.avg_normalized_makespan},
                      {"avg_utilization", r.avg_utilization},
                      {"series", pj["series"]}};
    if (name == "algorithm1") alg1 = r.avg_normalized_makespan;
    if (name != "algorithm1" && (best_name.empty() || r.avg_normalized_makespan < best)) {
      best = r.avg_normalized_makespan;
      best_name = name;
    }
    fmt::print("{:<12} avg normalised makespan {:.4f}, avg utilisation {:.4f}\n", name, r.avg_normalized_makespan,
               r.avg_utilization);
  }
  summary["policies"] = policies;
  summary["events"] = events;
  summary["events_per_second"] = run_seconds > 0 ? static_cast<double>(events) / run_seconds : 0;
  if (alg1 > 0 && !best_name.empty()) {
    summary["best_policy"] = best_name;
    summary["best_improvement_vs_alg1"] = 1.0 - best / alg1;
    fmt::print("best: {} ({:.1f}% lower average normalised makespan than algorithm1)\n", best_name,
               100.0 * (1.0 - best / alg1));
  }
  write_file((dir / "policies.csv").string(), csv);
  write_file((dir / "summary.json").string(), summary.dump(2) + "\n");
  run_plot("plot_thesis.py", {(dir / "policies.csv").string(), "normalized_makespan",
                          "Reconfiguration policies: 8 apps, 16 functions, 8 slots", (dir / "policies.png").string()});
  fmt::print("wrote {}\n", dir.string());
  return 0;
}

void add_common(CLI::App* cmd, ThesisOptions& o) {
  cmd->add_option("--seeds", o.seeds, "Workload seeds; results are averaged over them")
      ->check(CLI::Range(1u, 10000u))
      ->capture_default_str();
  cmd->add_option("--reps", o.reps, "Repetitions per seed (perturbed run-queue order and timer phase); median taken")
      ->check(CLI::Range(1u, 10000u))
      ->capture_default_str();
  cmd->add_option("--threads", o.threads, "Simulations run in parallel (results do not depend on it)")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Base seed")->capture_default_str();
  cmd->add_option("--out", o.out, "Output directory (default out/thesis/...)");
  cmd->add_flag("--quick", o.quick, "Two series, three speedups, at most 2 seeds and 1 repetition (seconds)");
}

}  // namespace

void add_thesis_experiments(CLI::App& experiment) {
  auto o = std::make_shared<ThesisOptions>();
  CLI::App* cmd = experiment.add_subcommand("thesis", "Reproduce a figure of the thesis's multitasking evaluation "
                                                      "(seed 000, 5.5.3-5.5.5) on the simulator");
  cmd->add_option("--figure", o->figure, "5.7 5.8 5.9 5.11 5.12 5.15 5.16 5.18 5.19 5.20 5.21; 5.13 and 5.14 write only the trace")->required();
  add_common(cmd, *o);
  cmd->add_option("--policy", o->policy, "Reconfiguration policy instead of algorithm1 (dynamic figures)");
  cmd->add_flag("--trace", o->trace, "Also write the timeline of Fig 5.13/5.14 (trace.json, trace.png)");
  cmd->add_option("--trace-apps", o->trace_apps, "Applications in the traced run (2: the thesis's, same calls)")
      ->capture_default_str();
  cmd->add_option("--trace-speedup", o->trace_speedup, "Accelerator speedup in the traced run")->capture_default_str();
  cmd->callback([o] { run_thesis(*o); });

  auto c = std::make_shared<CompareOptions>();
  CLI::App* cmp = experiment.add_subcommand("compare-policies", "Algorithm 1 versus our reconfiguration policies on "
                                                                "the dynamic workload (8 apps, P = 1 ms and 100 ms)");
  add_common(cmp, c->base);
  cmp->add_option("--policies", c->policies, "Policies to compare (algorithm1 is the reference)")->delimiter(',')
      ->capture_default_str();
  cmp->callback([c] { run_compare(*c); });
}

}  // namespace tandem::tools
