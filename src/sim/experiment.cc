#include "sim/experiment.hpp"
#include "base/stats.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "model/cost_model.hpp"
#include "sim/study.hpp"
#include "abi/status.hpp"

namespace tandem::sim {

namespace {

// configs/ of the source tree (compiled in), or $TANDEM_CONFIGS_DIR.
std::string configs_dir() {
  if (const char* env = std::getenv("TANDEM_CONFIGS_DIR"); env != nullptr && *env != '\0') return env;
  return TANDEM_CONFIGS_DIR;
}

}  // namespace

std::vector<std::string> thesis_figure_ids() {
  return {"5.7", "5.8", "5.9", "5.11", "5.12", "5.15", "5.16", "5.18", "5.19", "5.20", "5.21"};
}

std::string thesis_figure_file(const std::string& id) { return configs_dir() + "/thesis/fig-" + id + ".toml"; }

FigureSpec thesis_figure(const std::string& id, bool quick) {
  const std::vector<std::string> ids = thesis_figure_ids();
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
    throw Error(Status::invalid_argument, "unknown figure '" + id + "' (5.7 5.8 5.9 5.11 5.12 5.15 5.16 5.18 5.19 5.20 5.21)");
  }
  return figure_spec(load_study(thesis_figure_file(id)), quick);
}

FigureSpec policy_figure(const std::string& policy, bool quick) {
  Study study = load_study(configs_dir() + "/thesis/policies.toml");
  for (Axis& a : study.axes) {
    if (a.key == "policy.name") a.values = a.quick = {"\"" + policy + "\""};
  }
  return figure_spec(study, quick);
}

