// tandemd: the tandem daemon. Many processes share one fabric through it (see daemon.hpp).
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "daemon/daemon.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tandemd: share one accelerator fabric among many processes"};
  std::string config_path, socket_path;
  bool foreground = false, trace = false;
  std::string metrics_listen;
  app.add_option("--config", config_path, "Configuration file (TOML); default: the built-in one")->check(CLI::ExistingFile);
  app.add_option("--socket", socket_path, "Unix socket to listen on; default: $XDG_RUNTIME_DIR/tandem.sock, "
                                          "else /tmp/tandem-$UID.sock");
  app.add_flag("--foreground", foreground, "Stay in the foreground (default: detach once ready to serve)");
  app.add_flag("--trace", trace, "Record per-job traces from start-up ([trace] enabled; docs/tracing.md)");
  app.add_option("--metrics-listen", metrics_listen,
                 "Serve Prometheus metrics at http://ADDRESS:PORT/metrics (e.g. 127.0.0.1:9464; [metrics] listen)");
  CLI11_PARSE(app, argc, argv);

  tandem::daemon::DaemonOptions options;
  try {
    options.config = tandem::config::load_config(config_path);
  } catch (const tandem::Error& e) {
    std::fprintf(stderr, "tandemd: %s\n", e.what());
    return 2;
  }
  options.socket_path = socket_path;
  if (trace) options.config.trace.enabled = true;
  if (!metrics_listen.empty()) options.config.metrics.listen = metrics_listen;

  // Detaching: the parent returns only once the child is ready to serve (its devices set up) or failed,
  // so that a script can start the daemon and connect right away.
  int ready[2] = {-1, -1};
  if (!foreground) {
    if (pipe2(ready, O_CLOEXEC) != 0) {
      std::perror("tandemd: pipe");
      return 1;
    }
    const pid_t child = fork();
    if (child < 0) {
      std::perror("tandemd: fork");
      return 1;
    }
    if (child > 0) {
      close(ready[1]);
      char status = 1;
      if (read(ready[0], &status, 1) != 1) status = 1;
      return status;
    }
    close(ready[0]);
    setsid();
  }
  tandem::daemon::Daemon::block_stop_signals();
  auto daemon = tandem::daemon::Daemon::start(options);
  if (!daemon) {
    std::fprintf(stderr, "tandemd: %s\n", daemon.message().c_str());
    if (!foreground) {
      const char status = 1;
      (void)!write(ready[1], &status, 1);
    }
    return 1;
  }
  if (!foreground) {
    const char status = 0;
    (void)!write(ready[1], &status, 1);
    close(ready[1]);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      close(devnull);
    }
  }
  return daemon.value()->run(true);
}
