#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace tandem::tools {

void add_experiment_commands(CLI::App& app) {
  CLI::App* experiment = app.add_subcommand("experiment", "Reproducible experiments: CSV, PNG and summary.json");
  experiment->require_subcommand(1);
  add_partition_experiment(*experiment);
  add_thesis_experiments(*experiment);
  add_access_experiment(*experiment);
  add_vm_experiment(*experiment);
}

}  // namespace tandem::tools
