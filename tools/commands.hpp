// The `tandem` command line is assembled from command groups; each cmd_*.cc adds its subcommands.
#pragma once

namespace CLI {
class App;
}

namespace tandem::tools {

void add_demo_commands(CLI::App& app);   // tandem demo
void add_bench_commands(CLI::App& app);  // tandem bench ...
void add_model_commands(CLI::App& app);  // tandem model ...

}  // namespace tandem::tools
