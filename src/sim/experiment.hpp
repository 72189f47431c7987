// The thesis's multitasking evaluation (seed 000, 5.5.2-5.5.5) on the simulator: figure definitions
// with Table 5.3's parameters, runs over seeds and repetitions on worker threads, aggregation as the
// thesis does it (median of repetitions, mean over seeds, normalised to the SW-only makespan measured
// the same way), and the CSV / JSON / trace files the `tandem experiment` commands write.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/simulator.hpp"
#include "sim/workload.hpp"

namespace tandem::sim {

// One curve point: a configuration simulated over every seed and repetition.
struct Point {
  std::string series;   // legend label, e.g. "8 apps" or "P = 10 ms"
  double x = 0;         // accelerator speedup
  SimConfig config;
  WorkloadSpec workload;
  uint32_t slots_for_eq58 = 8;  // n_s in Eq 5.8
};

struct FigureSpec {
  std::string id;       // "5.11"
  std::string title;
  std::string metric;   // "normalized_makespan" or "utilization": what the figure plots
  std::vector<Point> points;
};

struct PointResult {
  std::string series;
  double x = 0;
  double normalized_makespan = 0;  // mean over seeds of median makespan / same of the SW baseline
  double utilization = 0;          // Eq 5.7 with Eq 5.8's T_e
  double makespan_s = 0;           // mean over seeds of the median makespan
  double baseline_s = 0;           // same for the SW-only runs
  double expected_s = 0;           // Eq 5.8
  double reconfigurations = 0;     // mean per run
  double hw_fraction = 0;          // share of the work the accelerators did
};

struct RunOptions {
  uint32_t seeds = 10;
  uint32_t reps = 3;
  uint32_t threads = 2;
  uint64_t base_seed = 1;
  // Called from worker threads' coordinator (the calling thread) with runs done / total.
  std::function<void(size_t done, size_t total)> progress;
};

struct FigureResult {
  FigureSpec spec;
  std::vector<PointResult> points;
  uint64_t events = 0;
  uint64_t runs = 0;
  double run_seconds = 0;   // CPU time spent inside simulations (summed over threads)
  double wall_seconds = 0;
  double avg_normalized_makespan = 0;
  double avg_utilization = 0;
  double events_per_second() const { return run_seconds > 0 ? static_cast<double>(events) / run_seconds : 0; }
};

// The figures of 5.5.3-5.5.5: "5.7", "5.8", "5.9", "5.11", "5.12", "5.15", "5.16", "5.18", "5.19",
// "5.20", "5.21". `quick` keeps two series and three speedups (seconds, for tests). Throws
// tandem::Error for an unknown id.
// Each is a figure study file, configs/thesis/fig-<id>.toml (study.hpp; the folder is the source
// tree's configs/, or $TANDEM_CONFIGS_DIR).
FigureSpec thesis_figure(const std::string& id, bool quick);
std::vector<std::string> thesis_figure_ids();
std::string thesis_figure_file(const std::string& id);

// The dynamic workload (16 functions, 8 slots, 8 apps) at P = 1 ms and 100 ms, for one policy
// (configs/thesis/policies.toml with its policy.name axis set to `policy`).
FigureSpec policy_figure(const std::string& policy, bool quick);

FigureResult run_figure(const FigureSpec& spec, const RunOptions& options);

// The thesis's aggregation of one point (5.5.2): per seed the median makespan over repetitions, then
// the mean over seeds, for the runs and for their SW-only baselines; normalised makespan = the ratio;
// utilisation = Eq 5.7 with Eq 5.8's T_e. run_s[seed][rep] and baseline_s[seed][rep] in seconds.
struct PointAggregate {
  double makespan_s = 0;
  double baseline_s = 0;
  double normalized_makespan = 0;
  double expected_s = 0;
  double utilization = 0;
};
PointAggregate aggregate_point(const std::vector<std::vector<double>>& run_s, const std::vector<std::vector<double>>& baseline_s,
                               uint32_t slots, uint32_t cpus, double speedup);

// Files: CSV of the points (series,x,normalized_makespan,utilization,...).
std::string figure_csv(const FigureResult& r);

// Chrome/Perfetto trace JSON of one traced run (calls per app, jobs and configurations per slot),
// and a CSV of slot residency (slot,function,begin_s,end_s) plus calls for the heat map.
std::string chrome_trace_json(const SimResult& r, const std::vector<AppSpec>& apps);
std::string residency_csv(const SimResult& r);
std::string calls_csv(const SimResult& r);

}  // namespace tandem::sim
