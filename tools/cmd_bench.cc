// TEMPORARY: replaced by the dispatch benchmark once the peers library lands.
#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace tandem::tools {
void add_bench_commands(CLI::App&) {}
}  // namespace tandem::tools
