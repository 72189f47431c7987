// `tandem experiment auto`: does the automatic mode ever lose (issue 15)? For T threads of one embedded
// runtime and P client processes of a private tandemd, on the demo's workload (accumulate 256 KiB +
// work 200k cycles per step), on work calls alone and on accumulate at sizes around N_L, the makespan
// of sw, hw and auto (median of the repetitions), every auto run starting from nothing learnt and no
// calibration file (a private, emptied XDG_CONFIG_HOME). auto_static is the automatic mode without
// issue 15's corrections ($TANDEM_AUTO_ADAPT=0), measured in the same run for comparison.
//
// Then thesis 5.5's dynamic multitasking, scaled down (processes calling random work functions of random
// sizes, Algorithm 1 reconfiguring 4 slots), on a private tandemd and in the simulator configured alike:
// libtandem's rule of no split without a free core, and the CPU the real dispatcher used in auto mode
// taken from the simulated applications (sim::SimConfig::engine_cores); variants without each.
//
// Writes cases.csv and summary.json: auto_over_best_min (the worst over the cases of best(sw, hw) / auto,
// target >= 0.95; beside it oracle_over_best_min, the same for each repetition's faster fixed mode run
// again: the floor this machine's noise sets), auto_over_hw_single_thread (hw / auto for T = 1 on the work calls, target >= 1.10) and
// sim_vs_real_makespan_error (|simulated - real| / real of the auto/sw makespan ratio, target <= 0.15).
// Each case also says what auto's calls did over its repetitions: the share of the work units that ran
// on the accelerators and the share of the calls that ran wholly in software.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "abi/status.hpp"
#include "base/clock.hpp"
#include "base/stats.hpp"
#include "commands.hpp"
#include "daemon_launcher.hpp"
#include "funcs/throughput.hpp"
#include "output.hpp"
#include "sim/simulator.hpp"
#include "sim/workload.hpp"
#include "support/measure.hpp"
#include "tandem/tandem.h"

