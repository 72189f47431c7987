#include "daemon_launcher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "abi/status.hpp"
#include "base/clock.hpp"
#include "config/text_file.hpp"
#include "rt/control_channel.hpp"

namespace tandem::tools {

namespace {

// The files of the launchers alive in this process, for on_fatal_signal: copies in static storage,
// since a handler running on another thread must not read a launcher that is being destroyed.
struct LiveFiles {
  std::atomic<int> state{0};  // 0 free, 1 being filled or emptied, 2 ready
  pid_t owner = -1;           // a forked child shares the table, not the files
  char dir[256] = {}, paths[4][256] = {};
};
constexpr size_t kMaxLaunchers = 64;
std::array<LiveFiles, kMaxLaunchers> live_files;

void copy_path(char (&out)[256], const std::string& path) {
  const size_t n = std::min(path.size(), sizeof out - 1);
  std::memcpy(out, path.data(), n);
  out[n] = '\0';
}

}  // namespace

void DaemonLauncher::on_fatal_signal(int sig) {
  const pid_t self = getpid();
  for (LiveFiles& f : live_files) {
    if (f.state.load(std::memory_order_acquire) != 2 || f.owner != self) continue;
    for (const char* path : f.paths) unlink(path);
    rmdir(f.dir);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Only where the tool kept the default action: a tool with handlers of its own keeps them.
void DaemonLauncher::watch_signals() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction act {};
      act.sa_handler = &DaemonLauncher::on_fatal_signal;
      sigemptyset(&act.sa_mask);
      sigaction(sig, &act, nullptr);
    }
  });
}

void DaemonLauncher::enlist() {
  watch_signals();
  for (size_t i = 0; i < live_files.size(); ++i) {
    int expected = 0;
    if (!live_files[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    LiveFiles& f = live_files[i];
    f.owner = getpid();
    copy_path(f.dir, dir_);
    copy_path(f.paths[0], socket_);
    copy_path(f.paths[1], lock_);
    copy_path(f.paths[2], config_);
    copy_path(f.paths[3], log_);
    f.state.store(2, std::memory_order_release);
    live_slot_ = static_cast<int>(i);
    return;
  }  // all taken: this one's folder is left to its destructor alone
}

void DaemonLauncher::delist() {
  if (live_slot_ < 0) return;
  live_files[static_cast<size_t>(live_slot_)].state.store(0, std::memory_order_release);
  live_slot_ = -1;
}

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

DaemonLauncher::DaemonLauncher(const std::string& config_toml, bool quiet, std::string config_source)
    : config_source_(std::move(config_source)) {
  char tmpl[] = "/tmp/tandem-run-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw Error(Status::io_error, "cannot create a temporary directory");
  dir_ = tmpl;
  socket_ = dir_ + "/tandem.sock";
  lock_ = socket_ + ".lock";
  config_ = dir_ + "/tandem.toml";
  log_ = dir_ + "/tandemd.log";
  enlist();
  if (FILE* f = std::fopen(config_.c_str(), "w")) {
    std::fputs(config_toml.c_str(), f);
    std::fclose(f);
  }
  quiet_ = quiet;
  try {
    start();
  } catch (...) {
    remove_files();  // no destructor runs for a constructor that throws
    delist();
    throw;
  }
}

void DaemonLauncher::remove_files() {
  unlink(socket_.c_str());  // a daemon that was killed leaves its socket and lock behind
  unlink(lock_.c_str());
  unlink(config_.c_str());
  unlink(log_.c_str());
  rmdir(dir_.c_str());
}

void DaemonLauncher::start() {
  const bool quiet = quiet_;
  const std::string binary = find_binary();
  const int64_t t0 = now_ns();
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // the daemon does not outlive the tool that started it
    if (quiet) {  // kept, so that a failed start can say why
      const int log = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (log >= 0) dup2(log, STDERR_FILENO);
    }
    execlp(binary.c_str(), "tandemd", "--foreground", "--socket", socket_.c_str(), "--config", config_.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  // Ready means answering: tandemd listens before its devices are set up (an OpenCL device builds its
  // kernels then, hundreds of ms), and a connection made meanwhile waits in the backlog. A tool that
  // timed its clients from the socket's appearance would charge them the daemon's own start-up.
  const int64_t deadline = t0 + 60'000'000'000;
  while (now_ns() < deadline) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_.c_str(), sizeof addr.sun_path - 1);
    rt::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.valid() && ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        rt::send_frame(fd.get(), abi::control::MessageType::status, 1, nullptr, 0) == Status::ok) {
      // Wait for the answer in short steps, so that a daemon dying during start-up is noticed.
      while (now_ns() < deadline) {
        auto reply = rt::recv_frame(fd.get(), 200'000'000);
        if (reply && reply.value().type() == abi::control::MessageType::status_reply) {
          (void)rt::send_frame(fd.get(), abi::control::MessageType::bye, 2, nullptr, 0);
          startup_ns_ = now_ns() - t0;
          return;
        }
        if (!reply && reply.status() == Status::timeout && alive()) continue;
        if (!alive()) break;
        // Alive, yet it closed the connection or answered something else: not a tandemd of this build.
        kill_hard();
        throw Error(Status::protocol_error, "tandemd (" + binary + ") did not answer a status request: " +
                                                (reply ? "unexpected reply" : reply.message()) +
                                                " (a tandemd of another version?)");
      }
    }
    if (!alive()) throw Error(Status::io_error, start_failure("tandemd (" + binary + ") exited during start-up"));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // SIGKILL: tandemd blocks SIGTERM until its devices are set up, where it may be stuck.
  kill_hard();
  throw Error(Status::timeout, start_failure("tandemd did not answer within 60 s of starting"));
}

std::string DaemonLauncher::start_failure(const std::string& what) const {
  if (!quiet_) return what;  // tandemd's stderr is the tool's: the user has seen it
  std::string said;
  try {
    said = config::read_text_file(log_, "tandemd's log");  // a start-up's log: short
  } catch (const Error&) {
  }
  if (said.size() > 4096) said = "..." + said.substr(said.size() - 4096);  // the end says why
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  if (said.empty()) return what + " (it said nothing on stderr)";
  if (!config_source_.empty()) {
    for (size_t at = said.find(config_); at != std::string::npos; at = said.find(config_, at + config_source_.size())) {
      said.replace(at, config_.size(), config_source_);
    }
  }
  return what + "; it said:\n" + said;
}

bool DaemonLauncher::alive() {
  if (pid_ <= 0) return false;
  int status;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  pid_ = -1;  // reaped now (or not our child any more): never signalled again
  return false;
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
  remove_files();
  delist();  // after: a signal meanwhile still finds the files
}

}  // namespace tandem::tools
