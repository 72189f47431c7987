// The real-time driver's clock: CLOCK_MONOTONIC in nanoseconds (the engine's Time in real time).
#pragma once

#include <time.h>

#include <cstdint>

namespace tandem::rt {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace tandem::rt
