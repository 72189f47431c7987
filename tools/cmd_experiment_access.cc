// `tandem experiment access-methods`: the seeds' comparisons of data access methods, on this machine,
// through a private tandemd (a real process boundary: the client's heap is not the engine's memory).
//
//   overhead    HybridOS Fig 5: per-call time against transfer size for every method, the accelerator's
//               own time set to ~0 (accumulate at 10^15 B/s), one job per call; crossovers between
//               methods; the automatic choice against every fixed method at every size.
//   setup       HybridOS Table 1: what setting up each method costs, first and average case.
//   breakdown   HybridOS Fig 4: where a call's time goes, per method (host copies, the daemon's page
//               gathering, the device's modelled transfer, the runtime's own overhead).
//   sobel       seed 001 Table 6: Sobel latency per frame size per method (32x32, QVGA, VGA, HD).
//   scaling     seed 001 Figs 12-14: Sobel frames/s as client threads grow, per frame size and method.
//   energy      seed 001 Fig 15: energy per frame per method (device model + CPU time x power, or RAPL).
//
// Writes overhead.csv, setup.csv, breakdown.csv, sobel.csv, scaling.csv, energy.csv, summary.json and
// access_methods.png (python/plot_access.py). The device side is the emulated fabric's model
// ([device.emu] link, scatter-gather and local-memory figures); the host side is measured.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "base/stats.hpp"
#include "calibration_probe.hpp"
#include "rt/host_access.hpp"
#include "client/runtime.hpp"
#include "commands.hpp"
#include "config/config.hpp"
#include "daemon_launcher.hpp"
#include "output.hpp"
#include "plot.hpp"
#include "status_report.hpp"
#include "rt/shm.hpp"
#include "support/measure.hpp"

namespace tandem::tools {

namespace {

using client::AccessChoice;
using nlohmann::json;

struct AccessOptions {
  std::string out = "access-results";
  bool quick = false;
  bool no_plot = false;
};

// The methods the overhead sweep compares. zero_copy uses session memory; copy, sg and auto the heap;
// local a resident device buffer; local_fill one written and read back around every call (AGI).
const std::vector<std::string> kMethods = {"zero_copy", "copy", "sg", "local", "local_fill", "auto"};

const char* kAccessConfig =
    "[device.emu]\nslots = 4\nresident = [\"accumulate\", \"sobel\", \"sobel\", \"sobel\"]\nlocal_memory_mib = 256\n"
    "[functions.accumulate]\nthroughput = 1e15\n";

double cpu_seconds_self() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Measured CPU energy where the machine exposes RAPL (package 0), joules; -1 where it does not.
double rapl_joules() {
  std::ifstream in("/sys/class/powercap/intel-rapl:0/energy_uj");
  double uj = -1;
  if (!(in >> uj)) return -1;
  return uj * 1e-6;
}

class AccessExperiment {
 public:
  AccessExperiment(const AccessOptions& o) : o_(o), daemon_(kAccessConfig) {
    client::RuntimeOptions ro;
    ro.socket_path = daemon_.socket();
    ro.mode = client::Mode::hw;
    ro.partition.jobs_per_round = 1;  // one job per call: the transaction of HybridOS Fig 5
    // The host costs as calibrate measures them, the daemon's hand-off included.
    client::Calibration cal;
    cal.device = "emu";
    model::HostAccessCosts h = rt::host_access_costs();
    (void)measure_remote_gather(o.quick, h);
    cal.access = h;
    ro.calibration = cal;
    auto rt = client::Runtime::open(ro);
    if (!rt) throw Error(rt.status(), "cannot open a session: " + rt.message());
    rt_ = std::move(rt).value();
    host_ = h;
    config_ = config::parse_config(kAccessConfig, "experiment");
  }

