// How the commands write their results: a file that cannot be written is an error that names it,
// never a result silently lost after a long measurement.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::tools {

// Writes `text` to `path` (replacing it); throws Error(io_error) if it cannot be written completely.
void write_file(const std::string& path, std::string_view text);

// Before a long run or a step that cannot be undone: throws Error(io_error), naming `path` and why,
// unless it can be written. Nothing is truncated or opened for a reader to see; a file the check had
// to create is removed again.
void check_output_file(const std::string& path);

// The same for an option naming an output file, at parse time (a CLI11 check).
CLI::Validator writable_file();

// A number option's check: within [min, max], and a number (CLI::Range lets NaN through).
CLI::Validator number_in(double min, double max);

// A run's output folder, made (with its parents) when constructed; throws Error(io_error) naming it
// when it cannot be made or is not a folder. If the run ends in an exception, the folders it made
// (the folder and its new parents) that are still empty are removed again: a run that failed on its
// arguments leaves nothing behind.
class OutputDir {
 public:
  explicit OutputDir(std::string dir);
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;
  const std::string& path() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::string> made_;  // the folders it made, deepest first
  int exceptions_ = 0;             // std::uncaught_exceptions() when made
};

// The benchmarks' --out and --json: writes the report to `out` when given, prints it when `print`.
// Returns `print`: the caller prints its table only when the JSON was not printed.
bool emit_json_report(const nlohmann::ordered_json& report, const std::string& out, bool print);
bool emit_json_report(const nlohmann::json& report, const std::string& out, bool print);

}  // namespace tandem::tools
