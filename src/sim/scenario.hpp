// Scenario files: everything one simulated study point needs (CPUs, accelerators, functions,
// applications and their calls, the monitor, the reconfiguration policy, the partitioner, seeds and
// repetitions) as TOML, parsed into the simulator's SimConfig and WorkloadSpec (docs/sim.md,
// "Scenario files"). Unknown keys and impossible values are errors that name the key. Set-up code:
// throws tandem::Error(invalid_argument).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/simulator.hpp"
#include "sim/workload.hpp"

namespace tandem::sim {

// A calibrated function's cost-model figures (thesis Table 4.3), from a file `tandem calibrate` wrote.
struct CalibratedCosts {
  double xc = 0;  // units/s on the CPU
  double xa = 0;  // units/s on one accelerator
  double o0_s = 0;
  double oc_s = 0;
  double da_s = 0;
};

// Reads function `function` of calibration file `path` (nullopt if the file has no such function;
// throws for an unreadable file). The simulator cannot read calibration files itself (they belong to
// the client layer); the `tandem` command passes this in.
using CalibrationReader = std::function<std::optional<CalibratedCosts>(const std::string& path, const std::string& function)>;

struct ScenarioOptions {
  std::string base_dir;                // relative file names in the scenario are relative to this
  CalibrationReader read_calibration;  // needed only by scenarios with accelerators.calibration
};

struct Scenario {
  std::string name;
  std::string title;
  SimConfig config;
  WorkloadSpec workload;  // its seed is set per run
  uint32_t seeds = 1;     // workload seeds; results are averaged over them
  uint32_t reps = 1;      // repetitions per seed (perturbed start); the median is taken
  uint64_t base_seed = 1;
};

// Parses scenario TOML text. `source` names it in error messages ("fig.toml: ...").
Scenario parse_scenario(std::string_view text, std::string_view source, const ScenarioOptions& options = {});
// Reads a file (relative names inside it are relative to its folder).
Scenario load_scenario(const std::string& path, const CalibrationReader& read_calibration = {});

// Every key a scenario file may hold, dotted ("accelerators.slots"; per-function keys as
// "functions.N.key"): the reference docs/sim.md lists, and what sweep axes may name.
std::vector<std::string> scenario_keys();

// The text of `text` (TOML) with `key` (dotted) set to `value` (a TOML value: 8, 1.5, "sticky", true),
// tables created as needed. Throws for malformed text or a value that is not a TOML scalar.
std::string set_scenario_key(std::string_view text, std::string_view key, std::string_view value,
                             std::string_view source);

// The TOML text of `text` in one canonical form (keys sorted, one formatting): equal scenarios give
// equal text, whatever the order or layout they were written in.
std::string canonical_scenario_text(std::string_view text, std::string_view source);

// The value at `key` of `text` as a label ("8", "1.5", "sticky"); "" if absent.
std::string scenario_value_label(std::string_view text, std::string_view key);

}  // namespace tandem::sim