  // ---- overhead (Fig 5) and the automatic choice ----
  void overhead(json& summary) {
    const std::vector<uint64_t> sizes = o_.quick ? std::vector<uint64_t>{16, 1024, 65536, 4 << 20}
                                                 : std::vector<uint64_t>{16, 64, 256, 1024, 4096, 16384, 65536,
                                                                         262144, 1 << 20, 4 << 20, 16 << 20};
    const size_t reps = o_.quick ? 15 : 201;
    std::string csv = "method,bytes,median_ns,p10_ns,p90_ns,samples\n";
    std::map<std::string, std::vector<double>> medians;
    for (uint64_t bytes : sizes) {
      const uint64_t count = bytes / 4;
      std::vector<int32_t> heap(count, 1);
      auto* session = static_cast<int32_t*>(rt_->alloc(bytes));
      std::fill(session, session + count, 1);
      auto local = rt_->alloc_local(bytes);
      if (!local) throw Error(local.status(), "device buffer: " + local.message());
      (void)rt_->copy_local(local.value(), reinterpret_cast<uintptr_t>(heap.data()), bytes);
      std::map<std::string, std::vector<double>> samples;
      for (size_t r = 0; r < reps; ++r) {
        for (const std::string& m : kMethods) {  // interleaved: drift hits every method alike
          samples[m].push_back(call_ns(m, heap.data(), session, local.value(), count));
        }
      }
      for (const std::string& m : kMethods) {
        std::vector<double>& v = samples[m];
        std::sort(v.begin(), v.end());
        const double med = median(v);
        medians[m].push_back(med);
        csv += fmt::format("{},{},{:.1f},{:.1f},{:.1f},{}\n", m, bytes, med, percentile_sorted(v, 0.1),
                           percentile_sorted(v, 0.9), v.size());
      }
      rt_->free(session);
      (void)rt_->free_local(local.value());
      progress(fmt::format("overhead: {} B done", bytes));
    }
    write_file(o_.out + "/overhead.csv", csv);
    // The automatic choice on the heap against every method that reaches the heap.
    double worst = 0;
    json per_size = json::array();
    for (size_t i = 0; i < sizes.size(); ++i) {
      const double best = std::min(medians["copy"][i], medians["sg"][i]);
      const double ratio = medians["auto"][i] / best;
      worst = std::max(worst, ratio);
      per_size.push_back({{"bytes", sizes[i]}, {"auto_over_best_fixed", ratio}});
    }
    summary["auto_worst_ratio_to_best_fixed"] = worst;
    summary["auto_over_best_fixed_per_size"] = per_size;
    summary["targets"]["auto_within_5pct_of_best_fixed"] = worst <= 1.05;
    // Crossovers: where the faster of two methods changes, geometric mean of the two sizes around it.
    json crossovers;
    const std::vector<std::pair<std::string, std::string>> pairs = {
        {"zero_copy", "copy"}, {"zero_copy", "sg"}, {"copy", "sg"}, {"zero_copy", "local_fill"}, {"copy", "local_fill"},
        {"sg", "local_fill"}};
    for (const auto& [a, b] : pairs) {
      json found = nullptr;
      for (size_t i = 1; i < sizes.size(); ++i) {
        const bool before = medians[a][i - 1] < medians[b][i - 1], after = medians[a][i] < medians[b][i];
        if (before != after) {
          found = std::sqrt(static_cast<double>(sizes[i - 1]) * static_cast<double>(sizes[i]));
          break;
        }
      }
      crossovers[a + "_vs_" + b] = found;
    }
    summary["crossover_bytes"] = crossovers;
    summary["overhead_sizes"] = sizes;
  }

