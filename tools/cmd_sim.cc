// tandem sim run SCENARIO.toml | sim sweep SWEEP.toml | sim exec SPEC: the simulator as a research
// instrument (docs/sim.md, "Scenario files" and "Studies"). A run is a study without axes; both run
// locally on every core, or on a Ray cluster through python/tandem_sim, each run a Ray task that calls
// `tandem sim exec`. Results are byte-identical either way.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <thread>

#include "client/calibration.hpp"
#include "commands.hpp"
#include "funcs/function.hpp"
#include "output.hpp"
#include "plot.hpp"
#include "sim/study.hpp"
#include "abi/status.hpp"

namespace tandem::tools {

namespace {

namespace fs = std::filesystem;

struct StudyOptions {
  std::string file;
  std::string out;
  uint32_t threads = 0;  // 0: every core
  bool quick = false;
  std::string ray;       // "" (local), "local" or a cluster address
  uint32_t ray_workers = 0;
  std::string python;
  bool no_plot = false;
};

// Calibration files belong to the client layer; the simulator gets a reader from here.
std::optional<sim::CalibratedCosts> read_calibration(const std::string& path, const std::string& function) {
  const client::Calibration cal = client::load_calibration(path);
  const funcs::FunctionInfo* fn = funcs::find_function(function);
  if (fn == nullptr || !cal.functions[fn->id]) return std::nullopt;
  const model::CostParams& p = *cal.functions[fn->id];
  return sim::CalibratedCosts{p.xc, p.xa, p.o0, p.oc, p.da};
}

std::string format_seconds(double s) { return s < 120 ? fmt::format("{:.1f} s", s) : fmt::format("{:.1f} min", s / 60); }

// Runs the study's missing runs through Ray (python -m tandem_sim ray ...).
void run_on_ray(const sim::StudyPlan& plan, const std::string& out, const StudyOptions& o) {
  const std::vector<const sim::RunSpec*> todo = sim::missing_runs(plan, out);
  fmt::print(stderr, "sweep: {} runs, {} already in {}/runs, {} for Ray ({})\n", plan.runs.size(),
             plan.runs.size() - todo.size(), out, todo.size(), o.ray);
  if (todo.empty()) return;
  std::string jobs;
  for (const sim::RunSpec* r : todo) jobs += nlohmann::json{{"id", r->id}, {"spec", r->text}}.dump() + "\n";
  const std::string jobs_file = (fs::path(out) / "ray-jobs.jsonl").string();
  write_file(jobs_file, jobs);
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args{"-m", "tandem_sim", "ray", "--address", o.ray, "--tandem", self, "--jobs", jobs_file,
                                "--out", (fs::path(out) / "runs").string(),
                                "--timing", (fs::path(out) / "ray-timing.json").string()};
  if (o.ray_workers > 0) {
    args.push_back("--workers");
    args.push_back(std::to_string(o.ray_workers));
  }
  PlotOptions py;
  py.python = o.python;
  const int rc = run_python(args, py);
  if (rc != 0) {
    throw Error(Status::io_error, fmt::format("the Ray sweep failed (python -m tandem_sim exited with {}); runs finished "
                                              "so far are kept in {}/runs and will not be repeated", rc, out));
  }
  fs::remove(jobs_file);
}

int run_study(const StudyOptions& o, bool single) {
  const auto wall0 = std::chrono::steady_clock::now();
  const sim::Study study = sim::load_study(o.file, read_calibration);
  if (single && !study.axes.empty()) {
    throw Error(Status::invalid_argument, o.file + ": has [[axis]] tables; run it with tandem sim sweep");
  }
  const std::string out = o.out.empty() ? (fs::path("out") / "sim" / study.name).string() : o.out;
  const OutputDir out_dir(out);
  const OutputDir runs_dir((fs::path(out) / "runs").string());
  const sim::StudyPlan plan = sim::plan_study(study, o.quick);
  write_file((fs::path(out) / "scenario.toml").string(), study.base_text);
  const uint32_t threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  fmt::print(stderr, "{}: {} points, {} runs (with baselines){}\n", study.name, plan.points.size(), plan.runs.size(),
             o.quick ? ", quick" : "");

  sim::LocalRunStats local;
  if (o.ray.empty()) {
    auto last = std::chrono::steady_clock::now() - std::chrono::seconds(10);
    local = sim::run_missing(plan, out, threads, study.options, [&](size_t done, size_t total, size_t reused) {
      const auto now = std::chrono::steady_clock::now();
      if (done != total && now - last < std::chrono::seconds(2)) return;
      last = now;
      const double s = std::chrono::duration<double>(now - wall0).count();
      const size_t fresh = done - reused;
      const double eta = fresh > 0 ? s / static_cast<double>(fresh) * static_cast<double>(total - done) : 0;
      fmt::print(stderr, "sweep: {}/{} runs ({} reused), {} elapsed{}\n", done, total, reused, format_seconds(s),
                 done < total && fresh > 0 ? ", about " + format_seconds(eta) + " left" : "");
    });
  } else {
    run_on_ray(plan, out, o);
  }
  const sim::StudySummary s = sim::write_study_results(study, plan, out);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

  nlohmann::ordered_json j;
  j["study"] = study.name;
  j["source"] = o.file;
  j["quick"] = o.quick;
  nlohmann::ordered_json axes = nlohmann::ordered_json::array();
  for (const sim::Axis& a : study.axes) axes.push_back(a.key);
  j["axes"] = axes;
  j["points"] = plan.points.size();
  j["runs"] = s.runs;
  j["baseline_runs"] = s.baselines;
  j["events"] = s.events;
  j["avg_normalized_makespan"] = s.avg_normalized_makespan;
  if (single) j["app_slowdown"] = s.app_slowdown;
  // How this invocation ran (host figures, not results).
  j["executor"] = o.ray.empty() ? "local" : "ray " + o.ray;
  if (o.ray.empty()) {
    j["threads"] = threads;
    j["executed_runs"] = local.executed;
    j["reused_runs"] = local.reused;
    // Events per CPU second of a simulation thread (thread CPU time: other tenants do not count).
    j["events_per_second_per_thread"] = local.cpu_seconds > 0 ? static_cast<double>(local.events) / local.cpu_seconds : 0;
    j["run_cpu_seconds"] = local.cpu_seconds;
  } else if (o.ray_workers > 0) {
    j["ray_workers"] = o.ray_workers;
  }
  j["wall_seconds"] = wall;
  write_file((fs::path(out) / "summary.json").string(), j.dump(2) + "\n");
  if (!o.no_plot) {
    PlotOptions plot;
    plot.python = o.python;
    run_plot("plot_sweep.py", {out}, plot);
  }
  fmt::print("{}: {} points, {} runs + {} baselines, avg normalised makespan {:.4f}\n", study.name, plan.points.size(),
             s.runs, s.baselines, s.avg_normalized_makespan);
  if (o.ray.empty() && local.executed > 0) {
    fmt::print("{} runs executed on {} threads: {:.2f} M events per CPU second per thread, {} wall\n", local.executed, threads,
               local.events / local.cpu_seconds / 1e6, format_seconds(wall));
  } else {
    fmt::print("{} wall\n", format_seconds(wall));
  }
  fmt::print("wrote {} (runs.csv, points.csv, summary.json)\n", out);
  return 0;
}

void add_study_options(CLI::App* cmd, StudyOptions& o) {
  cmd->add_option("--out", o.out, "Output folder (default out/sim/<name>); runs already there are not repeated");
  cmd->add_option("--threads", o.threads, "Simulations in parallel (default: every core; results do not depend on it)");
  cmd->add_flag("--quick", o.quick, "Use each axis's quick = [...] values");
  cmd->add_option("--ray", o.ray, "Run on Ray: 'local' starts an instance on this machine, else a cluster address");
  cmd->add_option("--ray-workers", o.ray_workers, "With --ray local: CPUs (workers) of the instance (default: every core)");
  cmd->add_option("--python", o.python, "Python interpreter for Ray and plots (default $TANDEM_PYTHON or python3)");
  cmd->add_flag("--no-plot", o.no_plot, "Do not run python/plot_sweep.py");
}

}  // namespace

void add_sim_commands(CLI::App& app) {
  CLI::App* sim = app.add_subcommand("sim", "The discrete-event simulator: scenarios from files, sweeps, Ray");
  sim->require_subcommand(1);

  auto run = std::make_shared<StudyOptions>();
  CLI::App* r = sim->add_subcommand("run", "Simulate one scenario file over its seeds and repetitions");
  r->add_option("scenario", run->file, "Scenario file (TOML; docs/sim.md lists every key)")->required();
  add_study_options(r, *run);
  r->callback([run] { run_study(*run, true); });

  auto sweep = std::make_shared<StudyOptions>();
  CLI::App* s = sim->add_subcommand("sweep", "Simulate the cartesian product of a sweep file's axes");
  s->add_option("sweep", sweep->file, "Sweep file: a scenario plus [[axis]] tables")->required();
  add_study_options(s, *sweep);
  s->callback([sweep] { run_study(*sweep, false); });

  auto spec = std::make_shared<std::string>();
  CLI::App* e = sim->add_subcommand("exec", "Run one run spec (from a sweep's Ray tasks); its result on stdout");
  e->add_option("spec", *spec, "Run spec file, or - for standard input")->required();
  e->callback([spec] {
    std::string text;
    if (*spec == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      std::ifstream in(*spec, std::ios::binary);
      if (!in) throw Error(Status::io_error, "cannot read run spec '" + *spec + "'");
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    sim::ScenarioOptions options;
    options.read_calibration = read_calibration;
    std::cout << sim::execute_run(text, options);
    std::cout.flush();
  });
}

}  // namespace tandem::tools
