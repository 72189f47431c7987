#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "commands.hpp"
#include "abi/status.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tandem: share accelerator slots among many short-running tasks"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  tandem::tools::add_demo_commands(app);
  tandem::tools::add_bench_commands(app);
  tandem::tools::add_model_commands(app);
  tandem::tools::add_calibrate_commands(app);
  tandem::tools::add_status_commands(app);
  tandem::tools::add_trace_commands(app);
  tandem::tools::add_top_command(app);
  tandem::tools::add_calibrate_rtl_commands(app);
  tandem::tools::add_experiment_commands(app);
  tandem::tools::add_chaos_commands(app);
  tandem::tools::add_sim_commands(app);
  // A first word that names no command: CLI11 would only say that a subcommand is required.
  bool known = argc < 2 || argv[1][0] == '-';
  std::string names;
  for (CLI::App* sub : app.get_subcommands({})) {
    known = known || sub->check_name(argv[1]);
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  if (!known) {
    std::fprintf(stderr, "tandem: unknown command '%s' (commands: %s; tandem --help says more)\n", argv[1], names.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const tandem::Error& e) {
    std::fprintf(stderr, "tandem: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem: %s\n", e.what());
    return 1;
  }
  return 0;
}