  // ---- setup costs (HybridOS Table 1) ----
  void setup(json& summary) {
    std::string csv = "operation,first_us,average_us,samples\n";
    const size_t n = o_.quick ? 20 : 200;
    const auto row = [&](const std::string& op, const std::vector<double>& us) {
      std::vector<double> rest(us.begin() + 1, us.end());
      csv += fmt::format("{},{:.2f},{:.2f},{}\n", op, us.front(), median(rest), us.size());
      summary["setup_us"][op] = {{"first", us.front()}, {"average", median(rest)}};
    };
    // A fresh session: the first allocation maps a new memfd chunk and registers it with the daemon.
    client::RuntimeOptions ro;
    ro.socket_path = daemon_.socket();
    std::vector<double> open_us, alloc_us, free_us, register_us, unregister_us, local_us, local_free_us;
    for (size_t i = 0; i < std::max<size_t>(3, n / 20); ++i) {
      const int64_t t0 = now_ns();
      auto fresh = client::Runtime::open(ro);
      open_us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
      if (!fresh) throw Error(fresh.status(), fresh.message());
    }
    row("open_session", open_us);
    for (size_t i = 0; i < n; ++i) {  // 8 MiB each: past the 4 MiB chunk, so each maps and registers memory
      int64_t t0 = now_ns();
      void* p = rt_->alloc(8 << 20);
      alloc_us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
      t0 = now_ns();
      rt_->free(p);
      free_us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
    }
    row("tandem_alloc_8MiB", alloc_us);
    row("tandem_free_8MiB", free_us);
    for (size_t i = 0; i < n; ++i) {  // the user's own memfd mapping, registered and unregistered
      auto fd = rt::create_memfd("experiment", 1 << 20, false);
      auto mapping = rt::map_fd(fd.value().get(), 1 << 20, 0, true);
      int64_t t0 = now_ns();
      const Status s = rt_->register_memory(mapping.value()->address, 1 << 20, fd.value().get(), 0);
      register_us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
      if (s != Status::ok) throw Error(s, "register");
      t0 = now_ns();
      (void)rt_->unregister_memory(mapping.value()->address);
      unregister_us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
    }
    row("tandem_register_1MiB", register_us);
    row("tandem_unregister_1MiB", unregister_us);
    for (size_t i = 0; i < n; ++i) {
      int64_t t0 = now_ns();
      auto b = rt_->alloc_local(1 << 20);
      local_us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
      t0 = now_ns();
      (void)rt_->free_local(b.value());
      local_free_us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
    }
    row("tandem_buffer_alloc_1MiB", local_us);
    row("tandem_buffer_free_1MiB", local_free_us);
    write_file(o_.out + "/setup.csv", csv);
    progress("setup costs done");
  }

  // ---- breakdown (HybridOS Fig 4): measured total, modelled and measured parts ----
  void breakdown(json& summary) {
    std::string csv = "method,bytes,total_us,host_copy_us,gather_us,device_us,runtime_us\n";
    const model::TransferModel& t = rt_->devices().front().memory.transfer;
    for (uint64_t bytes : {uint64_t{4096}, uint64_t{262144}, uint64_t{4} << 20}) {
      const uint64_t count = bytes / 4;
      std::vector<int32_t> heap(count, 1);
      auto* session = static_cast<int32_t*>(rt_->alloc(bytes));
      std::fill(session, session + count, 1);
      auto local = rt_->alloc_local(bytes);
      (void)rt_->copy_local(local.value(), reinterpret_cast<uintptr_t>(heap.data()), bytes);
      const uint32_t pages = static_cast<uint32_t>((bytes + 4095) / 4096);
      for (const std::string& m : {std::string("zero_copy"), std::string("copy"), std::string("sg"), std::string("local")}) {
        std::vector<double> v;
        for (int r = 0; r < (o_.quick ? 11 : 101); ++r) v.push_back(call_ns(m, heap.data(), session, local.value(), count));
        const double total = median(v) * 1e-3;
        const uint8_t method = m == "zero_copy" ? TANDEM_ACCESS_ZERO_COPY
                               : m == "copy"    ? TANDEM_ACCESS_COPY
                               : m == "sg"      ? TANDEM_ACCESS_SCATTER_GATHER
                                                : TANDEM_ACCESS_DEVICE_LOCAL;
        const double host_copy = method == TANDEM_ACCESS_COPY ? static_cast<double>(bytes) / host_.memcpy_bps * 1e6 : 0;
        const double gather = method == TANDEM_ACCESS_SCATTER_GATHER
                                  ? (host_.handoff_s + static_cast<double>(bytes) / host_.gather_bps + pages * host_.gather_page_s) * 1e6
                                  : 0;
        const double device = t.job_s(method, method == TANDEM_ACCESS_DEVICE_LOCAL ? 0 : bytes,
                                      method == TANDEM_ACCESS_DEVICE_LOCAL ? bytes : 0, pages, 0) * 1e6;
        const double runtime = std::max(0.0, total - host_copy - gather - device);
        csv += fmt::format("{},{},{:.2f},{:.2f},{:.2f},{:.2f},{:.2f}\n", m, bytes, total, host_copy, gather, device, runtime);
      }
      rt_->free(session);
      (void)rt_->free_local(local.value());
    }
    write_file(o_.out + "/breakdown.csv", csv);
    summary["breakdown_file"] = "breakdown.csv";
    progress("breakdown done");
  }

