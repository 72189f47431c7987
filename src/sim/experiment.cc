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
#include "abi/status.hpp"

namespace tandem::sim {

namespace {

constexpr engine::FunctionId kFirstWork = TANDEM_FN_WORK_BASE;

std::vector<double> speedups(bool quick) {
  if (quick) return {0, 2, 10};
  return {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
}

std::vector<uint32_t> app_counts(bool quick) {
  if (quick) return {2, 8};
  return {2, 4, 6, 8, 10, 12, 14, 16};  // 1-8 applications per CPU (Table 5.3)
}

WorkloadSpec workload(uint32_t apps, uint32_t functions) {
  WorkloadSpec w;
  w.apps = apps;
  w.functions = functions;
  w.first_function = kFirstWork;
  return w;
}

// Static homogeneous cluster (5.5.3): one function resident in every slot, no reconfiguration.
FigureSpec static_cluster(const std::string& id, const std::string& metric, bool rebalance, bool quick) {
  FigureSpec f;
  f.id = id;
  f.metric = metric;
  f.title = std::string(metric == "utilization" ? "System utilisation" : "Normalised makespan") +
            ", one function" + (rebalance ? "" : ", no dynamic rebalancing");
  const std::vector<uint32_t> apps = quick ? std::vector<uint32_t>{2, 8} : std::vector<uint32_t>{2, 4, 8, 16};
  const std::vector<uint32_t> slots = quick ? std::vector<uint32_t>{2} : std::vector<uint32_t>{1, 2, 4, 8};
  for (uint32_t n_s : slots) {
    for (uint32_t n : apps) {
      for (double s : speedups(quick)) {
        Point p;
        p.series = std::to_string(n) + " apps, " + std::to_string(n_s) + " slots";
        p.x = s;
        p.workload = workload(n, 1);
        p.config.slots = n_s;
        p.config.speedup = s;
        p.config.policy = "none";
        p.config.resident.assign(n_s, kFirstWork);
        p.config.partitioner.rebalance = rebalance;
        p.slots_for_eq58 = n_s;
        f.points.push_back(std::move(p));
      }
    }
  }
  return f;
}

// Dynamic cluster (5.5.4): 16 functions, 8 slots starting empty, Algorithm 1 every P.
Point dynamic_point(const std::string& series, uint32_t apps, double speedup, double period_ms,
                    const std::string& policy) {
  Point p;
  p.series = series;
  p.x = speedup;
  p.workload = workload(apps, 16);
  p.config.slots = 8;
  p.config.speedup = speedup;
  p.config.period_ns = static_cast<Time>(period_ms * 1e6);
  p.config.reconfig_ns = -1;  // = P
  p.config.policy = policy;
  p.slots_for_eq58 = 8;
  return p;
}

FigureSpec dynamic_apps(const std::string& id, const std::string& metric, double period_ms, bool one_job_per_replica,
                        bool quick) {
  FigureSpec f;
  f.id = id;
  f.metric = metric;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s, 8 slots, P = %g ms, 16 functions%s",
                metric == "utilization" ? "System utilisation" : "Normalised makespan", period_ms,
                one_job_per_replica ? ", one job per resident replica" : "");
  f.title = buf;
  for (uint32_t n : app_counts(quick)) {
    for (double s : speedups(quick)) {
      Point p = dynamic_point(std::to_string(n) + " apps", n, s, period_ms, "algorithm1");
      if (one_job_per_replica) p.config.partitioner.jobs_per_round = 0;
      f.points.push_back(std::move(p));
    }
  }
  return f;
}

FigureSpec dynamic_periods(const std::string& id, const std::string& metric, bool quick) {
  FigureSpec f;
  f.id = id;
  f.metric = metric;
  f.title = std::string(metric == "utilization" ? "System utilisation" : "Normalised makespan") +
            ", 8 slots, 8 apps, 16 functions, varying P";
  const std::vector<double> periods = quick ? std::vector<double>{1, 100} : std::vector<double>{1, 2, 5, 10, 20, 50, 100};
  for (double pm : periods) {
    for (double s : speedups(quick)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "P = %g ms", pm);
      f.points.push_back(dynamic_point(buf, 8, s, pm, "algorithm1"));
    }
  }
  return f;
}


}  // namespace

std::vector<std::string> thesis_figure_ids() {
  return {"5.7", "5.8", "5.9", "5.11", "5.12", "5.15", "5.16", "5.18", "5.19", "5.20", "5.21"};
}

FigureSpec thesis_figure(const std::string& id, bool quick) {
  if (id == "5.7") return static_cluster(id, "normalized_makespan", true, quick);
  if (id == "5.8") return static_cluster(id, "utilization", true, quick);
  if (id == "5.9") return static_cluster(id, "utilization", false, quick);
  if (id == "5.11") return dynamic_apps(id, "normalized_makespan", 100, false, quick);
  if (id == "5.12") return dynamic_apps(id, "utilization", 100, false, quick);
  if (id == "5.15") return dynamic_apps(id, "normalized_makespan", 1, false, quick);
  if (id == "5.16") return dynamic_apps(id, "utilization", 1, false, quick);
  if (id == "5.18") return dynamic_periods(id, "normalized_makespan", quick);
  if (id == "5.19") return dynamic_periods(id, "utilization", quick);
  if (id == "5.20") return dynamic_apps(id, "normalized_makespan", 1, true, quick);
  if (id == "5.21") return dynamic_apps(id, "utilization", 1, true, quick);
  throw Error(Status::invalid_argument, "unknown figure '" + id + "' (5.7 5.8 5.9 5.11 5.12 5.15 5.16 5.18 5.19 5.20 5.21)");
}

FigureSpec policy_figure(const std::string& policy, bool quick) {
  FigureSpec f;
  f.id = "policy-" + policy;
  f.metric = "normalized_makespan";
  f.title = "Normalised makespan, 8 slots, 8 apps, 16 functions: " + policy;
  for (double pm : {1.0, 100.0}) {
    for (double s : speedups(quick)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s, P = %g ms", policy.c_str(), pm);
      f.points.push_back(dynamic_point(buf, 8, s, pm, policy));
    }
  }
  return f;
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
    double mean_t = 0, mean_b = 0;
    for (uint32_t s = 0; s < seeds; ++s) {
      mean_t += median(t_run[p][s]) / seeds;
      mean_b += median(t_base[p][s]) / seeds;
    }
    PointResult pr;
    pr.series = pt.series;
    pr.x = pt.x;
    pr.makespan_s = mean_t;
    pr.baseline_s = mean_b;
    pr.normalized_makespan = mean_b > 0 ? mean_t / mean_b : 0;
    pr.expected_s = model::expected_makespan(mean_b, pt.slots_for_eq58, pt.config.cpus, pt.x);
    pr.utilization = model::utilization(pr.expected_s, mean_t);
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
