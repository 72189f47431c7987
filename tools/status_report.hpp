// tandemd's status report, shared by `tandem status` and the demo.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "rt/shm.hpp"

namespace tandem::tools {

// The daemon's socket: `option` if set, else $TANDEM_SOCKET, else the default socket.
std::string socket_from(const std::string& option);
// A connection to the daemon at `socket_path`. Throws tandem::Error if there is no daemon.
rt::UniqueFd connect_daemon(const std::string& socket_path);

// Asks the daemon at `socket_path` for its report. Throws tandem::Error if there is no daemon.
nlohmann::json fetch_status(const std::string& socket_path);
// Prints the report as tables.
void print_status(const nlohmann::json& report);

// What `tandem trace` makes of the records of the daemon at `socket_path` (cmd_trace.cc): prints the
// latency breakdown and writes trace.json (Perfetto), jobs.csv, breakdown.csv and breakdown.png in `dir`.
void write_trace_outputs(const std::string& socket_path, const std::string& dir);

}  // namespace tandem::tools
