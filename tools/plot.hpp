// One way to start the Python plots of every command (experiments, benchmarks, the simulator): find
// the interpreter and the script, run it, and say clearly why there is no PNG when there is none.
// A plot is never the result: the CSV and JSON are written first and stay complete without it.
#pragma once

#include <string>
#include <vector>

namespace tandem::tools {

struct PlotOptions {
  std::string python;  // interpreter; "" = $TANDEM_PYTHON, else python3 on PATH
};

// The folder of the running binary (from /proc/self/exe; "." if unknown).
std::string executable_dir();

// The folder of the plotting scripts: $TANDEM_PYTHON_DIR, else the source tree's python/ (compiled
// in), else python/ next to the binary's folder.
std::string python_dir();

// Runs python_dir()/script with `args` (no shell: arguments pass as they are). Returns true if the
// script ran and exited 0. Otherwise prints one line to stderr saying why: the interpreter is missing,
// it lacks matplotlib (checked once per interpreter), the script is not found, or it failed (its exit
// status; its own error output comes before).
bool run_plot(const std::string& script, const std::vector<std::string>& args, const PlotOptions& options = {});

// Runs the interpreter with `args` (e.g. {"-m", "tandem_sim", ...}), python_dir() first on its
// PYTHONPATH so that the project's package python/tandem_sim is found installed or not. Returns the
// exit status (128 + n for signal n); throws Error(io_error) if the interpreter cannot start.
int run_python(const std::vector<std::string>& args, const PlotOptions& options = {});

}  // namespace tandem::tools
