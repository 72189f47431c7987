#include "support/child_process.hpp"

#include <sys/wait.h>
#include <time.h>

#include <cerrno>

#include "support/measure.hpp"

namespace tandem::bench {

namespace {

int exit_code_of(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

}  // namespace

Result<int> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  if (pid_ < 0) return {Status::invalid_argument, "no child process"};
  const int64_t deadline = now_ns() + std::chrono::nanoseconds(timeout).count();
  for (;;) {
    int wstatus = 0;
    const pid_t got = ::waitpid(pid_, &wstatus, WNOHANG);
    if (got == pid_) {
      pid_ = -1;
      return exit_code_of(wstatus);
    }
    if (got < 0 && errno != EINTR) {
      pid_ = -1;  // not our child any more (reaped elsewhere): nothing left to clean up
      return {Status::io_error, "waitpid failed"};
    }
    if (now_ns() >= deadline) {
      kill_and_reap();
      return {Status::timeout, "child process did not exit in time; killed"};
    }
    timespec pause{0, 200'000};  // 0.2 ms: only ever waited on outside a timed region
    ::nanosleep(&pause, nullptr);
  }
}

void ChildProcess::kill_and_reap() noexcept {
  if (pid_ < 0) return;
  ::kill(pid_, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace tandem::bench
