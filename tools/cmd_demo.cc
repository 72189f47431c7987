// `tandem demo`: the main job of `make run`. Several threads call tandem_accumulate and tandem_work
// through the C API, in software-only, accelerated and automatic mode, on the embedded default fabric;
// every result is verified; a table compares the modes' median makespans over a few interleaved
// rounds, and a no-op round trip gives the dispatch latency.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.hpp"
#include "config/config.hpp"
#include "config/text_file.hpp"
#include "daemon_launcher.hpp"
#include "output.hpp"
#include "base/clock.hpp"
#include "status_report.hpp"
#include "tandem/tandem.h"

namespace tandem::tools {

namespace {

struct DemoOptions {
  unsigned threads = 4;
  unsigned calls = 100;            // per thread and function
  unsigned elements = 64 * 1024;   // int32 per accumulate call
  uint64_t work_units = 200'000;   // cycles per work call
  std::string config;
  bool daemon = true;              // also run client processes through a private tandemd
  unsigned processes = 3;          // client processes of the daemon phase
  unsigned rounds = 5;             // each mode once per round, in a rotating order; medians reported
  std::string trace_dir;           // the daemon phase traced, its trace and breakdown written here
};

struct PhaseResult {
  std::string mode;
  double makespan_ms = 0;
  uint64_t wrong = 0;
  uint64_t failed = 0;
};

// The workload of every phase: o.threads threads, each making o.calls pairs of tandem_accumulate
// (over inputs[t], o.elements values, checked against expected[t]) and tandem_work calls.
PhaseResult run_calls(const DemoOptions& o, tandem_runtime_t* rt, const std::vector<const int32_t*>& inputs,
                      const std::vector<int64_t>& expected) {
  std::atomic<uint64_t> wrong{0}, failed{0};
  const int64_t t0 = tandem::now_ns();
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      for (unsigned c = 0; c < o.calls; ++c) {
        int64_t sum = 0;
        if (tandem_accumulate(rt, inputs[t], o.elements, &sum) != TANDEM_OK) {
          failed++;
        } else if (sum != expected[t]) {
          wrong++;
        }
        if (tandem_work(rt, o.work_units) != TANDEM_OK) failed++;
      }
    });
  }
  for (auto& th : threads) th.join();
  PhaseResult r;
  r.makespan_ms = static_cast<double>(tandem::now_ns() - t0) / 1e6;
  r.wrong = wrong;
  r.failed = failed;
  return r;
}

PhaseResult run_phase(const DemoOptions& o, tandem_mode_t mode, const char* name,
                      const std::vector<std::vector<int32_t>>& inputs, const std::vector<int64_t>& expected) {
  tandem_options_t opts;
  tandem_options_init(&opts);
  opts.embedded = 1;
  opts.mode = mode;
  opts.config_path = o.config.empty() ? nullptr : o.config.c_str();
  tandem_runtime_t* rt = nullptr;
  if (tandem_open(&opts, &rt) != TANDEM_OK) throw std::runtime_error(std::string("tandem_open: ") + tandem_last_error());
  std::vector<const int32_t*> data;
  for (const auto& in : inputs) data.push_back(in.data());
  PhaseResult r = run_calls(o, rt, data, expected);
  r.mode = name;
  tandem_close(rt);
  return r;
}

