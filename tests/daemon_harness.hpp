// Test helpers for tandemd: the real daemon binary started in a fresh socket directory, and raw clients.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "client/runtime.hpp"
#include "base/clock.hpp"
#include "rt/control_channel.hpp"

namespace tandem::testing {

// A tandemd process on a private socket; stopped (SIGTERM) when destroyed.
class DaemonProcess {
 public:
  explicit DaemonProcess(const std::string& config_toml = "") {
    char tmpl[] = "/tmp/tandem-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    socket_ = dir_ + "/tandem.sock";
    config_ = dir_ + "/tandem.toml";
    FILE* f = std::fopen(config_.c_str(), "w");
    std::fputs(config_toml.c_str(), f);
    std::fclose(f);
    start();
  }
  ~DaemonProcess() {
    stop();
    std::remove(config_.c_str());
    rmdir(dir_.c_str());
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  void start() {
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // a test killed by its timeout leaves no daemon behind
      const char* quiet = std::getenv("TANDEM_TEST_DAEMON_LOG") ? nullptr : "/dev/null";
      if (quiet != nullptr) {
        FILE* null = std::freopen(quiet, "w", stderr);
        (void)null;
      }
      execl(TANDEM_TANDEMD_PATH, "tandemd", "--foreground", "--socket", socket_.c_str(), "--config", config_.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    // Ready once it accepts a connection.
    for (int i = 0; i < 500; ++i) {
      if (connectable()) return;
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        ADD_FAILURE() << "tandemd exited during start-up";
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "tandemd did not start listening";
  }
  // SIGTERM and wait; returns the exit status.
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  void kill_hard() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  bool alive() const { return pid_ > 0 && kill(pid_, 0) == 0; }
  bool connectable() const {
    rt::UniqueFd fd(connect_raw());
    return fd.valid();
  }
  int connect_raw() const {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_.c_str(), sizeof addr.sun_path - 1);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  const std::string& socket() const { return socket_; }
  const std::string& directory() const { return dir_; }
  pid_t pid() const { return pid_; }

  std::unique_ptr<client::Runtime> open(client::Mode mode = client::Mode::hw) const {
    client::RuntimeOptions o;
    o.socket_path = socket_;
    o.mode = mode;
    auto rt = client::Runtime::open(o);
    EXPECT_TRUE(rt.ok()) << rt.message();
    return rt.ok() ? std::move(rt).value() : nullptr;
  }

 private:
  std::string dir_, socket_, config_;
  pid_t pid_ = -1;
};

}  // namespace tandem::testing