FigureResult run_figure(const FigureSpec& spec, const RunOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto wall0 = Clock::now();
  const uint32_t seeds = std::max<uint32_t>(options.seeds, 1);
  const uint32_t reps = std::max<uint32_t>(options.reps, 1);

  // Baselines depend only on the applications (count and call lists), the seed and the repetition.
  struct Task {
    int point = -1;       // -1: a baseline
    uint32_t apps = 0;
    uint32_t seed = 0;
    uint32_t rep = 0;
    size_t baseline = 0;  // index of its baseline task
  };
  std::vector<Task> tasks;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, size_t> baseline_index;
  for (size_t p = 0; p < spec.points.size(); ++p) {
    const Point& pt = spec.points[p];
    for (uint32_t s = 0; s < seeds; ++s) {
      for (uint32_t r = 0; r < reps; ++r) {
        const auto key = std::make_tuple(pt.workload.apps, pt.workload.functions, s, r);
        auto it = baseline_index.find(key);
        if (it == baseline_index.end()) {
          it = baseline_index.emplace(key, tasks.size()).first;
          Task b;
          b.point = -static_cast<int>(p) - 1;  // remember which point describes the workload
          b.apps = pt.workload.apps;
          b.seed = s;
          b.rep = r;
          tasks.push_back(b);
        }
        tasks.push_back(Task{static_cast<int>(p), pt.workload.apps, s, r, it->second});
      }
    }
  }

  struct Outcome {
    double makespan_s = 0;
    uint64_t events = 0;
    double seconds = 0;
    uint64_t reconfigurations = 0;
    double hw_fraction = 0;
  };
  std::vector<Outcome> outcomes(tasks.size());
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  const auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < tasks.size(); i = next.fetch_add(1)) {
      const Task& t = tasks[i];
      const Point& pt = spec.points[static_cast<size_t>(t.point >= 0 ? t.point : -t.point - 1)];
      WorkloadSpec w = pt.workload;
      w.seed = mix_seed(options.base_seed, t.seed);
      SimConfig c = pt.config;
      c.jitter_seed = reps > 1 ? mix_seed(w.seed, t.rep + 1) : 0;
      const std::vector<AppSpec> apps = make_workload(w);
      const auto t0 = Clock::now();
      const SimResult r = t.point >= 0 ? simulate(c, apps) : simulate_sw_baseline(c, apps);
      Outcome& o = outcomes[i];
      o.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      o.makespan_s = static_cast<double>(r.makespan) * 1e-9;
      o.events = r.events;
      o.reconfigurations = r.reconfigurations;
      o.hw_fraction = r.total_units > 0 ? static_cast<double>(r.hw_units) / static_cast<double>(r.total_units) : 0;
      done.fetch_add(1);
    }
  };
  const uint32_t threads = std::max<uint32_t>(1, std::min<uint32_t>(options.threads, static_cast<uint32_t>(tasks.size())));
  std::vector<std::thread> pool;
  for (uint32_t i = 1; i < threads; ++i) pool.emplace_back(worker);
  if (options.progress) {
    // The calling thread reports progress while the workers run, then joins in.
    std::thread reporter([&] {
      size_t last = SIZE_MAX;
      while (done.load() < tasks.size()) {
        const size_t d = done.load();
        if (d != last) options.progress(d, tasks.size());
        last = d;
        for (int k = 0; k < 20 && done.load() < tasks.size(); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      options.progress(tasks.size(), tasks.size());
    });
    worker();
    for (std::thread& t : pool) t.join();
    reporter.join();
  } else {
    worker();
    for (std::thread& t : pool) t.join();
  }

  FigureResult res;
  res.spec = spec;
  for (const Outcome& o : outcomes) {
    res.events += o.events;
    res.run_seconds += o.seconds;
  }
  res.runs = tasks.size();
  // Aggregate in task order (deterministic whatever the threads did).
  std::vector<std::vector<std::vector<double>>> t_run(spec.points.size(), std::vector<std::vector<double>>(seeds));
  std::vector<std::vector<std::vector<double>>> t_base(spec.points.size(), std::vector<std::vector<double>>(seeds));
  std::vector<double> reconf(spec.points.size(), 0), hw(spec.points.size(), 0);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    if (t.point < 0) continue;
    const auto p = static_cast<size_t>(t.point);
    t_run[p][t.seed].push_back(outcomes[i].makespan_s);
    t_base[p][t.seed].push_back(outcomes[t.baseline].makespan_s);
    reconf[p] += static_cast<double>(outcomes[i].reconfigurations);
    hw[p] += outcomes[i].hw_fraction;
  }
  double sum_nm = 0, sum_u = 0;
  for (size_t p = 0; p < spec.points.size(); ++p) {
    const Point& pt = spec.points[p];
    const PointAggregate agg = aggregate_point(t_run[p], t_base[p], pt.slots_for_eq58, pt.config.cpus, pt.x);
    PointResult pr;
    pr.series = pt.series;
    pr.x = pt.x;
    pr.makespan_s = agg.makespan_s;
    pr.baseline_s = agg.baseline_s;
    pr.normalized_makespan = agg.normalized_makespan;
    pr.expected_s = agg.expected_s;
    pr.utilization = agg.utilization;
    pr.reconfigurations = reconf[p] / (seeds * reps);
    pr.hw_fraction = hw[p] / (seeds * reps);
    sum_nm += pr.normalized_makespan;
    sum_u += pr.utilization;
    res.points.push_back(pr);
  }
  if (!res.points.empty()) {
    res.avg_normalized_makespan = sum_nm / static_cast<double>(res.points.size());
    res.avg_utilization = sum_u / static_cast<double>(res.points.size());
  }
  res.wall_seconds = std::chrono::duration<double>(Clock::now() - wall0).count();
  return res;
}

PointAggregate aggregate_point(const std::vector<std::vector<double>>& run_s, const std::vector<std::vector<double>>& baseline_s,
                               uint32_t slots, uint32_t cpus, double speedup) {
  PointAggregate a;
  const auto seeds = static_cast<uint32_t>(run_s.size());
  for (uint32_t s = 0; s < seeds; ++s) {
    a.makespan_s += median(run_s[s]) / seeds;
    a.baseline_s += median(baseline_s[s]) / seeds;
  }
  a.normalized_makespan = a.baseline_s > 0 ? a.makespan_s / a.baseline_s : 0;
  a.expected_s = model::expected_makespan(a.baseline_s, slots, cpus, speedup);
  a.utilization = model::utilization(a.expected_s, a.makespan_s);
  return a;
}

std::string figure_csv(const FigureResult& r) {
  std::string out = "series,speedup,normalized_makespan,utilization,makespan_s,baseline_s,expected_s,reconfigurations,hw_fraction\n";
  char buf[512];
  for (const PointResult& p : r.points) {
    std::snprintf(buf, sizeof buf, "\"%s\",%g,%.6f,%.6f,%.6f,%.6f,%.6f,%.2f,%.6f\n", p.series.c_str(), p.x,
                  p.normalized_makespan, p.utilization, p.makespan_s, p.baseline_s, p.expected_s, p.reconfigurations,
                  p.hw_fraction);
    out += buf;
  }
  return out;
}

}  // namespace tandem::sim
