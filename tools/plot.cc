#include "plot.hpp"

#include <fmt/core.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "abi/status.hpp"

extern char** environ;

namespace tandem::tools {

namespace {

namespace fs = std::filesystem;

// Runs argv (PATH searched) and returns its exit status; -1 if it could not start (errno kept in
// `error`), 128 + n if killed by signal n.
int spawn_and_wait(const std::vector<std::string>& argv, int& error, bool quiet) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = 0;
  error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      error = errno;
      return -1;
    }
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string interpreter(const PlotOptions& options) {
  if (!options.python.empty()) return options.python;
  if (const char* env = std::getenv("TANDEM_PYTHON"); env != nullptr && *env != '\0') return env;
  return "python3";
}

}  // namespace

std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::string python_dir() {
  if (const char* env = std::getenv("TANDEM_PYTHON_DIR"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  if (fs::is_directory(TANDEM_PYTHON_DIR, ec)) return TANDEM_PYTHON_DIR;
  return (fs::path(executable_dir()) / ".." / "python").lexically_normal().string();
}

bool run_plot(const std::string& script, const std::vector<std::string>& args, const PlotOptions& options) {
  const std::string python = interpreter(options);
  const fs::path path = fs::path(python_dir()) / script;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    fmt::print(stderr, "plot: {} not found (set TANDEM_PYTHON_DIR to the project's python/ folder); no PNG, "
               "the CSV and JSON are complete\n", path.string());
    return false;
  }
  // Whether this interpreter runs and has matplotlib, asked once per interpreter.
  static std::map<std::string, std::string> verdicts;  // interpreter -> "" (usable) or why not
  auto it = verdicts.find(python);
  if (it == verdicts.end()) {
    int error = 0;
    const int rc = spawn_and_wait({python, "-c", "import matplotlib"}, error, true);
    std::string why;
    if (rc < 0) {
      why = fmt::format("cannot run '{}' ({}): install Python 3 (make deps) or set TANDEM_PYTHON", python,
                        std::strerror(error));
    } else if (rc != 0) {
      why = fmt::format("'{}' has no matplotlib: run make deps (or pip install matplotlib numpy)", python);
    }
    it = verdicts.emplace(python, why).first;
  }
  if (!it->second.empty()) {
    fmt::print(stderr, "plot: {}; no PNG, the CSV and JSON are complete\n", it->second);
    return false;
  }
  std::vector<std::string> argv{python, path.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  int error = 0;
  const int rc = spawn_and_wait(argv, error, false);
  if (rc != 0) {
    std::string cmd;
    for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    fmt::print(stderr, "plot: `{}` failed ({}); no PNG, the CSV and JSON are complete\n", cmd,
               rc < 0 ? std::string(std::strerror(error)) : fmt::format("exit status {}", rc));
    return false;
  }
  return true;
}

int run_python(const std::vector<std::string>& args, const PlotOptions& options) {
  const std::string python = interpreter(options);
  std::string path = python_dir();
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') path += std::string(":") + old;
  setenv("PYTHONPATH", path.c_str(), 1);  // the child inherits it; this process runs no Python itself
  std::vector<std::string> argv{python};
  argv.insert(argv.end(), args.begin(), args.end());
  int error = 0;
  const int rc = spawn_and_wait(argv, error, false);
  if (rc < 0) throw Error(Status::io_error, "cannot run '" + python + "': " + std::strerror(error));
  return rc;
}

}  // namespace tandem::tools
