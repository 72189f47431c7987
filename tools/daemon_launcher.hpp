// Starts a private tandemd for a tool (benchmarks, the demo): a temporary socket and configuration, the
// binary found beside the running `tandem`, and SIGTERM + wait when done.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace tandem::tools {

class DaemonLauncher {
 public:
  // Returns once tandemd answers a status request (its devices are set up). Throws tandem::Error if
  // tandemd cannot be found, exits, or does not answer within 60 s; the error then ends with what
  // tandemd said on stderr (quiet: kept in a log beside the socket), the temporary configuration's path
  // in it replaced by `config_source` where one is given (the file the tool's user named).
  explicit DaemonLauncher(const std::string& config_toml, bool quiet = true, std::string config_source = {});
  ~DaemonLauncher();
  DaemonLauncher(const DaemonLauncher&) = delete;
  DaemonLauncher& operator=(const DaemonLauncher&) = delete;

  const std::string& socket() const { return socket_; }
  pid_t pid() const { return pid_; }
  // From the fork to the first answer, of the last start().
  int64_t startup_ns() const { return startup_ns_; }
  // SIGTERM, then wait for it to drain and exit; returns its exit status.
  int stop();
  // SIGKILL and reap (a crash, for the chaos tier); start() brings up a new daemon on the same socket
  // and configuration. start() throws like the constructor.
  void kill_hard();
  void start();
  // The process was reaped elsewhere (it died): start() may follow.
  void forget() { pid_ = -1; }

  // tandemd beside this executable, else on PATH.
  static std::string find_binary();

 private:
  std::string dir_, socket_, lock_, config_, log_, config_source_;
  int live_slot_ = -1;  // its entry in the signal handler's table (enlist), or -1
  bool quiet_ = true;
  pid_t pid_ = -1;
  int64_t startup_ns_ = 0;

  bool alive();  // not exited; reaps it if it did (pid_ = -1)
  std::string start_failure(const std::string& what) const;  // `what`, and the end of tandemd's stderr
  void remove_files();  // the temporary folder and what is in it (async-signal-safe)
  // A tool stopped by SIGINT, SIGTERM or SIGHUP removes its launchers' folders, as their destructors
  // would (tandemd itself follows through PR_SET_PDEATHSIG), then dies of the signal.
  static void on_fatal_signal(int sig);
  static void watch_signals();
  void enlist();
  void delist();
};

}  // namespace tandem::tools