// Median and p99 of a no-op job's round trip (submit -> null accelerator -> completion seen).
std::pair<double, double> dispatch_latency(const DemoOptions& o) {
  tandem_options_t opts;
  tandem_options_init(&opts);
  opts.embedded = 1;
  opts.config_path = o.config.empty() ? nullptr : o.config.c_str();
  tandem_runtime_t* rt = nullptr;
  if (tandem_open(&opts, &rt) != TANDEM_OK) throw std::runtime_error(tandem_last_error());
  tandem_queue_t* q = nullptr;
  tandem_queue_create(rt, 64, &q);
  tandem_completion_t rec;
  std::vector<double> samples;
  for (int i = 0; i < 3000; ++i) {
    tandem_completion_init(&rec);
    const int64_t t0 = tandem::now_ns();
    tandem_dispatch(q, TANDEM_FN_NOP, nullptr, 0, 0, &rec);
    tandem_wait(rt, &rec, TANDEM_WAIT_SPIN, 0, 1'000'000'000);
    if (i >= 500) samples.push_back(static_cast<double>(tandem::now_ns() - t0));
  }
  tandem_queue_destroy(q);
  tandem_close(rt);
  std::sort(samples.begin(), samples.end());
  return {samples[samples.size() / 2], samples[samples.size() * 99 / 100]};
}

// One client process of the daemon phase: threads of high-level calls on inputs in session memory
// (tandem_alloc: zero-copy for the daemon). Returns 0 if every result was right.
int daemon_client(const DemoOptions& o, const std::string& socket, unsigned process, double* makespan_ms) {
  tandem_options_t opts;
  tandem_options_init(&opts);
  opts.socket_path = socket.c_str();
  opts.mode = TANDEM_MODE_HW;
  tandem_runtime_t* rt = nullptr;
  if (tandem_open(&opts, &rt) != TANDEM_OK) return 2;
  std::vector<int32_t*> inputs(o.threads);
  std::vector<int64_t> expected(o.threads);
  std::mt19937 rng(1000 + process);
  for (unsigned t = 0; t < o.threads; ++t) {
    inputs[t] = static_cast<int32_t*>(tandem_alloc(rt, o.elements * sizeof(int32_t)));
    if (inputs[t] == nullptr) return 3;
    int64_t sum = 0;
    for (unsigned i = 0; i < o.elements; ++i) sum += inputs[t][i] = static_cast<int32_t>(rng());
    expected[t] = sum;
  }
  const PhaseResult r = run_calls(o, rt, std::vector<const int32_t*>(inputs.begin(), inputs.end()), expected);
  *makespan_ms = r.makespan_ms;
  for (int32_t* p : inputs) tandem_free(rt, p);
  tandem_close(rt);
  return r.wrong == 0 && r.failed == 0 ? 0 : 1;
}

void run_daemon_phase(const DemoOptions& o) {
  std::string config_text = o.config.empty() ? std::string() : config::read_text_file(o.config, "configuration file");
  if (!o.trace_dir.empty()) {  // over the file's own [trace] settings
    config_text = config::overlay_config_text(config_text, o.config.empty() ? "<built-in default>" : o.config,
                                              "[trace]\nenabled = true\n", "--trace");
  }
  DaemonLauncher daemon(config_text, true, o.config.empty() ? "<built-in default>" : o.config);
  fmt::print("\n== many processes, one fabric: tandemd (pid {}, {}), {} client processes x {} threads\n\n",
             daemon.pid(), daemon.socket(), o.processes, o.threads);
  auto* times = static_cast<double*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  std::vector<pid_t> children;
  const int64_t t0 = tandem::now_ns();
  for (unsigned p = 0; p < o.processes; ++p) {
    const pid_t pid = fork();
    if (pid == 0) _exit(daemon_client(o, daemon.socket(), p, &times[p]));
    children.push_back(pid);
  }
  bool all_ok = true;
  fmt::print("{:<10} {:>10} {:>14} {:>10}\n", "process", "pid", "makespan (ms)", "results");
  for (unsigned p = 0; p < o.processes; ++p) {
    int status = 0;
    waitpid(children[p], &status, 0);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    all_ok = all_ok && ok;
    fmt::print("{:<10} {:>10} {:>14.1f} {:>10}\n", p, children[p], times[p], ok ? "all ok" : "WRONG");
  }
  fmt::print("all {} processes finished in {:.1f} ms\n\n", o.processes, static_cast<double>(tandem::now_ns() - t0) / 1e6);
  munmap(times, 4096);
  fmt::print("$ tandem status\n");
  print_status(fetch_status(daemon.socket()));
  if (!o.trace_dir.empty()) {
    fmt::print("\n$ tandem trace report -o {}\n", o.trace_dir);
    write_trace_outputs(daemon.socket(), o.trace_dir);
  }
  const int status = daemon.stop();
  fmt::print("\ntandemd stopped ({})\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "clean exit" : "abnormal exit");
  if (!all_ok) throw std::runtime_error("some results through the daemon were wrong");
}

void run_demo(const DemoOptions& o) {
  fmt::print("tandem demo: {} threads x {} calls of tandem_accumulate ({} KiB) and tandem_work ({} cycles),\n"
             "embedded runtime, {} fabric\n\n",
             o.threads, o.calls, o.elements * 4 / 1024, o.work_units,
             o.config.empty() ? "built-in default" : o.config);
  std::vector<std::vector<int32_t>> inputs(o.threads);
  std::vector<int64_t> expected(o.threads);
  std::mt19937 rng(42);
  for (unsigned t = 0; t < o.threads; ++t) {
    inputs[t].resize(o.elements);
    for (auto& v : inputs[t]) v = static_cast<int32_t>(rng());
    expected[t] = std::accumulate(inputs[t].begin(), inputs[t].end(), int64_t{0});
  }
  // One makespan of a busy machine swings by 2x between runs seconds apart (docs/results/auto.md): each
  // mode runs once per round, the order rotating so that none always goes first, and the table shows
  // each mode's median and range.
  struct Mode {
    tandem_mode_t mode;
    const char* name;
    std::vector<double> makespans_ms;
    uint64_t wrong = 0;
  };
  std::vector<Mode> modes{{TANDEM_MODE_SW, "software only", {}}, {TANDEM_MODE_HW, "accelerated", {}},
                          {TANDEM_MODE_AUTO, "auto", {}}};
  for (unsigned round = 0; round < o.rounds; ++round) {
    for (size_t i = 0; i < modes.size(); ++i) {
      Mode& m = modes[(round + i) % modes.size()];
      const PhaseResult r = run_phase(o, m.mode, m.name, inputs, expected);
      m.makespans_ms.push_back(r.makespan_ms);
      m.wrong += r.wrong + r.failed;
    }
  }
  const auto [lat_median, lat_p99] = dispatch_latency(o);
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };

  fmt::print("{:<16} {:>14} {:>17} {:>10} {:>10}\n", "mode", "makespan (ms)", "range (ms)", "speedup", "results");
  bool all_ok = true;
  const double sw_ms = median(modes[0].makespans_ms);
  for (const Mode& m : modes) {
    const bool ok = m.wrong == 0;
    all_ok = all_ok && ok;
    const auto [lo, hi] = std::minmax_element(m.makespans_ms.begin(), m.makespans_ms.end());
    const double ms = median(m.makespans_ms);
    fmt::print("{:<16} {:>14.1f} {:>17} {:>9.2f}x {:>10}\n", m.name, ms, fmt::format("{:.1f}-{:.1f}", *lo, *hi),
               sw_ms / ms, ok ? "all ok" : fmt::format("{} wrong", m.wrong));
  }
  fmt::print("(median of {} rounds, each mode once per round in a rotating order, every result checked)\n", o.rounds);
  fmt::print("\ndispatch latency (no-op job round trip, spin wait): median {:.0f} ns, p99 {:.0f} ns\n", lat_median,
             lat_p99);
  if (!all_ok) throw std::runtime_error("some results were wrong");
  if (o.daemon) run_daemon_phase(o);
}

}  // namespace