  // ---- Sobel latency per frame size and method (seed 001 Table 6) ----
  void sobel(json& summary) {
    std::string csv = "method,frame,width,height,median_us,p90_us\n";
    for (const auto& [name, w, h] : frames()) {
      Frame f(*rt_, w, h);
      for (const std::string& m : {std::string("zero_copy"), std::string("copy"), std::string("sg"), std::string("local")}) {
        std::vector<double> v;
        for (int r = 0; r < (o_.quick ? 5 : 51); ++r) v.push_back(f.run(*rt_, m) * 1e-3);
        std::sort(v.begin(), v.end());
        csv += fmt::format("{},{},{},{},{:.1f},{:.1f}\n", m, name, w, h, median(v), percentile_sorted(v, 0.9));
        summary["sobel_us"][name][m] = median(v);
      }
    }
    write_file(o_.out + "/sobel.csv", csv);
    progress("sobel latency done");
  }

  // ---- frames/s as threads grow (seed 001 Figs 12-14) and energy per frame (Fig 15) ----
  void scaling(json& summary) {
    std::string csv = "method,frame,threads,frames_per_s,normalised\n";
    std::string energy_csv = "method,frame,frames,device_j,cpu_j,cpu_source,total_j_per_frame\n";
    const std::vector<unsigned> threads = o_.quick ? std::vector<unsigned>{1, 2} : std::vector<unsigned>{1, 2, 4, 8};
    const double seconds = o_.quick ? 0.25 : 1.5;
    for (const auto& [name, w, h] : frames()) {
      if (name == "32x32") continue;  // Figs 12-14 use QVGA, VGA and HD
      for (const std::string& m : {std::string("zero_copy"), std::string("copy"), std::string("sg"), std::string("local")}) {
        double one = 0;
        for (unsigned n : threads) {
          const json before = fetch_status(daemon_.socket());
          const double cpu0 = cpu_seconds_self() + bench::process_cpu_seconds(daemon_.pid());
          const double rapl0 = rapl_joules();
          const uint64_t frames_done = run_threads(m, w, h, n, seconds);
          const double rapl1 = rapl_joules();
          const double cpu1 = cpu_seconds_self() + bench::process_cpu_seconds(daemon_.pid());
          const json after = fetch_status(daemon_.socket());
          const double rate = static_cast<double>(frames_done) / seconds;
          if (n == 1) one = rate;
          csv += fmt::format("{},{},{},{:.1f},{:.3f}\n", m, name, n, rate, one > 0 ? rate / one : 0);
          if (n == threads.front()) {
            const double device_j = after.value("energy_j", 0.0) - before.value("energy_j", 0.0);
            const bool rapl = rapl0 >= 0 && rapl1 >= rapl0;
            const double cpu_j = rapl ? rapl1 - rapl0 : config_.energy.cpu_j(cpu1 - cpu0);
            const double per_frame = frames_done > 0 ? (device_j + cpu_j) / static_cast<double>(frames_done) : 0;
            energy_csv += fmt::format("{},{},{},{:.6f},{:.6f},{},{:.6f}\n", m, name, frames_done, device_j, cpu_j,
                                      rapl ? "rapl" : "model", per_frame);
            summary["energy_j_per_frame"][name][m] = per_frame;
          }
        }
        summary["frames_per_s_1_thread"][name][m] = one;
      }
      progress(fmt::format("scaling and energy: {} done", name));
    }
    write_file(o_.out + "/scaling.csv", csv);
    write_file(o_.out + "/energy.csv", energy_csv);
  }

