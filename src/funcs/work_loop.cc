// The calibrated loop behind the `work` function: one work unit is one CPU cycle (thesis 5.5.2).
// A unit is one tick of the invariant TSC; the loop is calibrated in iterations per tick, so it
// progresses only while the thread runs (a descheduled thread does no work, as on real hardware).

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <mutex>

#include "funcs/function.hpp"
#include "base/clock.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace tandem::funcs {

namespace {

uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(tandem::now_ns());
#endif
}

__attribute__((noinline)) void spin_iterations(uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) asm volatile("" ::: "memory");  // one cheap iteration, not elided
}

// The TSC's rate against CLOCK_MONOTONIC over ~2 ms: both clocks read to tens of ns, so the rate is
// good to 1e-4 (a preemption in between stretches both alike). Every process that opens a runtime
// needs it; a client of tandemd adopts the daemon's figure instead of spinning (adopt_cycles_per_second).
double measure_ticks_per_second() {
  const int64_t t0 = tandem::now_ns();
  const uint64_t c0 = ticks();
  while (tandem::now_ns() - t0 < 2'000'000) {
  }
  const uint64_t c1 = ticks();
  const int64_t t1 = tandem::now_ns();
  return static_cast<double>(c1 - c0) * 1e9 / static_cast<double>(t1 - t0);
}

// Loop speed, measured by the process that runs the loop (its code is its own): the best of several
// short runs (the fastest run is the undisturbed one).
double measure_iterations_per_tick() {
  double best = 0;
  for (int run = 0; run < 7; ++run) {
    const uint64_t n = 200'000;
    const uint64_t a = ticks();
    spin_iterations(n);
    const uint64_t b = ticks();
    if (b > a) best = std::max(best, static_cast<double>(n) / static_cast<double>(b - a));
  }
  return best > 0 ? best : 1.0;
}

struct TickRate {
  std::mutex mutex;
  std::atomic<double> known{0};  // 0 until measured or adopted
};

TickRate& tick_rate() {
  static TickRate r;
  return r;
}

double iterations_per_tick() {
  static const double rate = measure_iterations_per_tick();
  return rate;
}

}  // namespace

double cycles_per_second() {
  TickRate& r = tick_rate();
  if (const double v = r.known.load(std::memory_order_acquire); v > 0) return v;
  std::lock_guard lock(r.mutex);
  double v = r.known.load(std::memory_order_relaxed);
  if (v <= 0) {
    v = measure_ticks_per_second();
    r.known.store(v, std::memory_order_release);
  }
  return v;
}

bool adopt_cycles_per_second(double ticks_per_second) {
  if (!(ticks_per_second >= 1e6 && ticks_per_second <= 1e11)) return false;  // no TSC ticks slower or faster
  TickRate& r = tick_rate();
  std::lock_guard lock(r.mutex);
  if (r.known.load(std::memory_order_relaxed) > 0) return false;
  r.known.store(ticks_per_second, std::memory_order_release);
  return true;
}

void prepare_work_loop() { (void)iterations_per_tick(); }

void burn_cycles(uint64_t units) {
  spin_iterations(static_cast<uint64_t>(static_cast<double>(units) * iterations_per_tick()));
}

}  // namespace tandem::funcs
