// How the commands write their results: a file that cannot be written is an error that names it,
// never a result silently lost after a long measurement.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace tandem::tools {

// Writes `text` to `path` (replacing it); throws Error(io_error) if it cannot be written completely.
void write_file(const std::string& path, std::string_view text);

// The benchmarks' --out and --json: writes the report to `out` when given, prints it when `print`.
// Returns `print`: the caller prints its table only when the JSON was not printed.
bool emit_json_report(const nlohmann::ordered_json& report, const std::string& out, bool print);
bool emit_json_report(const nlohmann::json& report, const std::string& out, bool print);

}  // namespace tandem::tools
