// `tandem chaos [--duration S] [--seed N] [--modes sw,hw,auto,alpha]`: the chaos tier. One real tandemd and
// many client processes of mixed behaviour (chaos.hpp); clients are killed (SIGKILL) and stopped
// (SIGSTOP/SIGCONT) at random, and so is the daemon, which is restarted after a kill. Rounds of a few
// seconds, cycling through the modes; after each round every client is gone and the daemon must be back
// where it started. Asserted per round:
//   - correct clients: no wrong result, no lost and no duplicated completion, no unexpected status;
//   - every correct client's call in flight returns DISCONNECTED within 1 s of the daemon's death;
//   - correct clients' QUEUE_FULL rate while others flood stays below 0.1%;
//   - the daemon's descriptor count and RSS are back to their baseline once the round's clients left;
//   - the control plane answers a status request within 100 ms throughout (while the daemon runs), beyond
//     the time the answer's threads spent waiting for a CPU (the kernel's schedstat, read around each
//     request: the two cores are shared with other work).
// The seed fixes the schedule of disturbances and every client's choices, so a failure can be replayed.
#include <CLI/CLI.hpp>
#include <dirent.h>
#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "abi/status.hpp"
#include "base/clock.hpp"
#include "chaos.hpp"
#include "config/config.hpp"
#include "commands.hpp"
#include "daemon_launcher.hpp"
#include "status_report.hpp"
#include "tandem/tandem.h"

