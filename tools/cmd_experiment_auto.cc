// `tandem experiment auto`: does the automatic mode ever lose (issue 15)? For T threads of one embedded
// runtime and P client processes of a private tandemd, on the demo's workload (accumulate 256 KiB +
// work 200k cycles per step), on work calls alone and on accumulate at sizes around N_L, the makespan
// of sw, hw and auto (median of the repetitions), every auto run starting from nothing learnt and no
// calibration file (a private, emptied XDG_CONFIG_HOME). auto_static is the automatic mode without
// issue 15's corrections ($TANDEM_AUTO_ADAPT=0), measured in the same run for comparison.
//
// Then thesis 5.5's dynamic multitasking, scaled down (processes calling random work functions of random
// sizes, Algorithm 1 reconfiguring 4 slots), on a private tandemd and in the simulator configured alike.
//
// Writes cases.csv and summary.json: auto_over_best_min (the worst over the cases of best(sw, hw) / auto,
// target >= 0.95), auto_over_hw_single_thread (hw / auto for T = 1 on the work calls, target >= 1.10) and
// sim_vs_real_makespan_error (|simulated - real| / real of the auto/sw makespan ratio, target <= 0.15).
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
#include "commands.hpp"
#include "daemon_launcher.hpp"
#include "funcs/throughput.hpp"
#include "output.hpp"
#include "sim/simulator.hpp"
#include "sim/workload.hpp"
#include "tandem/tandem.h"

