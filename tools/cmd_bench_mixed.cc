// `tandem bench mixed`: does a slow device delay the fast ones? One private tandemd drives emulated
// slots (a no-op accelerator) and RTL slots (Verilated sobel and matmul). No-op round trips are measured
// with the RTL slots idle, then while a second client session keeps them busy with long simulated jobs.
// With the asynchronous device layer no no-op waits behind a simulated job: its median stays within 2x
// of the idle median, and its p99 stays below the median RTL job's duration (before, the dispatcher ran
// each simulated job to the end before it looked at a ring again).
//
// On 2 cores the simulation threads compete with the dispatcher and the client for CPU; they run at a
// lower priority ([device.rtl] worker_nice), which is what keeps them from dominating (docs/results/mixed.md).
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "base/stats.hpp"
#include "client/runtime.hpp"
#include "commands.hpp"
#include "daemon_launcher.hpp"
#include "devices/device_factory.hpp"
#include "funcs/function.hpp"
#include "noop_probe.hpp"
#include "output.hpp"
#include "support/measure.hpp"

namespace tandem::tools {

namespace {

struct MixedOptions {
  size_t samples = 20'000;    // no-op round trips per phase and round
  size_t rounds = 2;          // idle, mixed, idle, mixed, ...
  size_t min_rtl_jobs = 4;    // a mixed phase lasts at least this many RTL jobs
  uint32_t sobel_width = 640, sobel_height = 480;
  uint32_t matmul_dim = 64;
  int worker_nice = 10;
  bool quick = false;
  bool json_output = false;
  std::string out;
};

// The second client: keeps the RTL slots busy, one sobel and one matmul job in flight at all times,
// and times each job from its dispatch to its completion.
class RtlLoad {
 public:
  RtlLoad(const std::string& socket, const MixedOptions& o) {
    client::RuntimeOptions ro;
    ro.socket_path = socket;
    ro.wait.mode = rt::WaitMode::block;  // it must not take CPU from what is measured
    auto rt = client::Runtime::open(ro);
    if (!rt) throw Error(rt.status(), "the RTL load's session: " + rt.message());
    rt_ = std::move(rt).value();
    const uint64_t pixels = uint64_t{o.sobel_width} * o.sobel_height;
    const uint64_t dim = o.matmul_dim;
    image_ = static_cast<uint8_t*>(rt_->alloc(pixels));
    edges_ = static_cast<uint8_t*>(rt_->alloc(pixels));
    a_ = static_cast<int16_t*>(rt_->alloc(dim * dim * sizeof(int16_t)));
    b_ = static_cast<int16_t*>(rt_->alloc(dim * dim * sizeof(int16_t)));
    c_ = static_cast<int32_t*>(rt_->alloc(dim * dim * sizeof(int32_t)));
    records_ = static_cast<tandem_completion_t*>(rt_->alloc(2 * sizeof(tandem_completion_t)));
    if (!image_ || !edges_ || !a_ || !b_ || !c_ || !records_) throw Error(Status::no_memory, "RTL load: session memory");
    std::mt19937 rng(7);
    for (uint64_t i = 0; i < pixels; ++i) image_[i] = static_cast<uint8_t>(rng());
    for (uint64_t i = 0; i < dim * dim; ++i) {
      a_[i] = static_cast<int16_t>(rng() % 512 - 256);
      b_[i] = static_cast<int16_t>(rng() % 512 - 256);
    }
    sobel_args_ = {reinterpret_cast<uintptr_t>(image_), reinterpret_cast<uintptr_t>(edges_), o.sobel_width,
                   o.sobel_height};
    sobel_units_ = pixels;
    matmul_args_ = {reinterpret_cast<uintptr_t>(a_), reinterpret_cast<uintptr_t>(b_), reinterpret_cast<uintptr_t>(c_),
                    TANDEM_MATMUL_DIMS(dim, dim, dim)};
    matmul_units_ = dim * dim * dim;
  }
  ~RtlLoad() { stop(); }