namespace tandem::tools {

namespace {

using chaos::Board;
using chaos::ClientSlot;
using chaos::Role;
constexpr auto relaxed = std::memory_order_relaxed;

struct ChaosOptions {
  double duration_s = 60;
  double round_s = 10;
  uint64_t seed = 1;
  std::string modes = "sw,hw,auto,alpha";
  unsigned high_level = 2;
  unsigned low_level = 2;
  unsigned flooders = 2;
  unsigned troublemakers = 1;  // of each other role
  double probe_limit_ms = 100;
  double queue_full_limit = 0.001;
  double rss_slack_mib = 16;
  std::string json;
  std::string config;  // a TOML file for tandemd (its devices); "" = the embedded default
  bool device_faults = false;  // the configuration injects device faults
};

// tandemd's configuration: the user's file, if any, with connections that never say hello closed sooner
// than by default, so that rounds turn over (unless the file sets [limits] itself).
std::string chaos_daemon_config(const std::string& path) {
  std::string text;
  if (!path.empty()) {
    std::ifstream in(path);
    if (!in) throw Error(Status::invalid_argument, "tandem chaos: cannot read the configuration " + path);
    std::stringstream all;
    all << in.rdbuf();
    text = all.str() + "\n";
  }
  if (text.find("[limits]") == std::string::npos) text += "[limits]\nhello_timeout_ms = 500\n";
  (void)config::parse_config(text, path.empty() ? "tandem chaos" : path);  // a bad key is named here, not lost in tandemd's log
  return text;
}

double seconds_since(int64_t t0) { return static_cast<double>(tandem::now_ns() - t0) / 1e9; }

int count_fds(pid_t pid) {
  int n = 0;
  if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

double rss_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

bool parse_modes(const std::string& text, std::vector<std::pair<std::string, tandem_mode_t>>& out) {
  std::stringstream ss(text);
  for (std::string m; std::getline(ss, m, ',');) {
    if (m == "sw") out.emplace_back(m, TANDEM_MODE_SW);
    else if (m == "hw") out.emplace_back(m, TANDEM_MODE_HW);
    else if (m == "auto") out.emplace_back(m, TANDEM_MODE_AUTO);
    else if (m == "alpha") out.emplace_back(m, TANDEM_MODE_ALPHA);  // alpha 0.5 (chaos_clients.cc)
    else return false;
  }
  return !out.empty();
}

// What one round saw, and its verdict.
struct RoundResult {
  uint32_t index = 0;
  std::string mode;
  double seconds = 0;
  uint64_t high_calls = 0, low_jobs = 0, ok = 0, wrong = 0, lost = 0, duplicated = 0, queue_full = 0,
           other_errors = 0, device_errors = 0, disconnects = 0, trouble_actions = 0, flood_rejected = 0;
  uint64_t daemon_completions = 0;  // every job the daemon completed, of every client (its status report)
  uint32_t client_kills = 0, client_stops = 0, daemon_kills = 0, daemon_stops = 0;
  uint32_t disconnect_checked = 0, disconnect_late = 0;
  double disconnect_max_s = 0;
  uint64_t probes = 0, probe_failures = 0, probes_over = 0, probes_over_noise = 0;
  double probe_max_ms = 0, probe_mean_ms = 0, echo_max_ms = 0, cpu_wait_max_ms = 0, probe_limit_ms = 0;
  int fds = 0, fds_baseline = 0;
  double rss = 0, rss_baseline = 0;
  bool drained = false;
  std::vector<std::string> failures;
};

// The daemon of the run, for a signal that ends the driver: the run stops the daemon (SIGSTOP) for a few
// hundred ms at a time, and a driver interrupted then left it stopped for ever, its SIGTERM (the
// launcher's parent-death signal) pending. The handler resumes it, then lets the signal end the driver.
std::atomic<pid_t> g_daemon_to_resume{0};

void resume_daemon_and_die(int sig) {
  const pid_t daemon = g_daemon_to_resume.load();
  if (daemon > 0) kill(daemon, SIGCONT);
  signal(sig, SIG_DFL);
  raise(sig);
}

class ChaosRun {
 public:
  explicit ChaosRun(const ChaosOptions& o) : o_(o), rng_(o.seed) {
    void* mem = mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) throw Error(Status::no_memory, "cannot map the chaos board");
    board_ = new (mem) Board;
    board_->probe_limit_ns = static_cast<int64_t>(o.probe_limit_ms * 1e6);
    board_->device_faults = o.device_faults ? 1 : 0;
    daemon_ = std::make_unique<DaemonLauncher>(chaos_daemon_config(o.config), std::getenv("TANDEM_CHAOS_DAEMON_LOG") == nullptr);
    std::strncpy(board_->socket, daemon_->socket().c_str(), sizeof board_->socket - 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    fds_baseline_ = count_fds(daemon_->pid());
    board_->daemon_pid = daemon_->pid();
    g_daemon_to_resume = daemon_->pid();
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, resume_daemon_and_die);
    prober_ = spawn([this] { return chaos::run_prober(*board_); });
  }
  ~ChaosRun() {
    board_->stop_probe = 1;
    board_->stop_clients = 1;
    daemon_.reset();  // stops and reaps the daemon first: the loop below waits for every child
    for (auto& [pid, slot] : live_) kill(pid, SIGKILL);
    if (prober_ > 0) kill(prober_, SIGKILL);
    while (waitpid(-1, nullptr, 0) > 0) {
    }
    board_->~Board();
    munmap(board_, sizeof(Board));
  }

  RoundResult round(uint32_t index, const std::string& mode_name, tandem_mode_t mode) {
    RoundResult r;
    r.index = index;
    r.mode = mode_name;
    board_->round = index;
    board_->mode = static_cast<uint32_t>(mode);
    board_->stop_clients = 0;
    for (ClientSlot& s : board_->clients) reset(s);
    // The cast of this round.
    std::vector<Role> roles;
    for (unsigned i = 0; i < o_.high_level; ++i) roles.push_back(Role::high_level);
    for (unsigned i = 0; i < o_.low_level; ++i) roles.push_back(Role::low_level);
    for (unsigned i = 0; i < o_.flooders; ++i) roles.push_back(Role::flooder);
    for (Role t : {Role::reserver, Role::garbage_packets, Role::garbage_control, Role::non_reader, Role::idle_connector}) {
      for (unsigned i = 0; i < o_.troublemakers; ++i) roles.push_back(t);
    }
    if (roles.size() > chaos::kMaxClients) throw Error(Status::invalid_argument, "too many chaos clients");
    for (uint32_t s = 0; s < roles.size(); ++s) start_client(s, roles[s]);

    // The schedule: one daemon kill in the middle of the round, daemon stops, and client kills and
    // stops every few hundred ms, none of them near the daemon's death (its checks need quiet).
    const double len = o_.round_s;
    const double kill_at = len >= 4 ? uniform(0.35, 0.55) * len : -1;
    std::vector<std::pair<double, int>> events;  // (time, kind): 0 daemon kill, 1 daemon stop, 2 client
    if (kill_at > 0) events.emplace_back(kill_at, 0);
    for (double t = 0.3; t < len - 0.8; t += uniform(0.15, 0.45)) {
      if (kill_at > 0 && t > kill_at - 0.5 && t < kill_at + 2.0) continue;
      events.emplace_back(t, uniform(0, 1) < 0.12 ? 1 : 2);
    }
    std::sort(events.begin(), events.end());

    const int64_t t0 = tandem::now_ns();
    size_t next = 0;
    while (seconds_since(t0) < len) {
      const double now = seconds_since(t0);
      if (next < events.size() && now >= events[next].first) {
        const int kind = events[next++].second;
        if (kind == 0) daemon_kill(r);
        if (kind == 1) daemon_stop(r);
        if (kind == 2) client_event(r);
      }
      resume_due();
      reap(r, true);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    r.seconds = seconds_since(t0);
    end_round(r, roles);
    check(r);
    return r;
  }

 private:
  template <class F>
  pid_t spawn(F&& body) {
    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // nothing outlives the driver
      _exit(body());
    }
    if (pid < 0) throw Error(Status::io_error, "fork failed");
    return pid;
  }

  static void reset(ClientSlot& s) {
    s.~ClientSlot();
    new (&s) ClientSlot;
  }

  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }

