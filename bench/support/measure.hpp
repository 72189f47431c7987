// Measuring toolkit for tandem's benchmarks: clocks, summaries, CPU pinning, sample loops, tables.
//
// Every figure tandem reports is a ratio against a reference measured in the same run (DESIGN.md,
// "Measuring"), so all benchmarks take their timestamps and summaries from here and stay comparable.
#pragma once

#include <sched.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "abi/status.hpp"

namespace tandem::bench {

// ---------------------------------------------------------------------------------------------------
// Clocks

// CLOCK_MONOTONIC in nanoseconds (about 30 ns per call through the vDSO on the build machine).
int64_t now_ns() noexcept;

// Raw time-stamp counter. Not serialising: good for intervals of a few hundred ns and up, which is
// all a round trip between cores ever is.
inline uint64_t read_tsc() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  uint32_t lo = 0;
  uint32_t hi = 0;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (static_cast<uint64_t>(hi) << 32) | lo;
#else
  return static_cast<uint64_t>(now_ns());
#endif
}

// True when the CPU says its TSC ticks at a constant rate in every power state (CPUID 0x80000007).
bool invariant_tsc_available() noexcept;

// The clock sample loops read: the TSC when it is invariant (cheaper to read than clock_gettime, so
// less of each sample is the clock itself), else CLOCK_MONOTONIC. Calibrated once per process against
// CLOCK_MONOTONIC; ticks convert to ns with to_ns().
class TickClock {
 public:
  // The process-wide instance; the first call calibrates for about 20 ms (thread-safe).
  static const TickClock& get();

  uint64_t now() const noexcept { return uses_tsc_ ? read_tsc() : static_cast<uint64_t>(now_ns()); }
  double to_ns(uint64_t ticks) const noexcept { return static_cast<double>(ticks) * ns_per_tick_; }
  uint64_t ticks_for_ns(double ns) const noexcept {
    return static_cast<uint64_t>(ns / ns_per_tick_) + 1;
  }
  bool uses_tsc() const noexcept { return uses_tsc_; }
  double ns_per_tick() const noexcept { return ns_per_tick_; }
  double ticks_per_ns() const noexcept { return 1.0 / ns_per_tick_; }  // the TSC's GHz

 private:
  TickClock(bool uses_tsc, double ns_per_tick) : uses_tsc_(uses_tsc), ns_per_tick_(ns_per_tick) {}
  bool uses_tsc_;
  double ns_per_tick_;
};

// ---------------------------------------------------------------------------------------------------
// Summaries

// JSON-friendly (see measure_json.hpp). All zero when there are no samples.
struct Summary {
  double median = 0;
  double min = 0;
  double p99 = 0;  // nearest-rank 99th percentile
  double mean = 0;
  double max = 0;
  std::size_t samples = 0;
};

Summary summarize(std::span<const double> samples);

// CPU seconds (user + system) every thread of process `pid` has run so far, from /proc/PID/stat (clock
// ticks: 10 ms resolution); 0 when it cannot be read.
double process_cpu_seconds(int pid);

// ---------------------------------------------------------------------------------------------------
// CPU placement

// CPUs this thread may run on (its affinity mask), in increasing order.
std::vector<int> usable_cpus();

// Best effort: true when the calling thread now runs only on `cpu`.
bool pin_this_thread(int cpu) noexcept;

// Pins the calling thread for a scope and restores its previous affinity mask afterwards, so a
// benchmark never leaves its caller pinned.
class ScopedPin {
 public:
  explicit ScopedPin(int cpu) noexcept;  // cpu < 0: does nothing
  ~ScopedPin();
  ScopedPin(const ScopedPin&) = delete;
  ScopedPin& operator=(const ScopedPin&) = delete;
  bool pinned() const noexcept { return pinned_; }

 private:
  cpu_set_t saved_{};
  bool restore_ = false;
  bool pinned_ = false;
};

// Two CPUs for a two-party measurement: the first two usable CPUs, or the same one twice when only
// one is usable (`distinct` false: spin waits then rely on yielding, and the figures say little).
struct CpuPair {
  int a = 0;
  int b = 0;
  bool distinct = false;
};
CpuPair pick_cpu_pair();

// ---------------------------------------------------------------------------------------------------
// Sample loops

struct SamplePlan {
  std::size_t warmup = 1'000;       // untimed calls first: caches, branch predictors, page faults
  std::size_t samples = 10'000;     // timed samples returned
  std::size_t ops_per_sample = 1;   // > 1: a sample is the mean of that many back-to-back calls
};

// Calls op() plan.warmup times, then times plan.samples groups of plan.ops_per_sample calls and
// returns each group's mean duration per call in ns. Consecutive samples share one clock reading,
// so the clock costs one read per sample.
template <class Op>
std::vector<double> sample_loop(const SamplePlan& plan, Op&& op) {
  static_assert(std::is_void_v<std::invoke_result_t<Op&>>, "use sample_loop_status for Status ops");
  const TickClock& clock = TickClock::get();
  const std::size_t per_sample = plan.ops_per_sample == 0 ? 1 : plan.ops_per_sample;
  std::vector<double> out;
  out.reserve(plan.samples);
  for (std::size_t i = 0; i < plan.warmup; ++i) op();
  uint64_t start = clock.now();
  for (std::size_t s = 0; s < plan.samples; ++s) {
    for (std::size_t i = 0; i < per_sample; ++i) op();
    const uint64_t end = clock.now();
    out.push_back(clock.to_ns(end - start) / static_cast<double>(per_sample));
    start = end;
  }
  return out;
}

// As sample_loop, for an op that returns tandem::Status: stops at the first failure and returns it.
template <class Op>
Result<std::vector<double>> sample_loop_status(const SamplePlan& plan, Op&& op) {
  const TickClock& clock = TickClock::get();
  const std::size_t per_sample = plan.ops_per_sample == 0 ? 1 : plan.ops_per_sample;
  std::vector<double> out;
  out.reserve(plan.samples);
  for (std::size_t i = 0; i < plan.warmup; ++i) {
    if (Status st = op(); st != Status::ok) return {st, "failed during warm-up"};
  }
  uint64_t start = clock.now();
  for (std::size_t s = 0; s < plan.samples; ++s) {
    for (std::size_t i = 0; i < per_sample; ++i) {
      if (Status st = op(); st != Status::ok) return {st, "failed at sample " + std::to_string(s)};
    }
    const uint64_t end = clock.now();
    out.push_back(clock.to_ns(end - start) / static_cast<double>(per_sample));
    start = end;
  }
  return out;
}

// Runs several measurements in turn, `rounds` times over (A B C A B C ...), and returns each one's
// samples concatenated across rounds, in the order given. Measure a subject and its reference this
// way: the machine drifts (other tenants; on this VM the host sometimes places both vCPUs on SMT
// siblings, which changes a cross-core round trip about tenfold), and interleaving exposes both to
// the same drift. A measurement that fails keeps its failure and is not run again.
using Measurement = std::function<Result<std::vector<double>>()>;
std::vector<Result<std::vector<double>>> interleave(std::size_t rounds,
                                                    const std::vector<Measurement>& measurements);

// ---------------------------------------------------------------------------------------------------
// Tables

// A terminal table with aligned columns: text left-aligned, numbers right-aligned.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);
  void add_row(std::vector<std::string> cells);  // missing cells print empty, extra cells are kept
  std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Fixed-point text for a table cell, e.g. fixed(123.456, 1) == "123.5".
std::string fixed(double value, int decimals = 1);

}  // namespace tandem::bench