 private:
  struct Frame {
    Frame(client::Runtime& rt, uint32_t width, uint32_t height) : w(width), h(height), heap_in(size_t{w} * h), heap_out(size_t{w} * h) {
      for (size_t i = 0; i < heap_in.size(); ++i) heap_in[i] = static_cast<uint8_t>(i * 13 + i / w);
      session_in = static_cast<uint8_t*>(rt.alloc(heap_in.size()));
      session_out = static_cast<uint8_t*>(rt.alloc(heap_in.size()));
      std::memcpy(session_in, heap_in.data(), heap_in.size());
      local_in = rt.alloc_local(heap_in.size()).value();
      local_out = rt.alloc_local(heap_in.size()).value();
      (void)rt.copy_local(local_in, reinterpret_cast<uintptr_t>(heap_in.data()), heap_in.size());
    }
    // One frame with method m, ns.
    double run(client::Runtime& rt, const std::string& m) {
      uint64_t in = reinterpret_cast<uintptr_t>(heap_in.data()), out = reinterpret_cast<uintptr_t>(heap_out.data());
      AccessChoice choice = AccessChoice::automatic;
      if (m == "zero_copy") {
        in = reinterpret_cast<uintptr_t>(session_in), out = reinterpret_cast<uintptr_t>(session_out);
        choice = AccessChoice::zero_copy;
      } else if (m == "local") {
        in = local_in, out = local_out;
        choice = AccessChoice::device_local;
      } else if (m == "copy") {
        choice = AccessChoice::copy;
      } else if (m == "sg") {
        choice = AccessChoice::scatter_gather;
      }
      const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_SOBEL);
      const uint64_t args[4] = {in, out, w, h};
      funcs::Call call;
      funcs::BufferList buffers;
      if (funcs::describe_call(*fn, args, call, buffers) != Status::ok) return -1;
      for (uint32_t i = 0; i < buffers.count; ++i) call.buffers[i] = reinterpret_cast<void*>(call.args[buffers.items[i].arg]);
      rt.set_access_choice(choice);
      int64_t value = 0;
      const int64_t t0 = now_ns();
      const Status s = rt.run(*fn, call, value);
      const int64_t t1 = now_ns();
      if (s != Status::ok) throw Error(s, "sobel frame with method " + m);
      return static_cast<double>(t1 - t0);
    }
    uint32_t w, h;
    std::vector<uint8_t> heap_in, heap_out;
    uint8_t *session_in = nullptr, *session_out = nullptr;
    uint64_t local_in = 0, local_out = 0;
  };

  static std::vector<std::tuple<std::string, uint32_t, uint32_t>> frames() {
    return {{"32x32", 32, 32}, {"QVGA", 320, 240}, {"VGA", 640, 480}, {"HD", 1280, 720}};
  }

  // One accumulate call of `count` values with method m; ns.
  double call_ns(const std::string& m, const int32_t* heap, const int32_t* session, uint64_t local, uint64_t count) {
    const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_ACCUMULATE);
    uint64_t address = reinterpret_cast<uintptr_t>(heap);
    AccessChoice choice = AccessChoice::automatic;
    if (m == "zero_copy") address = reinterpret_cast<uintptr_t>(session), choice = AccessChoice::zero_copy;
    if (m == "copy") choice = AccessChoice::copy;
    if (m == "sg") choice = AccessChoice::scatter_gather;
    if (m == "local" || m == "local_fill") address = local, choice = AccessChoice::device_local;
    const uint64_t args[2] = {address, count};
    funcs::Call call;
    funcs::BufferList buffers;
    if (funcs::describe_call(*fn, args, call, buffers) != Status::ok) return -1;
    call.buffers[0] = reinterpret_cast<void*>(address);
    rt_->set_access_choice(choice);
    int64_t value = 0;
    const int64_t t0 = now_ns();
    // AGI: the data goes to the device through a copy engine before the job (and a result back after).
    if (m == "local_fill") (void)rt_->copy_local(local, reinterpret_cast<uintptr_t>(heap), count * 4);
    const Status s = rt_->run(*fn, call, value);
    const int64_t t1 = now_ns();
    if (s != Status::ok) throw Error(s, "accumulate with method " + m);
    return static_cast<double>(t1 - t0);
  }