  void start_client(uint32_t s, Role role) {
    ClientSlot& slot = board_->clients[s];
    slot.role = static_cast<uint32_t>(role);
    // A SIGKILLed client cannot say it lost its session: its successor starts unconnected. (A stale
    // `connected` once made a successor still opening its first session count as "watched" at a
    // daemon death, and fail for a DISCONNECTED that only a session can see.)
    slot.connected = 0;
    slot.in_call_since_ns = 0;
    slot.started_ns = tandem::now_ns();
    const uint64_t seed = rng_();
    const pid_t pid = spawn([this, role, &slot, seed] { return chaos::run_client(role, *board_, slot, seed); });
    slot.pid = pid;
    live_[pid] = s;
  }

  void reap(RoundResult& r, bool respawn) {
    for (;;) {
      int status = 0;
      const pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      if (pid == prober_) {
        prober_ = -1;
        r.failures.push_back("the control-plane prober died");
        continue;
      }
      if (pid == daemon_->pid()) {  // nobody here killed it: it crashed
        r.failures.push_back(fmt::format("tandemd died on its own (status {:#x}); restarted", status));
        daemon_->forget();
        daemon_->start();
        board_->daemon_pid = daemon_->pid();
        g_daemon_to_resume = daemon_->pid();
        continue;
      }
      auto it = live_.find(pid);
      if (it == live_.end()) continue;
      const uint32_t s = it->second;
      live_.erase(it);
      stopped_.erase(pid);
      const bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
      if (!killed && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        r.failures.push_back(fmt::format("client {} ({}) ended with status {:#x}", s,
                                         chaos::role_name(static_cast<Role>(board_->clients[s].role.load())), status));
      }
      if (respawn) start_client(s, static_cast<Role>(board_->clients[s].role.load()));
    }
  }

  void client_event(RoundResult& r) {
    if (live_.empty()) return;
    auto it = live_.begin();
    std::advance(it, static_cast<long>(rng_() % live_.size()));
    const pid_t pid = it->first;
    if (stopped_.count(pid)) return;
    if (uniform(0, 1) < 0.5) {
      kill(pid, SIGKILL);  // reap() respawns it
      ++r.client_kills;
    } else {
      kill(pid, SIGSTOP);
      stopped_[pid] = tandem::now_ns() + static_cast<int64_t>(uniform(0.05, 0.5) * 1e9);
      ++r.client_stops;
    }
  }

