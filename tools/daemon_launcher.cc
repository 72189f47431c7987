#include "daemon_launcher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "abi/status.hpp"

namespace tandem::tools {

std::string DaemonLauncher::find_binary() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string beside = std::string(self, static_cast<size_t>(n));
    beside = beside.substr(0, beside.rfind('/') + 1) + "tandemd";
    if (access(beside.c_str(), X_OK) == 0) return beside;
  }
  return "tandemd";  // execvp searches PATH
}

DaemonLauncher::DaemonLauncher(const std::string& config_toml, bool quiet) {
  char tmpl[] = "/tmp/tandem-run-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw Error(Status::io_error, "cannot create a temporary directory");
  dir_ = tmpl;
  socket_ = dir_ + "/tandem.sock";
  config_ = dir_ + "/tandem.toml";
  if (FILE* f = std::fopen(config_.c_str(), "w")) {
    std::fputs(config_toml.c_str(), f);
    std::fclose(f);
  }
  quiet_ = quiet;
  start();
}

void DaemonLauncher::start() {
  const bool quiet = quiet_;
  const std::string binary = find_binary();
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // the daemon does not outlive the tool that started it
    if (quiet) {
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, STDERR_FILENO);
    }
    execlp(binary.c_str(), "tandemd", "--foreground", "--socket", socket_.c_str(), "--config", config_.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 1000; ++i) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_.c_str(), sizeof addr.sun_path - 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    if (up) return;
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw Error(Status::io_error, "tandemd (" + binary + ") exited during start-up");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop();
  throw Error(Status::timeout, "tandemd did not start listening");
}

void DaemonLauncher::kill_hard() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

int DaemonLauncher::stop() {
  int status = -1;
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  return status;
}

DaemonLauncher::~DaemonLauncher() {
  stop();
  unlink(config_.c_str());
  rmdir(dir_.c_str());
}

}  // namespace tandem::tools