namespace tandem::tools {

namespace {

using nlohmann::json;

struct AutoOptions {
  std::string out = "auto-results";
  bool quick = false;
  unsigned reps = 5;
};

struct Workload {
  std::string name;
  uint32_t elements = 0;    // int32 per accumulate call (0: none)
  uint64_t work_units = 0;  // cycles per work call (0: none)
  unsigned calls = 0;       // steps per thread
};

const char* kModes[] = {"sw", "hw", "auto", "auto_static"};

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

double embedded_run(const Workload& w, unsigned threads, const std::string& mode) {
  tandem_options_t opts;
  tandem_options_init(&opts);
  opts.embedded = 1;
  opts.mode = mode_of(mode);
  tandem_runtime_t* rt = nullptr;
  if (tandem_open(&opts, &rt) != TANDEM_OK) throw Error(Status::io_error, std::string("tandem_open: ") + tandem_last_error());
  Inputs in;
  fill(in, w, threads, nullptr);
  const double s = run_threads(rt, w, threads, in.data, in.expected);
  tandem_close(rt);
  return s;
}

// P client processes, one thread each, of the daemon at `socket`; the makespan from the first start
// to the last finish (the processes start together on a shared flag).
double daemon_run(const Workload& w, unsigned processes, const std::string& mode, const std::string& socket) {
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) throw Error(Status::no_memory, "mmap");
  auto* words = static_cast<int64_t*>(page);  // zeroed: [0] processes ready, [1] go
  std::atomic_ref<int64_t> shared[2] = {std::atomic_ref<int64_t>(words[0]), std::atomic_ref<int64_t>(words[1])};
  std::vector<pid_t> children;
  for (unsigned p = 0; p < processes; ++p) {
    const pid_t pid = fork();
    if (pid == 0) {
      tandem_options_t opts;
      tandem_options_init(&opts);
      opts.socket_path = socket.c_str();
      opts.mode = mode_of(mode);
      tandem_runtime_t* rt = nullptr;
      if (tandem_open(&opts, &rt) != TANDEM_OK) _exit(2);
      Inputs in;
      fill(in, w, 1, rt);
      shared[0].fetch_add(1);
      while (shared[1].load() == 0) std::this_thread::yield();
      const double s = run_threads(rt, w, 1, in.data, in.expected);
      for (int32_t* d : in.data) tandem_free(rt, d);
      tandem_close(rt);
      _exit(s >= 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  while (shared[0].load() < static_cast<int64_t>(processes)) std::this_thread::yield();
  const int64_t t0 = now_ns();
  shared[1].store(1);
  bool ok = true;
  for (pid_t c : children) {
    int status = 0;
    waitpid(c, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  const double s = static_cast<double>(now_ns() - t0) * 1e-9;
  munmap(page, 4096);
  return ok ? s : -1;
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
double multitasking_run(const std::vector<sim::AppSpec>& apps, const std::string& mode, const std::string& socket) {
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) throw Error(Status::no_memory, "mmap");
  auto* words = static_cast<int64_t*>(page);
  std::atomic_ref<int64_t> ready(words[0]), go(words[1]);
  std::vector<pid_t> children;
  for (const sim::AppSpec& app : apps) {
    const pid_t pid = fork();
    if (pid == 0) {
      tandem_options_t opts;
      tandem_options_init(&opts);
      opts.socket_path = socket.c_str();
      opts.mode = mode_of(mode);
      tandem_runtime_t* rt = nullptr;
      if (tandem_open(&opts, &rt) != TANDEM_OK) _exit(2);
      ready.fetch_add(1);
      while (go.load() == 0) std::this_thread::yield();
      int rc = 0;
      for (const sim::LibraryCall& c : app.calls) {
        if (tandem_work_fn(rt, c.function, c.units) != TANDEM_OK) rc = 1;
      }
      tandem_close(rt);
      _exit(rc);
    }
    children.push_back(pid);
  }
  while (ready.load() < static_cast<int64_t>(apps.size())) std::this_thread::yield();
  const int64_t t0 = now_ns();
  go.store(1);
  bool ok = true;
  for (pid_t c : children) {
    int status = 0;
    waitpid(c, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  const double s = static_cast<double>(now_ns() - t0) * 1e-9;
  munmap(page, 4096);
  return ok ? s : -1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void run_auto(const AutoOptions& o) {
  std::filesystem::create_directories(o.out);
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
  csv << "runtime,parallelism,workload,sw_s,hw_s,auto_s,auto_static_s,best_over_auto,best_over_auto_static\n";
  double worst = 1e300, worst_static = 1e300;
  std::string worst_case;
  json cases = json::array();
  const auto record = [&](const std::string& runtime, unsigned n, const Workload& w,
                          const std::map<std::string, double>& m) {
    const double best = std::min(m.at("sw"), m.at("hw"));
    const double ratio = best / m.at("auto");
    const double ratio_static = best / m.at("auto_static");
    if (ratio < worst) {
      worst = ratio;
      worst_case = fmt::format("{} {}={} {}", runtime, runtime == "embedded" ? "T" : "P", n, w.name);
    }
    worst_static = std::min(worst_static, ratio_static);
    csv << fmt::format("{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.4f},{:.4f}\n", runtime, n, w.name, m.at("sw"),
                       m.at("hw"), m.at("auto"), m.at("auto_static"), ratio, ratio_static);
    cases.push_back({{"runtime", runtime}, {"parallelism", n}, {"workload", w.name}, {"sw_s", m.at("sw")},
                     {"hw_s", m.at("hw")}, {"auto_s", m.at("auto")}, {"auto_static_s", m.at("auto_static")},
                     {"best_over_auto", ratio}});
    fmt::print("  {:<8} {}={:<2} {:<18} sw {:8.2f} ms  hw {:8.2f} ms  auto {:8.2f} ms  auto_static {:8.2f} ms  "
               "best/auto {:.3f}\n",
               runtime, runtime == "embedded" ? "T" : "P", n, w.name, m.at("sw") * 1e3, m.at("hw") * 1e3,
               m.at("auto") * 1e3, m.at("auto_static") * 1e3, ratio);
  };
  // Modes interleave within a repetition so that a burst of load from elsewhere hits all of them.
  const auto measure = [&](const std::function<double(const std::string&)>& run) {
    std::map<std::string, std::vector<double>> samples;
    for (unsigned r = 0; r < reps; ++r) {
      for (const char* mode : kModes) {
        prepare_mode(o, mode);
        const double s = run(mode);
        if (s < 0) throw Error(Status::device_error, fmt::format("wrong results in mode {}", mode));
        samples[mode].push_back(s);
      }
    }
    std::map<std::string, double> m;
    for (auto& [mode, v] : samples) m[mode] = median(v);
    return m;
  };
  double hw_over_auto_single = 0;
  fmt::print("tandem experiment auto: {} repetitions, medians; {} CPUs\n", reps, std::thread::hardware_concurrency());
  for (const Workload& w : workloads) {
    for (unsigned t : thread_counts) {
      const auto m = measure([&](const std::string& mode) { return embedded_run(w, t, mode); });
      record("embedded", t, w, m);
      if (t == 1 && w.name == "work") hw_over_auto_single = m.at("hw") / m.at("auto");
    }
  }
  {
    DaemonLauncher daemon("");
    for (const Workload& w : workloads) {
      for (unsigned p : process_counts) {
        const auto m = measure([&](const std::string& mode) { return daemon_run(w, p, mode, daemon.socket()); });
        record("tandemd", p, w, m);
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
    std::map<std::string, std::vector<double>> real;
    {
      DaemonLauncher daemon(mt.daemon_config());
      for (unsigned r = 0; r < reps; ++r) {
        for (const char* mode : {"sw", "auto"}) {
          prepare_mode(o, mode);
          const double s = multitasking_run(apps, mode, daemon.socket());
          if (s < 0) throw Error(Status::device_error, fmt::format("multitasking run failed in mode {}", mode));
          real[mode].push_back(s);
        }
      }
      (void)daemon.stop();
    }
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
    const sim::SimResult with = sim::simulate(sc, apps);
    const sim::SimResult sw = sim::simulate_sw_baseline(sc, apps);
    const double sim_norm = static_cast<double>(with.makespan) / static_cast<double>(sw.makespan);
    const double real_norm = median(real["auto"]) / median(real["sw"]);
    const double error = std::abs(sim_norm - real_norm) / real_norm;
    summary["multitasking"] = {{"apps", mt.spec.apps},
                               {"functions", mt.spec.functions},
                               {"total_sw_s", mt.spec.total_sw_s},
                               {"slots", mt.slots},
                               {"real_sw_s", median(real["sw"])},
                               {"real_auto_s", median(real["auto"])},
                               {"real_normalised_makespan", real_norm},
                               {"sim_sw_s", static_cast<double>(sw.makespan) * 1e-9},
                               {"sim_auto_s", static_cast<double>(with.makespan) * 1e-9},
                               {"sim_normalised_makespan", sim_norm},
                               {"sim_reconfigurations", with.reconfigurations}};
    summary["sim_vs_real_makespan_error"] = error;
    summary["targets"]["sim_vs_real_makespan_error_le_0.15"] = error <= 0.15;
    fmt::print("  multitasking ({} processes, {} functions, {:.2f} s of SW work, {} slots, Algorithm 1): real "
               "auto/sw {:.3f} ({:.1f} / {:.1f} ms), simulated {:.3f} ({:.1f} / {:.1f} ms)\n",
               mt.spec.apps, mt.spec.functions, mt.spec.total_sw_s, mt.slots, real_norm, median(real["auto"]) * 1e3,
               median(real["sw"]) * 1e3, sim_norm, static_cast<double>(with.makespan) * 1e-6,
               static_cast<double>(sw.makespan) * 1e-6);
  }
  std::filesystem::remove_all(o.out + "/xdg");
  summary["cases"] = cases;
  summary["auto_over_best_min"] = worst;
  summary["auto_over_best_min_case"] = worst_case;
  summary["auto_static_over_best_min"] = worst_static;
  summary["auto_over_hw_single_thread"] = hw_over_auto_single;
  summary["targets"]["auto_over_best_min_ge_0.95"] = worst >= 0.95;
  summary["targets"]["auto_over_hw_single_thread_ge_1.10"] = hw_over_auto_single >= 1.10;
  summary["seconds"] = static_cast<double>(now_ns() - t0) * 1e-9;
  write_file(o.out + "/cases.csv", csv.str());
  write_file(o.out + "/summary.json", summary.dump(2) + "\n");
  fmt::print("auto_over_best_min {:.3f} (target >= 0.95; worst case {}); without issue 15's corrections {:.3f}\n",
             worst, worst_case, worst_static);
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
