// The calibrated loop behind the `work` function: one work unit is one CPU cycle (thesis 5.5.2).
// A unit is one tick of the invariant TSC; the loop is calibrated in iterations per tick, so it
// progresses only while the thread runs (a descheduled thread does no work, as on real hardware).

#include <algorithm>
#include <cstdint>

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

struct Calibration {
  double ticks_per_second = 1e9;
  double iterations_per_tick = 1.0;

  Calibration() {
    // TSC rate against CLOCK_MONOTONIC over ~2 ms: both clocks read to tens of ns, so the rate is
    // good to 1e-4 (a preemption in between stretches both alike), and every process that opens a
    // runtime pays this wait once (it was 10 ms, a fifth of a first tandem_open).
    const int64_t t0 = tandem::now_ns();
    const uint64_t c0 = ticks();
    while (tandem::now_ns() - t0 < 2'000'000) {
    }
    const uint64_t c1 = ticks();
    const int64_t t1 = tandem::now_ns();
    ticks_per_second = static_cast<double>(c1 - c0) * 1e9 / static_cast<double>(t1 - t0);
    // Loop speed: the best of several short runs (the fastest run is the undisturbed one).
    double best = 0;
    for (int run = 0; run < 7; ++run) {
      const uint64_t n = 200'000;
      const uint64_t a = ticks();
      spin_iterations(n);
      const uint64_t b = ticks();
      if (b > a) best = std::max(best, static_cast<double>(n) / static_cast<double>(b - a));
    }
    if (best > 0) iterations_per_tick = best;
  }
};

const Calibration& calibration() {
  static const Calibration c;
  return c;
}

}  // namespace

double cycles_per_second() { return calibration().ticks_per_second; }

void burn_cycles(uint64_t units) {
  spin_iterations(static_cast<uint64_t>(static_cast<double>(units) * calibration().iterations_per_tick));
}

}  // namespace tandem::funcs
