// Calibration: the cost-model parameters (thesis Table 4.3) of each function on this machine and the
// current device, measured by `tandem calibrate` and kept in a TOML file that the partitioner loads.
//
// Where the file is looked for, first match wins (docs/model.md, "Calibration"):
//   1. RuntimeOptions::calibration (in memory) or RuntimeOptions::calibration_path;
//   2. $TANDEM_CALIBRATION;
//   3. the configuration's `[calibration] file = "..."`;
//   4. $XDG_CONFIG_HOME/tandem/calibration.toml (else ~/.config/tandem/calibration.toml), if it exists.
// Without one, every function gets defaults derived from the fabric configuration and the measured
// software throughput (default_cost_params), so nothing breaks before calibration.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "funcs/function.hpp"
#include "model/access_model.hpp"
#include "model/accel_model.hpp"
#include "model/cost_model.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::client {

inline constexpr int kCalibrationVersion = 1;

// How many observations back a learnt function's figures (self-calibration, learned_costs.hpp); a
// file written by `tandem calibrate` has none.
struct SampleCounts {
  uint64_t cpu = 0;       // calls whose CPU share gave X_c
  uint64_t jobs = 0;      // jobs that gave X_a and D_a
  uint64_t overhead = 0;  // jobs whose CPU cost gave O_c
};

// The device's own figures for a function when a learnt file was written (DeviceSummary::models): a
// later run whose device measures far otherwise (another access setting, another board of the same
// kind, another emulated speedup) does not take that function's learnt figures (learned_costs.hpp).
struct LearntOnDevice {
  double xa = 0;    // the device's X_a, units/s
  double da_s = 0;  // its D_a, seconds
};

struct Calibration {
  std::string device = "emu";  // the device kind the accelerator figures belong to
  std::string host;            // informational
  std::string created;         // informational (UTC, ISO 8601)
  std::string source;          // where it was read from ("" when built in memory)
  std::array<std::optional<model::CostParams>, TANDEM_FN_MAX> functions{};
  std::array<SampleCounts, TANDEM_FN_MAX> samples{};  // learnt files only (samples_* keys)
  std::array<std::optional<LearntOnDevice>, TANDEM_FN_MAX> learnt_on{};  // learnt files only (device_* keys)
  // [access]: the host side's costs of the data access methods on this machine (access.hpp).
  std::optional<model::HostAccessCosts> access;
};

// Parses the TOML text. Throws tandem::Error(invalid_argument) naming the bad key.
Calibration parse_calibration(std::string_view text, std::string_view source_name);
// Reads a file. Throws tandem::Error (io_error if unreadable).
Calibration load_calibration(const std::string& path);
// The TOML text: a header comment, [calibration] and one [functions.<name>] table per function.
std::string format_calibration(const Calibration& calibration);
// Writes the file, creating its directory if needed. Throws tandem::Error(io_error).
void save_calibration(const Calibration& calibration, const std::string& path);
// Before a measurement: makes the file's folder and checks that save_calibration could write there.
// Throws tandem::Error(io_error) naming the file and why.
void check_calibration_writable(const std::string& path);

// The per-user location (step 4 above), whether or not the file exists; "" if no home is known.
std::string user_calibration_path();
// Steps 2-4: the file to load given the configuration's `[calibration] file` (may be ""), or "".
std::string find_calibration_file(const std::string& config_file);

// What a runtime uses for a function without calibration: X_c measured in this process, X_a and BW_a
// from the device's timing model, D_a = the model's latency plus a typical submit-to-completion round
// trip, and typical call overheads (docs/model.md lists them). Conservative: they overstate the costs
// a little, so an uncalibrated runtime accelerates slightly fewer small calls, never more. Without a
// device model (all zero) X_a and D_a come from the catalog's default speedup and latency.
model::CostParams default_cost_params(const funcs::FunctionInfo& fn, const model::AccelModel& device_model,
                                      double software_throughput);

}  // namespace tandem::client
