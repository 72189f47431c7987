// The clock of everything that runs in real time: CLOCK_MONOTONIC in nanoseconds (the engine's Time
// in the real-time driver; the functions' throughput probes). Header-only, in the base layer below
// every other, so any layer may use it.
#pragma once

#include <time.h>

#include <cstdint>

namespace tandem {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The same clock at the kernel's tick resolution (a few ms), for time gates on hot paths: no counter
// read, a few ns.
inline int64_t now_coarse_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// CPU time the calling thread has run, in nanoseconds: what a computation cost a core, whatever share
// of one the scheduler gave it. A system call (about 0.3 us here), so only around long enough spans.
inline int64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace tandem
