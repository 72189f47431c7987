// TEMPORARY: replaced by the model commands from the cooperative-processing work.
#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace tandem::tools {
void add_model_commands(CLI::App&) {}
}  // namespace tandem::tools
