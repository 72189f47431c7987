#include <CLI/CLI.hpp>

#include "commands.hpp"

namespace tandem::tools {

void add_bench_commands(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks that report ratios against peers measured in the same run");
  bench->require_subcommand(1);
  add_dispatch_bench(*bench);
  add_comm_bench(*bench);
  add_mixed_bench(*bench);
  add_device_bench(*bench);
  add_calls_bench(*bench);
}

}  // namespace tandem::tools
