// tandemd's status report, shared by `tandem status` and the demo.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tandem::tools {

// Asks the daemon at `socket_path` for its report. Throws tandem::Error if there is no daemon.
nlohmann::json fetch_status(const std::string& socket_path);
// Prints the report as tables.
void print_status(const nlohmann::json& report);

}  // namespace tandem::tools
