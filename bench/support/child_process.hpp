// A forked child that is always reaped: waits are bounded, and a child still running when its handle
// goes away is killed (SIGKILL) and reaped, so a benchmark never leaves a zombie or an orphan behind.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include "abi/status.hpp"

namespace tandem::bench {

class ChildProcess {
 public:
  // Forks; the child runs body() (returning its exit code) and leaves with _exit, so it never
  // unwinds into the caller's stack or runs the parent's atexit handlers. It is killed if the parent
  // dies first. Fork from a single-threaded moment where possible: only the calling thread is copied.
  template <class Body>
  static Result<ChildProcess> spawn(Body&& body) {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return {Status::io_error, "fork failed"};
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
      int code = 126;
      try {
        code = body();
      } catch (...) {
        code = 125;
      }
      ::_exit(code);
    }
    return ChildProcess(pid);
  }

  ChildProcess(ChildProcess&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}
  ChildProcess& operator=(ChildProcess&& other) noexcept {
    if (this != &other) {
      kill_and_reap();
      pid_ = std::exchange(other.pid_, -1);
    }
    return *this;
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { kill_and_reap(); }

  pid_t pid() const noexcept { return pid_; }

  // Waits up to `timeout` for the child to exit and returns its exit code (128 + signal number when
  // a signal ended it). On timeout the child is killed and reaped and the result is Status::timeout.
  Result<int> wait_for(std::chrono::milliseconds timeout);

  // Kills (SIGKILL) and reaps the child if it is still there; safe to call twice.
  void kill_and_reap() noexcept;

 private:
  explicit ChildProcess(pid_t pid) noexcept : pid_(pid) {}
  pid_t pid_ = -1;
};

}  // namespace tandem::bench