namespace tandem::tools {

namespace {

using nlohmann::json;

struct AutoOptions {
  std::string out = "auto-results";
  bool quick = false;
  unsigned reps = 15;  // a multiple of 5: every mode takes every place in the rotation equally often
};

struct Workload {
  std::string name;
  uint32_t elements = 0;    // int32 per accumulate call (0: none)
  uint64_t work_units = 0;  // cycles per work call (0: none)
  unsigned calls = 0;       // steps per thread
};


tandem_mode_t mode_of(const std::string& m) {
  if (m == "sw") return TANDEM_MODE_SW;
  if (m == "hw") return TANDEM_MODE_HW;
  return TANDEM_MODE_AUTO;
}

// Every mode starts alike: nothing learnt, no calibration; auto_static also without the corrections.
void prepare_mode(const AutoOptions& o, const std::string& mode) {
  const std::string xdg = std::filesystem::absolute(o.out + "/xdg").string();
  std::filesystem::remove_all(xdg);
  std::filesystem::create_directories(xdg);
  setenv("XDG_CONFIG_HOME", xdg.c_str(), 1);
  unsetenv("TANDEM_LEARNED_DIR");
  unsetenv("TANDEM_CALIBRATION");
  unsetenv("TANDEM_MODE");
  if (mode == "auto_static") {
    setenv("TANDEM_AUTO_ADAPT", "0", 1);
  } else {
    unsetenv("TANDEM_AUTO_ADAPT");
  }
}

// T threads making w.calls steps each on `rt`; returns the makespan in seconds, or a negative value if
// a result was wrong or a call failed. `data` holds one input per thread, `expected` its sum.
double run_threads(tandem_runtime_t* rt, const Workload& w, unsigned threads, const std::vector<int32_t*>& data,
                   const std::vector<int64_t>& expected) {
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::atomic<uint64_t> bad{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (unsigned c = 0; c < w.calls; ++c) {
        if (w.elements > 0) {
          int64_t sum = 0;
          if (tandem_accumulate(rt, data[t], w.elements, &sum) != TANDEM_OK || sum != expected[t]) bad++;
        }
        if (w.work_units > 0 && tandem_work(rt, w.work_units) != TANDEM_OK) bad++;
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const int64_t t0 = now_ns();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  const double s = static_cast<double>(now_ns() - t0) * 1e-9;
  return bad.load() == 0 ? s : -1;
}

// Inputs of `threads` accumulate calls: from `alloc` (session memory under tandemd) or the heap.
struct Inputs {
  std::vector<int32_t*> data;
  std::vector<int64_t> expected;
  std::vector<std::vector<int32_t>> heap;
};

void fill(Inputs& in, const Workload& w, unsigned threads, tandem_runtime_t* session) {
  std::mt19937 rng(7);
  for (unsigned t = 0; t < threads; ++t) {
    int32_t* p = nullptr;
    if (w.elements > 0) {
      if (session != nullptr) {
        p = static_cast<int32_t*>(tandem_alloc(session, w.elements * sizeof(int32_t)));
      } else {
        in.heap.emplace_back(w.elements);
        p = in.heap.back().data();
      }
    }
    int64_t sum = 0;
    for (uint32_t i = 0; p != nullptr && i < w.elements; ++i) sum += p[i] = static_cast<int32_t>(rng() % 1000);
    in.data.push_back(p);
    in.expected.push_back(sum);
  }
}

// The share of the work units that ran on the accelerators.
double hw_fraction(uint64_t hw_units, uint64_t sw_units) {
  return hw_units + sw_units > 0 ? static_cast<double>(hw_units) / static_cast<double>(hw_units + sw_units) : 0.0;
}

// What a mode's calls did, summed over runs and processes (tandem_get_call_stats): units run in
// software and on the accelerators, calls, and calls wholly in software.
struct CallMix {
  static constexpr size_t kWords = 4;  // a child process's share of run_together's page
  uint64_t sw_units = 0, hw_units = 0, calls = 0, sw_calls = 0;
  void add(const tandem_call_stats_t& st) {
    sw_units += st.sw_units;
    hw_units += st.hw_units;
    calls += st.calls;
    sw_calls += st.sw_calls;
  }
  // A child's runtime, into its words of the shared page; the parent adds them up.
  static void store(tandem_runtime_t* rt, int64_t* words) {
    tandem_call_stats_t st;
    if (tandem_get_call_stats(rt, &st, sizeof st) != TANDEM_OK) return;
    words[0] = static_cast<int64_t>(st.sw_units);
    words[1] = static_cast<int64_t>(st.hw_units);
    words[2] = static_cast<int64_t>(st.calls);
    words[3] = static_cast<int64_t>(st.sw_calls);
  }
  void add_words(const int64_t* words) {
    sw_units += static_cast<uint64_t>(words[0]);
    hw_units += static_cast<uint64_t>(words[1]);
    calls += static_cast<uint64_t>(words[2]);
    sw_calls += static_cast<uint64_t>(words[3]);
  }
  double hw_unit_fraction() const { return hw_fraction(hw_units, sw_units); }
  double sw_call_fraction() const { return calls > 0 ? static_cast<double>(sw_calls) / static_cast<double>(calls) : 0.0; }
};

double embedded_run(const Workload& w, unsigned threads, const std::string& mode, CallMix& mix) {
  tandem_options_t opts;
  tandem_options_init(&opts);
  opts.embedded = 1;
  opts.mode = mode_of(mode);
  tandem_runtime_t* rt = nullptr;
  if (tandem_open(&opts, &rt) != TANDEM_OK) throw Error(Status::io_error, std::string("tandem_open: ") + tandem_last_error());
  Inputs in;
  fill(in, w, threads, nullptr);
  const double s = run_threads(rt, w, threads, in.data, in.expected);
  tandem_call_stats_t st;
  if (tandem_get_call_stats(rt, &st, sizeof st) == TANDEM_OK) mix.add(st);
  tandem_close(rt);
  return s;
}

// The shared page of run_together(): [0] children ready, [1] go, [2] children that ended before they
// were ready; the children's own words from kFirstChildWord.
constexpr size_t kFirstChildWord = 3;

// Runs `n` child processes that start together: child i runs `body(i, start, words)`, which sets up,
// calls start() (it returns once every child is ready), does its work and returns its exit code;
// `read_words` sees the page after the children ended. The makespan from the start to the last exit
// (s), or < 0 if a child failed (also one that failed before it was ready).
double run_together(size_t n, const std::function<int(size_t, const std::function<void()>&, int64_t*)>& body,
                    const std::function<void(const int64_t*)>& read_words = nullptr) {
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) throw Error(Status::no_memory, "mmap");
  auto* words = static_cast<int64_t*>(page);  // zeroed
  std::atomic_ref<int64_t> ready(words[0]), go(words[1]), gave_up(words[2]);
  std::vector<pid_t> children;
  const auto reap = [&] {
    bool ok = true;
    for (pid_t c : children) {
      int status = 0;
      waitpid(c, &status, 0);
      ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    return ok;
  };
  for (size_t i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid < 0) {
      go.store(1);  // those already forked run and end
      reap();
      munmap(page, 4096);
      throw Error(Status::io_error, "fork");
    }
    if (pid == 0) {
      bool started = false;
      const std::function<void()> start = [&] {
        started = true;
        ready.fetch_add(1);
        while (go.load() == 0) std::this_thread::yield();
      };
      int rc = 3;
      try {
        rc = body(i, start, words);
      } catch (...) {  // never unwind into the parent's frames (its daemon's destructor) in a child
        rc = 3;
      }
      if (!started) gave_up.fetch_add(1);
      _exit(rc);
    }
    children.push_back(pid);
  }
  while (ready.load() + gave_up.load() < static_cast<int64_t>(n)) std::this_thread::yield();
  const int64_t t0 = now_ns();
  go.store(1);
  const bool ok = reap();
  const double s = static_cast<double>(now_ns() - t0) * 1e-9;
  if (read_words) read_words(words);
  munmap(page, 4096);
  return ok ? s : -1;
}

// A client session of the daemon at `socket` in `mode`, or null.
tandem_runtime_t* open_client(const std::string& socket, const std::string& mode) {
  tandem_options_t opts;
  tandem_options_init(&opts);
  opts.socket_path = socket.c_str();
  opts.mode = mode_of(mode);
  tandem_runtime_t* rt = nullptr;
  return tandem_open(&opts, &rt) == TANDEM_OK ? rt : nullptr;
}

// run_together() for `n` client processes that each report what their calls did: `body(i, start, mine)`
// stores its runtime's CallMix into `mine`, its words of the shared page; `mix` gets their sum.
double run_clients(size_t n, CallMix& mix, const std::function<int(size_t, const std::function<void()>&, int64_t*)>& body) {
  if (kFirstChildWord + CallMix::kWords * n > 4096 / sizeof(int64_t)) {
    throw Error(Status::invalid_argument, fmt::format("too many client processes ({})", n));
  }
  return run_together(n, [&](size_t i, const std::function<void()>& start, int64_t* words) {
    return body(i, start, words + kFirstChildWord + CallMix::kWords * i);
  }, [&](const int64_t* words) {
    for (size_t i = 0; i < n; ++i) mix.add_words(words + kFirstChildWord + CallMix::kWords * i);
  });
}

// P client processes, one thread each, of the daemon at `socket`; the makespan from the first start
// to the last finish (the processes start together on a shared flag).
double daemon_run(const Workload& w, unsigned processes, const std::string& mode, const std::string& socket,
                  CallMix& mix) {
  return run_clients(processes, mix, [&](size_t, const std::function<void()>& start, int64_t* mine) {
    tandem_runtime_t* rt = open_client(socket, mode);
    if (rt == nullptr) return 2;
    Inputs in;
    fill(in, w, 1, rt);
    start();
    const double s = run_threads(rt, w, 1, in.data, in.expected);
    CallMix::store(rt, mine);
    for (int32_t* d : in.data) tandem_free(rt, d);
    tandem_close(rt);
    return s >= 0 ? 0 : 1;
  });
}

// Thesis 5.5's dynamic multitasking, scaled down: processes making calls of random work functions and
// sizes, reconfiguration on (Algorithm 1), on real tandemd and in the simulator configured alike.
struct Multitasking {
  sim::WorkloadSpec spec;
  uint32_t slots = 4;
  double speedup = 4;
  double latency_s = 1e-6;
  double reconfig_s = 1e-3;

  std::string daemon_config() const {
    return fmt::format("[device.emu]\nslots = {}\nresident = []\n\n[reconfig]\npolicy = \"algorithm1\"\n\n"
                       "[functions.work]\nspeedup = {}\nlatency_us = {}\nreconfig_ms = {}\n",
                       slots, speedup, latency_s * 1e6, reconfig_s * 1e3);
  }
};

// Every application's call list in its own client process; the makespan (s) or < 0 on a failure.
double multitasking_run(const std::vector<sim::AppSpec>& apps, const std::string& mode, const std::string& socket,
                        CallMix& calls) {
  return run_clients(apps.size(), calls, [&](size_t i, const std::function<void()>& start, int64_t* mine) {
    tandem_runtime_t* rt = open_client(socket, mode);
    if (rt == nullptr) return 2;
    start();
    int rc = 0;
    for (const sim::LibraryCall& c : apps[i].calls) {
      if (tandem_work_fn(rt, c.function, c.units) != TANDEM_OK) rc = 1;
    }
    CallMix::store(rt, mine);
    tandem_close(rt);
    return rc;
  });
}

void run_auto(const AutoOptions& o) {
  const OutputDir out_dir(o.out);  // removed again if the run fails before writing to it
  const int64_t t0 = now_ns();
  const unsigned calls = o.quick ? 6 : 60;
  // accumulate's N_L on this machine is a few KiB (`tandem model`): sizes below, near and far above it.
  std::vector<Workload> workloads = {{"demo", 64 * 1024, 200'000, calls},
                                     {"work", 0, 200'000, calls},
                                     {"accumulate_1KiB", 256, 0, calls * 8},
                                     {"accumulate_16KiB", 4096, 0, calls * 4},
                                     {"accumulate_1MiB", 256 * 1024, 0, calls}};
  std::vector<unsigned> thread_counts = {1, 2, 4, 8};
  std::vector<unsigned> process_counts = {1, 2, 4};
  unsigned reps = o.reps;
  if (o.quick) {
    workloads.resize(2);
    thread_counts = {1, 2};
    process_counts = {1};
    reps = 1;
  }
  json summary;
  summary["command"] = std::string("tandem experiment auto") + (o.quick ? " --quick" : "") + " --out " + o.out;
  summary["cpus"] = std::thread::hardware_concurrency();
  summary["repetitions"] = reps;
  std::ostringstream csv;
  csv << "runtime,parallelism,workload,sw_s,hw_s,auto_s,auto_static_s,oracle_s,best_over_auto,best_over_auto_static,"
         "best_over_oracle,auto_hw_unit_fraction,auto_sw_call_fraction\n";
  double worst = 1e300, worst_static = 1e300, worst_oracle = 1e300;
  double log_auto = 0, log_oracle = 0;  // sums of log(best / x) over the cases, for geometric means
  std::string worst_case;
  json cases = json::array();
  const auto record = [&](const std::string& runtime, unsigned n, const Workload& w,
                          const std::map<std::string, double>& m, const CallMix& auto_mix) {
    const double best = std::min(m.at("sw"), m.at("hw"));
    const double ratio = best / m.at("auto");
    const double ratio_static = best / m.at("auto_static");
    const double ratio_oracle = best / m.at("oracle");
    if (ratio < worst) {
      worst = ratio;
      worst_case = fmt::format("{} {}={} {}", runtime, runtime == "embedded" ? "T" : "P", n, w.name);
    }
    worst_static = std::min(worst_static, ratio_static);
    worst_oracle = std::min(worst_oracle, ratio_oracle);
    log_auto += std::log(ratio);
    log_oracle += std::log(ratio_oracle);
    csv << fmt::format("{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f}\n", runtime, n,
                       w.name, m.at("sw"), m.at("hw"), m.at("auto"), m.at("auto_static"), m.at("oracle"), ratio,
                       ratio_static, ratio_oracle, auto_mix.hw_unit_fraction(), auto_mix.sw_call_fraction());
    cases.push_back({{"runtime", runtime}, {"parallelism", n}, {"workload", w.name}, {"sw_s", m.at("sw")},
                     {"hw_s", m.at("hw")}, {"auto_s", m.at("auto")}, {"auto_static_s", m.at("auto_static")},
                     {"oracle_s", m.at("oracle")}, {"best_over_auto", ratio}, {"best_over_oracle", ratio_oracle},
                     {"auto_hw_unit_fraction", auto_mix.hw_unit_fraction()},
                     {"auto_sw_call_fraction", auto_mix.sw_call_fraction()}});
    fmt::print("  {:<8} {}={:<2} {:<18} sw {:8.2f} ms  hw {:8.2f} ms  auto {:8.2f} ms  auto_static {:8.2f} ms  "
               "oracle {:8.2f} ms  best/auto {:.3f}  best/oracle {:.3f}  auto: {:.0f}% of units on the fabric\n",
               runtime, runtime == "embedded" ? "T" : "P", n, w.name, m.at("sw") * 1e3, m.at("hw") * 1e3,
               m.at("auto") * 1e3, m.at("auto_static") * 1e3, m.at("oracle") * 1e3, ratio, ratio_oracle,
               auto_mix.hw_unit_fraction() * 100);
  };
  // Modes interleave within a repetition so that a burst of load from elsewhere hits all of them, in an
  // order that rotates from one repetition to the next (each takes every place once in 5 repetitions).
  // One of them is the oracle: the fixed mode (sw or hw) with the lower median so far, run again. It is
  // what a chooser that always knew the answer would score, so best(sw, hw) / oracle over the cases is
  // the floor that this machine's noise sets for auto's statistics (auto_over_best_min and the rest).
  // `mixes` gets what each mode's calls did, over the repetitions.
  const auto measure = [&](const std::function<double(const std::string&, CallMix&)>& run,
                           std::map<std::string, CallMix>& mixes) {
    std::map<std::string, std::vector<double>> samples;
    const auto sample = [&](const std::string& mode, const std::string& key) {
      prepare_mode(o, mode);
      const double s = run(mode, mixes[key]);
      if (s < 0) throw Error(Status::device_error, fmt::format("wrong results in mode {}", mode));
      samples[key].push_back(s);
    };
    const std::vector<std::string> order = {"sw", "hw", "auto", "auto_static", "oracle"};  // sw and hw before the first oracle
    for (unsigned r = 0; r < reps; ++r) {
      for (size_t i = 0; i < order.size(); ++i) {
        const std::string& key = order[(i + r) % order.size()];
        if (key != "oracle") {
          sample(key, key);
        } else {
          sample(upper_median(samples["sw"]) <= upper_median(samples["hw"]) ? "sw" : "hw", "oracle");
        }
      }
    }
    std::map<std::string, double> m;
    for (auto& [mode, v] : samples) m[mode] = upper_median(v);
    return m;
  };
  double hw_over_auto_single = 0;
  fmt::print("tandem experiment auto: {} repetitions, medians; {} CPUs\n", reps, std::thread::hardware_concurrency());
  for (const Workload& w : workloads) {
    for (unsigned t : thread_counts) {
      std::map<std::string, CallMix> mixes;
      const auto m = measure([&](const std::string& mode, CallMix& mix) { return embedded_run(w, t, mode, mix); }, mixes);
      record("embedded", t, w, m, mixes["auto"]);
      if (t == 1 && w.name == "work") hw_over_auto_single = m.at("hw") / m.at("auto");
    }
  }
  {
    DaemonLauncher daemon("");
    for (const Workload& w : workloads) {
      for (unsigned p : process_counts) {
        std::map<std::string, CallMix> mixes;
        const auto m = measure(
            [&](const std::string& mode, CallMix& mix) { return daemon_run(w, p, mode, daemon.socket(), mix); }, mixes);
        record("tandemd", p, w, m, mixes["auto"]);
      }
    }
    (void)daemon.stop();
  }
  // The simulator against the real runtime on the same multitasking workload.
  {
    Multitasking mt;
    mt.spec.apps = o.quick ? 2 : 3;
    mt.spec.functions = 4;
    mt.spec.first_function = TANDEM_FN_WORK_BASE;
    mt.spec.total_sw_s = o.quick ? 0.05 : 0.6;
    mt.spec.call_min_s = 1e-3;
    mt.spec.call_max_s = 10e-3;
    mt.spec.cpu_hz = funcs::software_throughput(TANDEM_FN_WORK);  // a work unit is one TSC tick
    mt.spec.seed = 11;
    const std::vector<sim::AppSpec> apps = sim::make_workload(mt.spec);
    // auto_static (TANDEM_AUTO_ADAPT=0: the thesis's partitioner without issue 15's corrections) runs
    // too: it shows what the corrections cost or gain on this workload.
    const char* const kMultitaskingModes[] = {"sw", "auto", "auto_static"};
    std::map<std::string, std::vector<double>> real;
    std::map<std::string, CallMix> seen;     // what each mode's calls did, over the repetitions
    std::map<std::string, double> daemon_cpu_s, makespan_sum_s;  // the engine's CPU use per mode
    {
      DaemonLauncher daemon(mt.daemon_config());
      for (unsigned r = 0; r < reps; ++r) {
        // Replicas stay loaded from one run to the next: auto and auto_static take turns following sw.
        const char* const order[] = {"sw", r % 2 == 0 ? "auto" : "auto_static", r % 2 == 0 ? "auto_static" : "auto"};
        for (const char* mode : order) {
          prepare_mode(o, mode);
          const double cpu0 = bench::process_cpu_seconds(daemon.pid());
          const double s = multitasking_run(apps, mode, daemon.socket(), seen[mode]);
          if (s < 0) throw Error(Status::device_error, fmt::format("multitasking run failed in mode {}", mode));
          daemon_cpu_s[mode] += bench::process_cpu_seconds(daemon.pid()) - cpu0;
          makespan_sum_s[mode] += s;
          real[mode].push_back(s);
        }
      }
      (void)daemon.stop();
    }
    const auto engine_cores = [&](const char* mode) {
      return makespan_sum_s[mode] > 0 ? daemon_cpu_s[mode] / makespan_sum_s[mode] : 0.0;
    };
    sim::SimConfig sc;
    sc.cpus = std::max(1u, std::thread::hardware_concurrency());
    sc.cpu_hz = mt.spec.cpu_hz;
    sc.slots = mt.slots;
    sc.speedup = mt.speedup;
    sc.da_s = mt.latency_s + 1.5e-6;  // the defaults' round trip (client/calibration.cc)
    sc.oc_s = 400e-9;
    sc.o0_s = 60e-9;
    sc.period_ns = 1'000'000;
    sc.reconfig_ns = static_cast<sim::Time>(mt.reconfig_s * 1e9);
    sc.policy = "algorithm1";
    sc.measured_cpu_rate = true;  // as libtandem's driver does
    // As libtandem decides: no split without a free core. The engine's busy cores are those the real
    // tandemd's dispatcher used in auto mode here: they count in that share and slow the applications'
    // software down (the simulated engine itself costs no CPU).
    sc.split_needs_free_core = true;
    sc.engine_cores = engine_cores("auto");
    // Three simulated repetitions per real one, each perturbed like a real machine (its own jitter
    // seed: run-queue order and time-slice phases) and normalised by its own software-only run; the
    // median of those ratios, as the real side takes the median of its repetitions. One unperturbed
    // run swung by 0.10 when the measured engine figure moved by 0.05 (reconfiguration decisions
    // flip); the median of 5 still moved between 0.35 and 0.48 from run to run, of 15 less.
    struct SimRuns {
      double norm = 0;          // the median of auto / sw over the repetitions
      sim::SimResult with, sw;  // the repetition that gave it
    };
    const auto simulate_reps = [&](sim::SimConfig v) {
      std::vector<std::pair<double, uint64_t>> ratios;
      for (unsigned k = 1; k <= 3 * reps; ++k) {
        v.jitter_seed = k;
        const double r = static_cast<double>(sim::simulate(v, apps).makespan) /
                         static_cast<double>(sim::simulate_sw_baseline(v, apps).makespan);
        ratios.emplace_back(r, k);
      }
      std::sort(ratios.begin(), ratios.end());
      SimRuns out;
      out.norm = ratios[ratios.size() / 2].first;
      v.jitter_seed = ratios[ratios.size() / 2].second;
      out.with = sim::simulate(v, apps);
      out.sw = sim::simulate_sw_baseline(v, apps);
      return out;
    };
    const SimRuns simulated = simulate_reps(sc);
    const sim::SimResult& with = simulated.with;
    const sim::SimResult& sw = simulated.sw;
    const double sim_norm = simulated.norm;
    const double real_norm = upper_median(real["auto"]) / upper_median(real["sw"]);
    const double error = std::abs(sim_norm - real_norm) / real_norm;
    // Where the worlds differ: the same simulation with one of its parts changed.
    nlohmann::ordered_json variants;
    const auto variant = [&](const char* name, const std::string& what, const sim::SimConfig& v) {
      const SimRuns r = simulate_reps(v);
      variants[name] = {{"what", what}, {"sim_normalised_makespan", r.norm},
                        {"error_against_real", std::abs(r.norm - real_norm) / real_norm},
                        {"sim_hw_unit_fraction", hw_fraction(r.with.hw_units, r.with.sw_units)}};
    };
    {
      // Linux's CFS gives 3 runnable threads on 2 CPUs slices of about 3 ms, not a fixed 10 ms.
      sim::SimConfig v = sc;
      v.time_slice_ns = 3'000'000;
      variant("time_slice_3ms", "3 ms time slices", v);
      // A job's real round trip through tandemd (a process boundary, wake-ups) is tens of microseconds.
      v = sc;
      v.da_s = 20e-6;
      variant("da_20us", "D_a 20 us", v);
      // The thesis's partitioner, which splits whatever the CPUs' load (libtandem's rule off).
      v = sc;
      v.split_needs_free_core = false;
      variant("thesis_split", "splits without a free core", v);
      // An engine that costs no CPU, as the thesis's simulator has it.
      v = sc;
      v.engine_cores = 0;
      variant("engine_idle", "an engine that costs no CPU", v);
    }
    nlohmann::ordered_json real_modes;
    for (const char* mode : kMultitaskingModes) {
      const CallMix& c = seen[mode];
      real_modes[mode] = {{"makespan_s", upper_median(real[mode])},
                          {"normalised_makespan", upper_median(real[mode]) / upper_median(real["sw"])},
                          {"hw_unit_fraction", c.hw_unit_fraction()},
                          {"sw_call_fraction", c.sw_call_fraction()},
                          {"engine_cores", engine_cores(mode)}};
    }
    summary["multitasking"] = {{"apps", mt.spec.apps},
                               {"functions", mt.spec.functions},
                               {"total_sw_s", mt.spec.total_sw_s},
                               {"slots", mt.slots},
                               {"real_sw_s", upper_median(real["sw"])},
                               {"real_auto_s", upper_median(real["auto"])},
                               {"real_normalised_makespan", real_norm},
                               {"sim_sw_s", static_cast<double>(sw.makespan) * 1e-9},
                               {"sim_auto_s", static_cast<double>(with.makespan) * 1e-9},
                               {"sim_normalised_makespan", sim_norm},
                               {"sim_reconfigurations", with.reconfigurations},
                               {"sim_hw_unit_fraction", hw_fraction(with.hw_units, with.sw_units)},
                               {"real", real_modes},
                               {"sim_variants", variants}};
    summary["sim_vs_real_makespan_error"] = error;
    summary["targets"]["sim_vs_real_makespan_error_le_0.15"] = error <= 0.15;
    fmt::print("  multitasking ({} processes, {} functions, {:.2f} s of SW work, {} slots, Algorithm 1): real "
               "auto/sw {:.3f} ({:.1f} / {:.1f} ms), simulated {:.3f} ({:.1f} / {:.1f} ms); units on the fabric "
               "{:.0f}% real, {:.0f}% simulated; the dispatcher's CPU {:.2f} cores\n",
               mt.spec.apps, mt.spec.functions, mt.spec.total_sw_s, mt.slots, real_norm, upper_median(real["auto"]) * 1e3,
               upper_median(real["sw"]) * 1e3, sim_norm, static_cast<double>(with.makespan) * 1e-6,
               static_cast<double>(sw.makespan) * 1e-6, 100 * seen["auto"].hw_unit_fraction(),
               100 * hw_fraction(with.hw_units, with.sw_units), sc.engine_cores);
    for (const char* mode : {"auto", "auto_static"}) {
      const auto& r = real_modes[mode];
      fmt::print("    real {:<11} auto/sw {:.3f}: {:.0f}% of the work units on the accelerators, {:.0f}% of the calls "
                 "wholly in software, tandemd {:.2f} cores busy\n",
                 mode, r["normalised_makespan"].get<double>(), r["hw_unit_fraction"].get<double>() * 100,
                 r["sw_call_fraction"].get<double>() * 100, r["engine_cores"].get<double>());
    }
    fmt::print("    simulated:         {:.0f}% of the work units on the accelerators; with one difference:",
               hw_fraction(with.hw_units, with.sw_units) * 100);
    for (const auto& [name, v] : variants.items()) {
      fmt::print(" {} {:.3f} (error {:.2f});", v["what"].get<std::string>(), v["sim_normalised_makespan"].get<double>(),
                 v["error_against_real"].get<double>());
    }
    fmt::print("\n");
  }
  std::filesystem::remove_all(o.out + "/xdg");
  summary["cases"] = cases;
  summary["auto_over_best_min"] = worst;
  summary["auto_over_best_min_case"] = worst_case;
  summary["auto_static_over_best_min"] = worst_static;
  // The same statistics for the oracle (the faster fixed mode of each repetition, run again): the floor
  // set by this machine's noise. A chooser that always knows the answer scores this, not 1.
  summary["oracle_over_best_min"] = worst_oracle;
  const double n_cases = static_cast<double>(std::max<size_t>(cases.size(), 1));
  summary["auto_best_over_geomean"] = std::exp(log_auto / n_cases);
  summary["oracle_best_over_geomean"] = std::exp(log_oracle / n_cases);
  summary["auto_over_hw_single_thread"] = hw_over_auto_single;
  summary["targets"]["auto_over_best_min_ge_0.95"] = worst >= 0.95;
  summary["targets"]["auto_over_hw_single_thread_ge_1.10"] = hw_over_auto_single >= 1.10;
  summary["seconds"] = static_cast<double>(now_ns() - t0) * 1e-9;
  write_file(o.out + "/cases.csv", csv.str());
  write_file(o.out + "/summary.json", summary.dump(2) + "\n");
  fmt::print("auto_over_best_min {:.3f} (target >= 0.95; worst case {}); without issue 15's corrections {:.3f}\n",
             worst, worst_case, worst_static);
  fmt::print("  the oracle (each repetition's faster fixed mode, run again) scores {:.3f}: the floor this machine's noise "
             "sets; geometric mean of best/x over the cases: auto {:.3f}, oracle {:.3f}\n",
             worst_oracle, summary["auto_best_over_geomean"].get<double>(), summary["oracle_best_over_geomean"].get<double>());
  fmt::print("auto_over_hw_single_thread {:.3f} (target >= 1.10)\n", hw_over_auto_single);
  fmt::print("sim_vs_real_makespan_error {:.3f} (target <= 0.15)\n", summary["sim_vs_real_makespan_error"].get<double>());
  fmt::print("wrote {}/cases.csv, {}/summary.json\n", o.out, o.out);
}

}  // namespace

void add_auto_experiment(CLI::App& experiment) {
  auto o = std::make_shared<AutoOptions>();
  CLI::App* cmd = experiment.add_subcommand(
      "auto", "Automatic mode against software-only and hardware-only: threads of an embedded runtime and "
              "processes of tandemd, from nothing learnt (issue 15)");
  cmd->add_option("--out", o->out, "Output folder")->capture_default_str();
  cmd->add_option("--reps", o->reps, "Repetitions per case (medians)")->check(CLI::Range(1u, 100u))->capture_default_str();
  cmd->add_flag("--quick", o->quick, "Two workloads, T = 1 and 2, P = 1, one repetition (seconds; the tests run this)");
  cmd->callback([o] { run_auto(*o); });
}

}  // namespace tandem::tools
