// PLACEHOLDER until the issue that owns this command lands; it registers nothing.
#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace tandem::tools {
void add_thesis_experiments(CLI::App&) {}
}  // namespace tandem::tools