  void resume_due() {
    const int64_t now = tandem::now_ns();
    for (auto it = stopped_.begin(); it != stopped_.end();) {
      if (now >= it->second) {
        kill(it->first, SIGCONT);
        it = stopped_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void resume_all() {
    for (auto& [pid, until] : stopped_) kill(pid, SIGCONT);
    stopped_.clear();
  }

  void unavailable(bool yes) {
    if (yes) {
      board_->daemon_unavailable.store(1, std::memory_order_release);
      board_->daemon_generation.fetch_add(1, std::memory_order_acq_rel);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let it catch up first
      board_->daemon_generation.fetch_add(1, std::memory_order_acq_rel);
      board_->daemon_unavailable.store(0, std::memory_order_release);
    }
  }

  uint64_t daemon_completions() const {
    try {
      return fetch_status(daemon_->socket())["dispatcher"]["completions"].get<uint64_t>();
    } catch (const Error&) {
      return 0;  // not answering now: the round's figure is a lower bound
    }
  }

  void daemon_stop(RoundResult& r) {
    unavailable(true);
    const auto pause = std::chrono::milliseconds(static_cast<int>(uniform(100, 400)));
    const int64_t t = tandem::now_ns();
    kill(daemon_->pid(), SIGSTOP);
    std::this_thread::sleep_for(pause);
    kill(daemon_->pid(), SIGCONT);
    board_->daemon_paused_ns.fetch_add(tandem::now_ns() - t, relaxed);
    ++r.daemon_stops;
    unavailable(false);
  }

  // What a client that missed a daemon's death did after it: what tells a client that never got a CPU
  // (the machine) from one that ran and was not told (a defect).
  static std::string since_the_kill(pid_t pid, uint64_t calls0, const chaos::CpuTimes& cpu0, const ClientSlot& slot,
                                    int64_t killed) {
    const chaos::CpuTimes cpu = chaos::cpu_times(fmt::format("/proc/{}/schedstat", pid));
    const int64_t in_call = slot.in_call_since_ns.load();
    std::string text = fmt::format("since the kill: {} results checked", slot.calls.load() - calls0);
    if (cpu.ran_ns >= 0 && cpu0.ran_ns >= 0) {
      text += fmt::format(", its main thread ran {:.1f} ms and waited {:.1f} ms for a CPU",
                          static_cast<double>(cpu.ran_ns - cpu0.ran_ns) / 1e6,
                          static_cast<double>(cpu.waited_ns - cpu0.waited_ns) / 1e6);
    }
    text += fmt::format(", its process started {:.3f} s before the kill", static_cast<double>(killed - slot.started_ns.load()) / 1e9);
    if (in_call != 0) {
      text += fmt::format(", inside a library call begun {:.3f} s {} the kill",
                          static_cast<double>(std::abs(in_call - killed)) / 1e9, in_call < killed ? "before" : "after");
    }
    return text;
  }

  // SIGKILL the daemon; every correct client connected then (and not stopped) must see DISCONNECTED
  // within a second; then a new daemon on the same socket.
  void daemon_kill(RoundResult& r) {
    resume_all();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    struct Watched {
      uint32_t slot;
      pid_t pid;
      uint64_t calls;           // results checked before the kill
      chaos::CpuTimes cpu;      // its main thread's scheduler figures at the kill
    };
    std::vector<Watched> watched;
    for (auto& [pid, s] : live_) {
      const ClientSlot& slot = board_->clients[s];
      if (chaos::checks_results(static_cast<Role>(slot.role.load())) && slot.connected.load() != 0) {
        watched.push_back(Watched{s, pid, 0, {}});
      }
    }
    r.daemon_completions += daemon_completions();  // the restarted daemon counts from zero
    unavailable(true);
    for (Watched& w : watched) {
      w.calls = board_->clients[w.slot].calls.load();
      w.cpu = chaos::cpu_times(fmt::format("/proc/{}/schedstat", w.pid));
    }
    const int64_t killed = tandem::now_ns();
    daemon_->kill_hard();
    ++r.daemon_kills;
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    for (const Watched& w : watched) {
      const ClientSlot& slot = board_->clients[w.slot];
      if (slot.pid.load() != w.pid) continue;  // died meanwhile (nothing kills it here, but be exact)
      ++r.disconnect_checked;
      const double after = static_cast<double>(slot.last_disconnect_ns.load() - killed) / 1e9;
      if (after < 0 || after > 1.0) {
        ++r.disconnect_late;
        r.failures.push_back(fmt::format("client {} ({}) saw no DISCONNECTED within 1 s of the daemon's death{}; {}", w.slot,
                                         chaos::role_name(static_cast<Role>(slot.role.load())),
                                         after < 0 ? "" : fmt::format(" ({:.3f} s)", after),
                                         since_the_kill(w.pid, w.calls, w.cpu, slot, killed)));
      } else {
        r.disconnect_max_s = std::max(r.disconnect_max_s, after);
      }
    }
    daemon_->start();
    board_->daemon_pid = daemon_->pid();
    g_daemon_to_resume = daemon_->pid();
    unavailable(false);
  }

  void end_round(RoundResult& r, const std::vector<Role>& roles) {
    resume_all();
    board_->stop_clients = 1;
    const int64_t until = tandem::now_ns() + 5'000'000'000;
    while (!live_.empty() && tandem::now_ns() < until) {
      reap(r, false);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (auto& [pid, s] : live_) {
      r.failures.push_back(fmt::format("client {} ({}) did not stop within 5 s", s, chaos::role_name(roles[s])));
      kill(pid, SIGKILL);
    }
    while (!live_.empty()) reap(r, false);
    // The daemon drains the sessions of everything that just went away.
    const int64_t drain_until = tandem::now_ns() + 10'000'000'000;
    while (tandem::now_ns() < drain_until) {
      try {
        const auto j = fetch_status(daemon_->socket());
        if (j["sessions"].empty() && j["dispatcher"]["jobs_in_flight"].get<uint32_t>() == 0) {
          r.drained = true;
          r.daemon_completions += j["dispatcher"]["completions"].get<uint64_t>();
          break;
        }
      } catch (const Error&) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // Resources, with the prober paused so that its own connection is not counted.
    unavailable(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    r.fds_baseline = fds_baseline_;
    for (int i = 0; i < 40; ++i) {  // closed connections may take the control thread a moment
      r.fds = count_fds(daemon_->pid());
      if (r.fds <= fds_baseline_) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    r.rss = rss_mib(daemon_->pid());
    if (rss_baseline_ < 0) rss_baseline_ = r.rss;  // the first round warms the daemon up
    r.rss_baseline = rss_baseline_;
    unavailable(false);
    for (uint32_t s = 0; s < roles.size(); ++s) {
      const ClientSlot& slot = board_->clients[s];
      if (roles[s] == Role::high_level) r.high_calls += slot.calls;
      if (roles[s] == Role::low_level) r.low_jobs += slot.calls;
      if (chaos::checks_results(roles[s])) {
        r.ok += slot.ok;
        r.wrong += slot.wrong;
        r.lost += slot.lost;
        r.duplicated += slot.duplicated;
        r.queue_full += slot.queue_full;
        r.other_errors += slot.other_errors;
        r.device_errors += slot.device_errors;
        r.disconnects += slot.disconnects;
      } else {
        r.trouble_actions += slot.actions;
        if (roles[s] == Role::flooder) r.flood_rejected += slot.queue_full;
      }
    }
    const chaos::ProbeStats& p = board_->probes[r.index % chaos::kMaxRounds];
    r.probes = p.samples;
    r.probe_failures = p.failures;
    r.probes_over = p.over_limit;
    r.probes_over_noise = p.over_limit_beyond_noise;
    r.probe_max_ms = static_cast<double>(p.max_ns.load()) / 1e6;
    r.echo_max_ms = static_cast<double>(p.echo_max_ns.load()) / 1e6;
    r.cpu_wait_max_ms = static_cast<double>(p.cpu_wait_max_ns.load()) / 1e6;
    r.probe_limit_ms = o_.probe_limit_ms;
    const uint64_t answered = r.probes - r.probe_failures;
    r.probe_mean_ms = answered > 0 ? static_cast<double>(p.sum_ns.load()) / 1e6 / static_cast<double>(answered) : 0;
  }

  void check(RoundResult& r) {
    if (r.wrong + r.lost + r.duplicated > 0) {
      r.failures.push_back(fmt::format("correct clients: {} wrong, {} lost, {} duplicated", r.wrong, r.lost, r.duplicated));
    }
    if (r.other_errors > 0) r.failures.push_back(fmt::format("correct clients: {} unexpected statuses", r.other_errors));
    if (r.low_jobs == 0 || r.high_calls == 0) r.failures.push_back("correct clients made no progress");
    if (r.low_jobs > 0 && static_cast<double>(r.queue_full) > o_.queue_full_limit * static_cast<double>(r.low_jobs)) {
      r.failures.push_back(fmt::format("QUEUE_FULL rate {:.4f}% of correct jobs", 100.0 * r.queue_full / r.low_jobs));
    }
    if (r.probes == 0) r.failures.push_back("the control plane was never probed");
    if (r.probe_failures > 0) r.failures.push_back(fmt::format("{} status requests unanswered", r.probe_failures));
    if (r.probes_over_noise > 0) {
      r.failures.push_back(fmt::format("{} status answers slower than {} ms plus the machine's delay of the moment "
                                       "(max {:.1f} ms)", r.probes_over_noise, o_.probe_limit_ms, r.probe_max_ms));
    }
    if (!r.drained) r.failures.push_back("the daemon still had sessions or jobs 10 s after the round");
    if (r.fds != r.fds_baseline) r.failures.push_back(fmt::format("daemon descriptors {} (baseline {})", r.fds, r.fds_baseline));
    if (r.rss > r.rss_baseline + o_.rss_slack_mib) {
      r.failures.push_back(fmt::format("daemon RSS {:.1f} MiB (baseline {:.1f} MiB)", r.rss, r.rss_baseline));
    }
  }

  ChaosOptions o_;
  std::mt19937_64 rng_;
  Board* board_ = nullptr;
  std::unique_ptr<DaemonLauncher> daemon_;
  pid_t prober_ = -1;
  std::map<pid_t, uint32_t> live_;     // client pid -> slot
  std::map<pid_t, int64_t> stopped_;   // client pid -> when to SIGCONT it
  int fds_baseline_ = 0;
  double rss_baseline_ = -1;
};

nlohmann::json to_json(const RoundResult& r) {
  return {{"round", r.index}, {"mode", r.mode}, {"seconds", r.seconds}, {"high_level_calls", r.high_calls},
          {"low_level_jobs", r.low_jobs}, {"ok", r.ok}, {"wrong", r.wrong}, {"lost", r.lost},
          {"duplicated", r.duplicated}, {"queue_full", r.queue_full}, {"other_errors", r.other_errors},
          {"device_errors", r.device_errors},
          {"disconnects", r.disconnects}, {"trouble_actions", r.trouble_actions}, {"flood_rejected", r.flood_rejected},
          {"daemon_completions", r.daemon_completions}, {"client_kills", r.client_kills},
          {"client_stops", r.client_stops}, {"daemon_kills", r.daemon_kills}, {"daemon_stops", r.daemon_stops},
          {"disconnect_checked", r.disconnect_checked}, {"disconnect_max_s", r.disconnect_max_s},
          {"probes", r.probes}, {"probe_max_ms", r.probe_max_ms}, {"probe_mean_ms", r.probe_mean_ms}, {"echo_max_ms", r.echo_max_ms},
          {"cpu_wait_max_ms", r.cpu_wait_max_ms},
          {"probes_over_limit", r.probes_over}, {"probes_over_limit_beyond_noise", r.probes_over_noise}, {"fds", r.fds}, {"fds_baseline", r.fds_baseline},
          {"rss_mib", r.rss}, {"rss_baseline_mib", r.rss_baseline}, {"failures", r.failures}};
}

void print_round(const RoundResult& r, uint32_t rounds) {
  fmt::print("round {}/{} mode {:<4} {:.1f} s  {}\n", r.index + 1, rounds, r.mode, r.seconds,
             r.failures.empty() ? "PASS" : "FAIL");
  fmt::print("  correct clients: {} high-level calls, {} low-level jobs; {} wrong, {} lost, {} duplicated, "
             "{} unexpected; QUEUE_FULL {} ({:.4f}%)\n",
             r.high_calls, r.low_jobs, r.wrong, r.lost, r.duplicated, r.other_errors, r.queue_full,
             r.low_jobs > 0 ? 100.0 * r.queue_full / r.low_jobs : 0.0);
  if (r.device_errors > 0) fmt::print("  injected device faults: {} low-level jobs ended with DEVICE_ERROR or NO_MEMORY\n", r.device_errors);
  fmt::print("  daemon completed {} jobs of all clients\n", r.daemon_completions);
  fmt::print("  disturbances: {} client kills, {} client stops, {} daemon kills, {} daemon stops; "
             "{} trouble-maker actions; flooders met QUEUE_FULL {} times\n",
             r.client_kills, r.client_stops, r.daemon_kills, r.daemon_stops, r.trouble_actions, r.flood_rejected);
  fmt::print("  daemon death: {} of {} watched clients saw DISCONNECTED within 1 s (slowest {:.3f} s)\n",
             r.disconnect_checked - r.disconnect_late, r.disconnect_checked, r.disconnect_max_s);
  fmt::print("  control plane: {} status probes, mean {:.2f} ms, max {:.2f} ms, {} over {:.0f} ms ({} beyond the "
             "machine's delay: the answer's threads waited for a CPU up to {:.2f} ms, echo to an idle process up "
             "to {:.2f} ms), {} unanswered\n",
             r.probes, r.probe_mean_ms, r.probe_max_ms, r.probes_over, r.probe_limit_ms, r.probes_over_noise,
             r.cpu_wait_max_ms, r.echo_max_ms, r.probe_failures);
  fmt::print("  daemon after the round: {} descriptors (baseline {}), RSS {:.1f} MiB (baseline {:.1f})\n", r.fds,
             r.fds_baseline, r.rss, r.rss_baseline);
  for (const std::string& f : r.failures) fmt::print("  FAILED: {}\n", f);
  std::fflush(stdout);
}

int run_chaos(const ChaosOptions& o) {
  std::vector<std::pair<std::string, tandem_mode_t>> modes;
  if (!parse_modes(o.modes, modes)) throw Error(Status::invalid_argument, "--modes: a list of sw, hw, auto, alpha");
  if (!(o.round_s >= 1) || !(o.duration_s >= o.round_s)) {
    throw Error(Status::invalid_argument, "--round must be at least 1 s and --duration at least one round");
  }
  const auto rounds = static_cast<uint32_t>(std::min<double>(o.duration_s / o.round_s, chaos::kMaxRounds));
  (void)chaos_daemon_config(o.config);  // an unreadable file is an error before anything starts
  const std::string daemon = o.config.empty() ? "" : " --config " + o.config + (o.device_faults ? " --device-faults" : "");
  fmt::print("tandem chaos: {} rounds of {:.0f} s, modes {}, seed {} (replay: tandem chaos --duration {} --round {} "
             "--modes {} --seed {}{})\n",
             rounds, o.round_s, o.modes, o.seed, o.duration_s, o.round_s, o.modes, o.seed, daemon);
  std::fflush(stdout);
  ChaosRun run(o);
  nlohmann::json all = nlohmann::json::array();
  uint32_t failed = 0;
  RoundResult total;
  for (uint32_t i = 0; i < rounds; ++i) {
    const auto& [name, mode] = modes[i % modes.size()];
    const RoundResult r = run.round(i, name, mode);
    print_round(r, rounds);
    all.push_back(to_json(r));
    failed += r.failures.empty() ? 0 : 1;
    total.high_calls += r.high_calls;
    total.low_jobs += r.low_jobs;
    total.daemon_completions += r.daemon_completions;
    total.client_kills += r.client_kills;
    total.client_stops += r.client_stops;
    total.daemon_kills += r.daemon_kills;
    total.daemon_stops += r.daemon_stops;
    total.queue_full += r.queue_full;
    total.probe_max_ms = std::max(total.probe_max_ms, r.probe_max_ms);
    total.disconnect_max_s = std::max(total.disconnect_max_s, r.disconnect_max_s);
  }
  fmt::print("tandem chaos: {} of {} rounds passed; {} high-level calls and {} low-level jobs checked, "
             "{} QUEUE_FULL; {} jobs completed by the daemon; {} client kills, {} client stops, {} daemon kills, {} daemon stops; "
             "slowest DISCONNECTED {:.3f} s; slowest status answer {:.2f} ms\n",
             rounds - failed, rounds, total.high_calls, total.low_jobs, total.queue_full, total.daemon_completions,
             total.client_kills,
             total.client_stops, total.daemon_kills, total.daemon_stops, total.disconnect_max_s, total.probe_max_ms);
  if (!o.json.empty()) {
    nlohmann::json j = {{"seed", o.seed}, {"duration_s", o.duration_s}, {"round_s", o.round_s},
                        {"modes", o.modes}, {"rounds", all}, {"failed_rounds", failed}};
    std::ofstream out(o.json);
    out << j.dump(2) << "\n";
    if (!out) throw Error(Status::io_error, "cannot write " + o.json);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

void add_chaos_commands(CLI::App& app) {
  auto o = std::make_shared<ChaosOptions>();
  CLI::App* cmd = app.add_subcommand("chaos", "Many mixed clients against one tandemd, clients and daemon killed and "
                                                "stopped at random; checks results, limits and resources per round");
  cmd->add_option("--duration", o->duration_s, "Seconds in all (rounds cycle through the modes)");
  cmd->add_option("--round", o->round_s, "Seconds per round (one daemon kill each, from 4 s on)");
  cmd->add_option("--seed", o->seed, "Seed of the schedule and of every client's choices (replays a failure)");
  cmd->add_option("--modes", o->modes, "High-level clients' modes, round by round: a list of sw, hw, auto, alpha (0.5)");
  cmd->add_option("--high-level", o->high_level, "Correct high-level clients");
  cmd->add_option("--low-level", o->low_level, "Correct low-level clients");
  cmd->add_option("--flooders", o->flooders, "Clients that keep more jobs in flight than a queue holds");
  cmd->add_option("--troublemakers", o->troublemakers,
                  "Clients of each other kind (reserver, garbage packets, garbage control, non-reader, idle)");
  cmd->add_option("--probe-limit-ms", o->probe_limit_ms, "Slowest acceptable status answer");
  cmd->add_option("--json", o->json, "Write every round's figures here");
  cmd->add_flag("--device-faults", o->device_faults,
               "The configuration injects device faults: a low-level job's DEVICE_ERROR or NO_MEMORY is counted, "
               "not a failure (high-level calls must still be right)");
  cmd->add_option("--config", o->config,
                  "tandemd's configuration (TOML: e.g. [device] kinds = [\"opencl\"], with [device.opencl] "
                  "fail_every_launches = N to inject faults); default: the embedded one");
  cmd->callback([o] {
    const int rc = run_chaos(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tandem::tools
