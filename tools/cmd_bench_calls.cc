// `tandem bench calls`: what a high-level call costs where the hardware does not pay. Small calls of
// tandem_accumulate (64 B and 1 KiB, below the default fabric's N_L of about 12 KiB, and 16 KiB just
// above it, where auto decides with Eq 5.6 and keeps it in software) run in software in every mode (the
// share of auto's calls that did is reported); what they pay beyond the function itself is tandem's call
// path: the policy's decision, the statistics, the tracing check. Measured against the software
// function called directly, in one run, modes interleaved: `sw`, `auto` (issue 15's learning and CPU
// share) and `auto_static` (TANDEM_AUTO_ADAPT=0). `auto_over_sw` says what automatic mode adds to a
// call it keeps on the CPU (issue 15: auto must not lose where software is the better choice).
//
// Embedded runtimes, one per mode, opened once: steady state, no daemon. Nothing learnt is read or
// kept ($TANDEM_LEARNED_DIR=off for the run), and $TANDEM_MODE is set aside while the runtimes open.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "abi/status.hpp"
#include "base/scoped_env.hpp"
#include "base/stats.hpp"
#include "commands.hpp"
#include "funcs/function.hpp"
#include "output.hpp"
#include "support/measure.hpp"
#include "tandem/tandem.h"

