// Studies on the simulator: a base scenario and axes over any of its keys (a list or a range), whose
// cartesian product gives the study's points. Sweep files (`tandem sim sweep`), single scenarios
// (`tandem sim run`, a study without axes) and the thesis's figures (configs/thesis/*.toml, with a
// [figure] table) are all studies (docs/sim.md, "Studies").
//
// A study runs as independent *runs*: one point under one seed and repetition, or the SW-only
// baseline that normalises it. A run is described by a spec (TOML text: an [exec] table and the
// scenario) and named by the hash of that text; its result is a line of JSON that depends on nothing
// but the spec, so a result computed on a thread here, in another process or on a Ray worker is the
// same byte for byte. Results live in DIR/runs/<id>.json: a run already there is never repeated.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/experiment.hpp"
#include "sim/scenario.hpp"

namespace tandem::sim {

struct Axis {
  std::string key;                  // dotted scenario key
  std::vector<std::string> values;  // TOML literals ("8", "1.5", "\"sticky\"")
  std::vector<std::string> quick;   // the --quick form's values (empty: the same)
};

// A figure's presentation (thesis presets): templates with {dotted.key} filled from a point.
struct FigureMeta {
  std::string id;
  std::string title;
  std::string metric = "normalized_makespan";
  std::string series;  // legend label of a point
  std::string x;       // the key on the x axis
};

struct Study {
  std::string name;
  std::string source;     // file name, for messages
  std::string base_text;  // the base scenario, canonical TOML (no [[axis]], [figure] or [sweep])
  std::vector<Axis> axes;
  std::optional<FigureMeta> figure;
  ScenarioOptions options;
};

// Parses a study file: scenario tables, optional [sweep] (name, scenario = "base file" to start from),
// optional [figure], and [[axis]] tables (key plus values = [...], or from/to/step; quick = [...]).
Study parse_study(std::string_view text, std::string_view source, const ScenarioOptions& options = {});
Study load_study(const std::string& path, const CalibrationReader& read_calibration = {});

struct StudyPoint {
  std::vector<std::string> labels;  // the value of each axis, as a label ("8", "sticky")
  std::string text;                 // its scenario, canonical TOML
  Scenario scenario;
};

// The points in order: the first axis outermost. Throws naming the key for an impossible value.
std::vector<StudyPoint> expand_study(const Study& study, bool quick);

// A figure study as the thesis experiment's FigureSpec (series label, x value per point).
FigureSpec figure_spec(const Study& study, bool quick);

// ---- runs ----

struct RunSpec {
  std::string id;    // 16 hex digits: FNV-1a of text
  std::string text;  // [exec] kind, seed, rep + the scenario
  bool baseline = false;
};

// The spec of point `scenario_text` under seed index `seed` and repetition `rep`; a baseline spec
// drops what the SW-only run ignores (policy, monitor, accelerators), so points that differ only
// there share it.
RunSpec make_run_spec(const std::string& scenario_text, bool baseline, uint32_t seed, uint32_t rep);

// Runs one spec: its result, one line of JSON ending in '\n'. `cpu_seconds`, if given, receives the
// thread's CPU time spent simulating (not part of the result). Throws for a malformed spec.
std::string execute_run(std::string_view spec_text, const ScenarioOptions& options = {}, double* cpu_seconds = nullptr,
                        uint64_t* events = nullptr);

// The runs a study needs, points in order, each point's seeds x reps runs and their baselines
// (deduplicated).
struct StudyPlan {
  std::vector<StudyPoint> points;
  std::vector<RunSpec> runs;  // unique by id
  // Per point, per seed and rep (seed-major): the index in `runs` of the run and of its baseline.
  std::vector<std::vector<std::pair<size_t, size_t>>> point_runs;
};
StudyPlan plan_study(const Study& study, bool quick);

// Runs what is missing in DIR/runs on `threads` threads (0: every core); `progress` is called with
// (done, total, reused) from one thread at a time. Returns the events and CPU seconds of the runs it
// executed.
struct LocalRunStats {
  size_t executed = 0;
  size_t reused = 0;
  uint64_t events = 0;
  double cpu_seconds = 0;
};
LocalRunStats run_missing(const StudyPlan& plan, const std::string& dir, uint32_t threads, const ScenarioOptions& options,
                          const std::function<void(size_t done, size_t total, size_t reused)>& progress);

// The specs of plan runs not yet in DIR/runs.
std::vector<const RunSpec*> missing_runs(const StudyPlan& plan, const std::string& dir);

// Writes result `text` of run `id` to DIR/runs/<id>.json atomically.
void store_run_result(const std::string& dir, const std::string& id, std::string_view text);

// Reads every run's result and writes DIR/runs.csv (one row per run), DIR/points.csv (one row per
// point, aggregated as the thesis does) and returns summary figures for summary.json. Throws if a
// run's result is missing.
struct StudySummary {
  uint64_t events = 0;  // over every run and baseline of the study
  size_t runs = 0;
  size_t baselines = 0;
  double avg_normalized_makespan = 0;
  std::vector<double> app_slowdown;  // single-point studies: mean per application
};
StudySummary write_study_results(const Study& study, const StudyPlan& plan, const std::string& dir);

}  // namespace tandem::sim