void add_demo_commands(CLI::App& app) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* demo = app.add_subcommand("demo", "Run the demo workload (the main job of `make run`)");
  demo->add_option("--threads", o->threads, "Application threads")->check(CLI::Range(1u, 64u))->capture_default_str();
  demo->add_option("--calls", o->calls, "Calls per thread and function")->check(CLI::Range(1u, 1000000u))->capture_default_str();
  demo->add_option("--elements", o->elements, "int32 elements per accumulate call")->check(CLI::Range(1u, 1u << 26))->capture_default_str();
  demo->add_option("--work-units", o->work_units, "CPU cycles per work call")->capture_default_str();
  demo->add_option("--config", o->config, "Fabric configuration (TOML); default: $TANDEM_CONFIG, else built in")->check(CLI::ExistingFile);
  demo->add_option("--rounds", o->rounds, "Rounds of the embedded phase (each mode once per round; medians)")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  demo->add_option("--processes", o->processes, "Client processes of the daemon phase")->check(CLI::Range(1u, 64u))->capture_default_str();
  demo->add_option("--trace", o->trace_dir, "Trace the daemon phase; its Perfetto trace, CSV and latency breakdown go here");
  demo->add_flag("!--no-daemon", o->daemon, "Skip the phase with client processes of a private tandemd");
  demo->callback([o] {
    // As tandem_open would: both phases, and the banner, use the same file.
    if (const char* env = std::getenv("TANDEM_CONFIG"); o->config.empty() && env != nullptr && *env != '\0') {
      o->config = env;
    }
    // Made before the demo runs, so that a folder that cannot be written fails at once.
    std::optional<OutputDir> trace_dir;
    if (!o->trace_dir.empty()) trace_dir.emplace(o->trace_dir);
    run_demo(*o);
  });
}

}  // namespace tandem::tools