namespace tandem::tools {

namespace {

struct CallsBenchOptions {
  std::vector<uint64_t> sizes{64, 1024, 16384};  // bytes of int32 data per call
  size_t samples = 4'000;                        // per mode and size, over all rounds
  size_t calls_per_sample = 20;
  size_t rounds = 8;
  size_t threads = 1;  // threads calling at once; the first one is timed
  bool quick = false;
  bool json_output = false;
  std::string out;
};

struct BenchRuntime {
  explicit BenchRuntime(std::string name) : mode(std::move(name)) {}
  ~BenchRuntime() {
    if (rt != nullptr) tandem_close(rt);
  }
  BenchRuntime(const BenchRuntime&) = delete;
  BenchRuntime& operator=(const BenchRuntime&) = delete;
  std::string mode;
  tandem_runtime_t* rt = nullptr;
};

void open_bench_runtime(BenchRuntime& r, tandem_mode_t mode, bool adaptive) {
  ScopedEnv no_mode("TANDEM_MODE", nullptr);
  ScopedEnv adapt("TANDEM_AUTO_ADAPT", adaptive ? nullptr : "0");
  tandem_options_t opts;
  tandem_options_init(&opts);
  opts.embedded = 1;
  opts.mode = mode;
  if (tandem_open(&opts, &r.rt) != TANDEM_OK) {
    r.rt = nullptr;
    throw Error(Status::io_error, fmt::format("tandem_open ({}): {}", r.mode, tandem_last_error()));
  }
}

// Runs `measure` on this thread while `companions` more threads call `op` back to back: what a call
// costs while that many others are made at once (they share the runtime's counters and cache lines).
// A companion's failed call fails the measurement.
Result<std::vector<double>> with_companions(size_t companions, const std::function<Status()>& op,
                                            const std::function<Result<std::vector<double>>()>& measure) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> failures{0};
  std::vector<std::thread> pool;
  const auto join = [&] {
    stop.store(true, std::memory_order_relaxed);
    for (std::thread& t : pool) t.join();
  };
  try {
    for (size_t i = 0; i < companions; ++i) {
      pool.emplace_back([&] {
        while (!stop.load(std::memory_order_relaxed)) {
          if (op() != Status::ok) failures.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    Result<std::vector<double>> r = measure();
    join();
    if (const uint64_t n = failures.load(); n > 0) {
      return {Status::device_error, fmt::format("{} calls of the other threads failed or summed wrongly", n)};
    }
    return r;
  } catch (...) {
    join();
    throw;
  }
}

void run_calls_bench(CallsBenchOptions o) {
  if (o.quick) {
    o.sizes = {1024};
    o.samples = 200;
    o.rounds = 2;
  }
  for (uint64_t bytes : o.sizes) {
    if (bytes == 0 || bytes % sizeof(int32_t) != 0 || bytes > (uint64_t{1} << 30)) {
      throw Error(Status::invalid_argument,
                  fmt::format("--sizes: {} bytes is not a whole number of int32 between 4 B and 1 GiB", bytes));
    }
  }
  ScopedEnv nothing_learnt("TANDEM_LEARNED_DIR", "off");
  // Every mode's runtime opens before anything is timed, so that their dispatchers all exist alike.
  BenchRuntime sw("sw"), automatic("auto"), automatic_static("auto_static");
  open_bench_runtime(sw, TANDEM_MODE_SW, true);
  open_bench_runtime(automatic, TANDEM_MODE_AUTO, true);
  open_bench_runtime(automatic_static, TANDEM_MODE_AUTO, false);
  BenchRuntime* const modes[] = {&sw, &automatic, &automatic_static};
  const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_ACCUMULATE);
  if (fn == nullptr) throw Error(Status::unknown_function, "accumulate is not in the catalog");

  nlohmann::ordered_json j;
  j["what"] = "small tandem_accumulate calls, per mode, against the software function called directly";
  j["function"] = "accumulate";
  const size_t samples_per_round = std::max<size_t>(1, o.samples / std::max<size_t>(1, o.rounds));
  j["samples_per_mode"] = samples_per_round * o.rounds;  // what is taken: a whole number per round
  j["calls_per_sample"] = o.calls_per_sample;
  j["rounds"] = o.rounds;
  j["threads"] = o.threads;
  nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
  double worst_auto_over_sw = 0;
  bench::TextTable t({"bytes", "direct ns", "sw ns", "auto ns", "auto_static ns", "auto / sw", "auto in sw"});
  for (uint64_t bytes : o.sizes) {
    const uint64_t elements = bytes / sizeof(int32_t);
    std::vector<int32_t> data(elements);
    int64_t expected = 0;
    for (uint64_t i = 0; i < elements; ++i) expected += data[i] = static_cast<int32_t>((i * 2654435761u) % 1000);
    // The reference: the library's own software function, called as a program would call its own.
    const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data.data()), elements};
    funcs::Call call;
    funcs::BufferList buffers;
    if (Status s = funcs::describe_call(*fn, args, call, buffers); s != Status::ok) {
      throw Error(s, "accumulate: describe_call");
    }
    call.buffers[0] = data.data();  // what the runtime does with args[0] in this process's memory
    bench::SamplePlan plan;
    plan.warmup = 200;
    plan.samples = samples_per_round;
    plan.ops_per_sample = std::max<size_t>(1, o.calls_per_sample);
    std::vector<tandem_call_stats_t> before(3);
    for (size_t m = 0; m < 3; ++m) {
      if (tandem_get_call_stats(modes[m]->rt, &before[m], sizeof before[m]) != TANDEM_OK) {
        throw Error(Status::io_error, "tandem_get_call_stats");
      }
    }
    std::vector<bench::Measurement> measurements;
    const auto measured = [&](std::function<Status()> op) -> bench::Measurement {
      return [&, op] { return with_companions(o.threads - 1, op, [&] { return bench::sample_loop_status(plan, op); }); };
    };
    measurements.push_back(measured([&] {
      return fn->run_sw(call, 0, call.workload) == expected ? Status::ok : Status::device_error;
    }));
    for (BenchRuntime* r : modes) {
      measurements.push_back(measured([&, r] {
        int64_t sum = 0;
        const tandem_status_t st = tandem_accumulate(r->rt, data.data(), elements, &sum);
        if (st != TANDEM_OK) return Status::device_error;
        return sum == expected ? Status::ok : Status::device_error;
      }));
    }
    std::vector<Result<std::vector<double>>> results = bench::interleave(o.rounds, measurements);
    const char* const names[] = {"direct", "sw", "auto", "auto_static"};
    double ns[4] = {};
    for (size_t k = 0; k < 4; ++k) {
      if (!results[k]) {
        throw Error(Status::device_error, fmt::format("{} bytes, {}: a call failed or summed wrongly ({})", bytes, names[k],
                                                  results[k].message()));
      }
      ns[k] = upper_median(results[k].value());
    }
    // How many of auto's calls here stayed wholly in software (the case this benchmark is about).
    tandem_call_stats_t after;
    if (tandem_get_call_stats(automatic.rt, &after, sizeof after) != TANDEM_OK) throw Error(Status::io_error, "tandem_get_call_stats");
    const uint64_t auto_calls = after.calls - before[1].calls;
    const double auto_sw_fraction =
        auto_calls > 0 ? static_cast<double>(after.sw_calls - before[1].sw_calls) / static_cast<double>(auto_calls) : 0.0;
    const double auto_over_sw = ns[2] / ns[1];
    worst_auto_over_sw = std::max(worst_auto_over_sw, auto_over_sw);
    sizes.push_back({{"bytes", bytes},
                     {"direct_ns", ns[0]},
                     {"sw_ns", ns[1]},
                     {"auto_ns", ns[2]},
                     {"auto_static_ns", ns[3]},
                     {"sw_over_direct", ns[1] / ns[0]},
                     {"auto_over_sw", auto_over_sw},
                     {"auto_static_over_sw", ns[3] / ns[1]},
                     {"auto_sw_call_fraction", auto_sw_fraction}});
    t.add_row({std::to_string(bytes), bench::fixed(ns[0], 1), bench::fixed(ns[1], 1), bench::fixed(ns[2], 1),
               bench::fixed(ns[3], 1), bench::fixed(auto_over_sw, 3), fmt::format("{:.0f}%", 100 * auto_sw_fraction)});
  }
  j["sizes"] = sizes;
  j["auto_over_sw_max"] = worst_auto_over_sw;
  if (emit_json_report(j, o.out, o.json_output)) return;
  fmt::print("tandem bench calls: tandem_accumulate through an embedded runtime, median ns per call "
             "({} samples of {} calls per mode, {} interleaved rounds{})\n",
             samples_per_round * o.rounds, o.calls_per_sample, o.rounds,
             o.threads > 1 ? fmt::format("; {} threads calling at once, one timed", o.threads) : "");
  fmt::print("{}\n", t.render());
  fmt::print("auto_over_sw_max {:.3f}: the most automatic mode adds to a call it keeps in software\n", worst_auto_over_sw);
}

}  // namespace

void add_calls_bench(CLI::App& bench) {
  auto o = std::make_shared<CallsBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "calls", "What a small call (64 B to 16 KiB, kept in software) costs through tandem in sw, auto and auto_static "
               "modes, against the software function called directly, in one run");
  cmd->add_option("--sizes", o->sizes, "Bytes of int32 data per accumulate call")->delimiter(',')->capture_default_str();
  cmd->add_option("--samples", o->samples, "Timed samples per mode and size")->check(CLI::Range(size_t{1}, size_t{10'000'000}))->capture_default_str();
  cmd->add_option("--calls-per-sample", o->calls_per_sample, "Back-to-back calls per timed sample")
      ->check(CLI::Range(size_t{1}, size_t{100'000}))
      ->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "Interleaved rounds (direct, sw, auto, auto_static, direct, ...)")
      ->check(CLI::Range(size_t{1}, size_t{1'000}))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads calling at once (each mode's runtime and the direct reference alike); one is timed")
      ->check(CLI::Range(size_t{1}, size_t{64}))
      ->capture_default_str();
  cmd->add_flag("--quick", o->quick,
                "1 KiB only, 200 samples in 2 rounds, in place of --sizes, --samples and --rounds: a second (the test "
                "suite runs this; shape only)");
  cmd->add_flag("--json", o->json_output, "Print JSON instead of a table");
  cmd->add_option("--out", o->out, "Also write the JSON to this file")->check(writable_file());
  cmd->callback([o] { run_calls_bench(*o); });
}

}  // namespace tandem::tools