  // `threads` client threads of this process each running Sobel frames for `seconds`: frames done.
  uint64_t run_threads(const std::string& m, uint32_t w, uint32_t h, unsigned threads, double seconds) {
    std::atomic<uint64_t> frames{0};
    std::atomic<bool> stop{false};
    std::vector<std::unique_ptr<Frame>> per_thread;
    for (unsigned i = 0; i < threads; ++i) per_thread.push_back(std::make_unique<Frame>(*rt_, w, h));
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < threads; ++i) {
      pool.emplace_back([&, i] {
        while (!stop.load(std::memory_order_relaxed)) {
          per_thread[i]->run(*rt_, m);
          frames.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop = true;
    for (auto& t : pool) t.join();
    for (auto& f : per_thread) {
      rt_->free(f->session_in);
      rt_->free(f->session_out);
      (void)rt_->free_local(f->local_in);
      (void)rt_->free_local(f->local_out);
    }
    return frames.load();
  }

  void progress(const std::string& line) const { fmt::print("  {}\n", line); }

  AccessOptions o_;
  DaemonLauncher daemon_;
  std::unique_ptr<client::Runtime> rt_;
  model::HostAccessCosts host_;
  config::Config config_;
};

void run_access(const AccessOptions& o) {
  const OutputDir out_dir(o.out);  // removed again if the run fails before writing to it
  const int64_t t0 = now_ns();
  AccessExperiment e(o);
  json summary;
  summary["command"] = std::string("tandem experiment access-methods") + (o.quick ? " --quick" : "") + " --out " + o.out;
  fmt::print("access methods through a private tandemd ({})\n", o.quick ? "quick" : "full");
  e.overhead(summary);
  e.setup(summary);
  e.breakdown(summary);
  e.sobel(summary);
  e.scaling(summary);
  summary["seconds"] = static_cast<double>(now_ns() - t0) * 1e-9;
  summary["cpus"] = std::thread::hardware_concurrency();
  write_file(o.out + "/summary.json", summary.dump(2) + "\n");
  fmt::print("auto_worst_ratio_to_best_fixed {:.3f} (target <= 1.05)\n",
             summary["auto_worst_ratio_to_best_fixed"].get<double>());
  fmt::print("crossover_bytes {}\n", summary["crossover_bytes"].dump());
  fmt::print("wrote {}/overhead.csv, setup.csv, breakdown.csv, sobel.csv, scaling.csv, energy.csv, summary.json\n", o.out);
  if (!o.no_plot && run_plot("plot_access.py", {o.out})) fmt::print("wrote {}/access_methods.png\n", o.out);
}

}  // namespace

void add_access_experiment(CLI::App& experiment) {
  auto o = std::make_shared<AccessOptions>();
  CLI::App* cmd = experiment.add_subcommand(
      "access-methods", "Data access methods (copy, zero-copy, scatter-gather, device-local) through tandemd: "
                        "HybridOS Fig 4/5 and Table 1, seed 001 Table 6 and Figs 12-15, the automatic choice");
  cmd->add_option("--out", o->out, "Output folder")->capture_default_str();
  cmd->add_flag("--quick", o->quick, "Few sizes and samples (seconds; the tests run this)");
  cmd->add_flag("--no-plot", o->no_plot, "Write the CSV and JSON only");
  cmd->callback([o] { run_access(*o); });
}

}  // namespace tandem::tools