  void start() {
    thread_ = std::thread([this] { run(); });
    while (jobs_started_.load() < 2 && !failed_.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  void stop() {
    stopping_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  size_t completed() const { return completed_.load(); }
  bool failed() const { return failed_.load(); }
  const std::string& error() const { return error_; }
  std::vector<double> job_ns() const { return job_ns_; }  // after stop()
  // The results are real: the last sobel output against the software reference.
  bool sobel_matches_reference() const {
    const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_SOBEL);
    std::vector<uint8_t> want(sobel_units_);
    funcs::Call call;
    funcs::BufferList buffers;
    if (funcs::describe_call(*fn, sobel_args_, call, buffers) != Status::ok) return false;
    call.buffers[0] = image_;
    call.buffers[1] = want.data();
    (void)funcs::run_sw(*fn, call);
    return std::memcmp(want.data(), edges_, want.size()) == 0;
  }

 private:
  void run() {
    int64_t started[2] = {0, 0};
    const auto submit = [&](int which) {
      rt::reset_record(&records_[which]);
      started[which] = now_ns();
      const Status s = which == 0 ? rt_->default_queue().dispatch(TANDEM_FN_SOBEL, sobel_args_.data(), 4, sobel_units_,
                                                                  &records_[0])
                                  : rt_->default_queue().dispatch(TANDEM_FN_MATMUL, matmul_args_.data(), 4,
                                                                  matmul_units_, &records_[1]);
      jobs_started_.fetch_add(1);
      return s;
    };
    for (int which = 0; which < 2; ++which) {
      if (Status s = submit(which); s != Status::ok) return fail("dispatch: " + std::string(to_string(s)));
    }
    rt::WaitPolicy policy;
    policy.mode = rt::WaitMode::block;
    policy.timeout_ns = 120'000'000'000;
    bool live[2] = {true, true};
    while (live[0] || live[1]) {
      for (int which = 0; which < 2; ++which) {
        if (!live[which]) continue;
        if (rt::record_status(&records_[which]) == TANDEM_PENDING) continue;
        const Status s = from_wire(rt::record_status(&records_[which]));
        if (s != Status::ok) return fail(std::string(which == 0 ? "sobel" : "matmul") + " job: " + std::string(to_string(s)));
        job_ns_.push_back(static_cast<double>(now_ns() - started[which]));
        completed_.fetch_add(1);
        if (stopping_.load()) {
          live[which] = false;
        } else if (Status again = submit(which); again != Status::ok) {
          return fail("dispatch: " + std::string(to_string(again)));
        }
      }
      // Sleep on whichever is still out (both complete within the policy's timeout or the load fails).
      for (int which = 0; which < 2; ++which) {
        if (live[which] && rt::record_status(&records_[which]) == TANDEM_PENDING) {
          rt::WaitPolicy slice = policy;
          slice.timeout_ns = 200'000;
          const Status w = rt_->wait(&records_[which], slice);
          if (w != Status::ok && w != Status::timeout && w != Status::device_error) {
            return fail("wait: " + std::string(to_string(w)));
          }
          break;
        }
      }
    }
  }
  void fail(const std::string& why) {
    error_ = why;
    failed_.store(true);
  }

  std::unique_ptr<client::Runtime> rt_;
  uint8_t *image_ = nullptr, *edges_ = nullptr;
  int16_t *a_ = nullptr, *b_ = nullptr;
  int32_t* c_ = nullptr;
  tandem_completion_t* records_ = nullptr;
  std::array<uint64_t, 4> sobel_args_{}, matmul_args_{};
  uint64_t sobel_units_ = 0, matmul_units_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false}, failed_{false};
  std::atomic<size_t> completed_{0}, jobs_started_{0};
  std::vector<double> job_ns_;
  std::string error_;
};

void run_mixed(MixedOptions o) {
  if (!devices::device_kind_available("rtl")) {
    throw Error(Status::not_accelerated, "bench mixed needs the RTL device: this build has none (Verilator missing)");
  }
  if (o.quick) {
    o.samples = std::min<size_t>(o.samples, 2'000);
    o.rounds = 1;
    o.min_rtl_jobs = 2;
    o.sobel_width = 128;
    o.sobel_height = 64;
    o.matmul_dim = 24;
  }
  const bench::CpuPair cpus = bench::pick_cpu_pair();
  const std::string config = fmt::format(
      "[dispatcher]\ncpu = {}\nidle_spin_us = 200\n"
      "[device]\nkinds = [\"emu\", \"rtl\"]\n"
      "[device.emu]\nslots = 2\nresident = [\"nop\", \"nop\"]\n"
      "[device.rtl]\nslots = 2\nresident = [\"sobel\", \"matmul\"]\nworker_nice = {}\n",
      cpus.b, o.worker_nice);
  if (!o.json_output) {
    fmt::print("tandemd with 2 emulated slots (nop) and 2 RTL slots (sobel {}x{}, matmul {}^3); client on cpu {}, "
               "dispatcher on cpu {}, RTL simulation threads at nice {}\n",
               o.sobel_width, o.sobel_height, o.matmul_dim, cpus.a, cpus.b, o.worker_nice);
  }
  DaemonLauncher daemon(config);
  client::RuntimeOptions ro;
  ro.socket_path = daemon.socket();
  auto rt = client::Runtime::open(ro);
  if (!rt) throw Error(rt.status(), "cannot open a daemon session: " + rt.message());
  auto q = rt.value()->create_queue(1024);
  if (!q) throw Error(q.status(), q.message());
  auto load = std::make_unique<RtlLoad>(daemon.socket(), o);

  std::vector<double> idle, mixed, rtl_jobs;
  size_t rtl_during_mixed = 0;
  bool results_ok = true;
  for (size_t round = 0; round < o.rounds; ++round) {
    auto quiet = noop_round_trips(*rt.value(), *q.value(), rt::WaitMode::spin, o.samples, cpus.a);
    if (!quiet) throw Error(quiet.status(), "idle no-op round trips: " + quiet.message());
    idle.insert(idle.end(), quiet.value().begin(), quiet.value().end());
    load->start();  // from here on the RTL slots are always busy
    if (load->failed()) throw Error(Status::device_error, "the RTL load failed: " + load->error());
    // Measure for at least min_rtl_jobs simulated jobs, in batches of no-op round trips.
    const size_t before = load->completed();
    size_t taken = 0;
    do {
      auto busy = noop_round_trips(*rt.value(), *q.value(), rt::WaitMode::spin, o.samples, cpus.a);
      if (!busy) throw Error(busy.status(), "mixed no-op round trips: " + busy.message());
      mixed.insert(mixed.end(), busy.value().begin(), busy.value().end());
      taken += o.samples;
      if (load->failed()) throw Error(Status::device_error, "the RTL load failed: " + load->error());
    } while (load->completed() - before < o.min_rtl_jobs && taken < 200 * o.samples);
    rtl_during_mixed += load->completed() - before;
    load->stop();  // idle again for the next round's idle phase (its jobs drain first)
    if (load->failed()) throw Error(Status::device_error, "the RTL load failed: " + load->error());
    const std::vector<double> times = load->job_ns();
    rtl_jobs.insert(rtl_jobs.end(), times.begin(), times.end());
    results_ok = results_ok && load->sobel_matches_reference();
    if (round + 1 < o.rounds) load = std::make_unique<RtlLoad>(daemon.socket(), o);
  }
  daemon.stop();

  std::sort(idle.begin(), idle.end());
  std::sort(mixed.begin(), mixed.end());
  nlohmann::ordered_json j;
  j["noop_rtt_p50_ns_idle"] = median(idle);
  j["noop_rtt_p99_ns_idle"] = percentile_sorted(idle, 0.99);
  j["noop_rtt_p50_ns_mixed"] = median(mixed);
  j["noop_rtt_p99_ns_mixed"] = percentile_sorted(mixed, 0.99);
  j["noop_rtt_max_ns_mixed"] = mixed.empty() ? 0.0 : mixed.back();
  j["rtl_job_p50_ns"] = median(rtl_jobs);
  j["rtl_jobs_completed"] = rtl_jobs.size();
  j["rtl_jobs_during_mixed_phases"] = rtl_during_mixed;
  j["rtl_results_match_reference"] = results_ok;
  const double p50_ratio = j["noop_rtt_p50_ns_mixed"].get<double>() / j["noop_rtt_p50_ns_idle"].get<double>();
  const double p99_over_rtl = j["noop_rtt_p99_ns_mixed"].get<double>() / std::max(1.0, j["rtl_job_p50_ns"].get<double>());
  j["ratios"] = {{"mixed_p50_over_idle_p50", p50_ratio}, {"mixed_p99_over_rtl_job_p50", p99_over_rtl}};
  j["targets"] = {{"mixed_p50_within_2x_idle_p50", p50_ratio <= 2.0}, {"mixed_p99_below_rtl_job_p50", p99_over_rtl < 1.0}};
  j["samples_idle"] = idle.size();
  j["samples_mixed"] = mixed.size();
  j["cpus"] = {cpus.a, cpus.b};
  j["worker_nice"] = o.worker_nice;
  j["sobel"] = {o.sobel_width, o.sobel_height};
  j["matmul_dim"] = o.matmul_dim;
  if (!results_ok) throw Error(Status::device_error, "the RTL sobel result differs from the software reference");
  if (emit_json_report(j, o.out, o.json_output)) return;
  bench::TextTable t({"measurement", "median ns", "p99 ns", "note"});
  t.add_row({"no-op round trip, RTL slots idle", bench::fixed(j["noop_rtt_p50_ns_idle"].get<double>(), 0),
             bench::fixed(j["noop_rtt_p99_ns_idle"].get<double>(), 0), fmt::format("{} samples", idle.size())});
  t.add_row({"no-op round trip, RTL slots busy", bench::fixed(j["noop_rtt_p50_ns_mixed"].get<double>(), 0),
             bench::fixed(j["noop_rtt_p99_ns_mixed"].get<double>(), 0),
             fmt::format("{:.2f}x idle median (target <= 2)", p50_ratio)});
  t.add_row({"RTL job (sobel or matmul), dispatch to completion", bench::fixed(j["rtl_job_p50_ns"].get<double>(), 0), "",
             fmt::format("{} jobs; mixed p99 = {:.3f}x this median (target < 1)", rtl_jobs.size(), p99_over_rtl)});
  fmt::print("{}\n", t.render());
}

}  // namespace

void add_mixed_bench(CLI::App& bench) {
  auto o = std::make_shared<MixedOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "mixed", "No-op round trips on emulated slots while RTL slots of the same tandemd run long simulated jobs");
  cmd->add_option("--samples", o->samples, "No-op round trips per measurement batch")->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "Idle/mixed rounds")->capture_default_str();
  cmd->add_option("--min-rtl-jobs", o->min_rtl_jobs, "A mixed phase lasts at least this many RTL jobs")
      ->capture_default_str();
  cmd->add_option("--sobel-width", o->sobel_width, "Sobel image width")->check(CLI::Range(3u, 4096u))->capture_default_str();
  cmd->add_option("--sobel-height", o->sobel_height, "Sobel image height")->check(CLI::Range(3u, 4096u))->capture_default_str();
  cmd->add_option("--matmul", o->matmul_dim, "Matmul dimension (m = k = n)")->check(CLI::Range(1u, 512u))->capture_default_str();
  cmd->add_option("--worker-nice", o->worker_nice, "Nice value of the RTL simulation threads")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  cmd->add_flag("--quick", o->quick, "Small jobs and few samples: seconds (the test suite runs this; shape only)");
  cmd->add_flag("--json", o->json_output, "Print JSON instead of a table");
  cmd->add_option("--out", o->out, "Also write the JSON to this file")->check(writable_file());
  cmd->callback([o] { run_mixed(*o); });
}

}  // namespace tandem::tools
