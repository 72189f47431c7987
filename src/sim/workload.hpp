// Synthetic applications of the thesis's evaluation (5.5.2): each executes a list of library calls,
// function uniform among F, workload uniform in a range of SW time; a total SW workload divided
// evenly among the applications. Deterministic across machines: our own generator (splitmix64) and
// our own range mapping, never the standard library's distributions (implementation-defined).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/types.hpp"

namespace tandem::sim {

struct LibraryCall {
  engine::FunctionId function = 0;
  uint64_t units = 0;       // work units; one unit = one CPU cycle
  int64_t arrival_ns = 0;   // open arrivals: when the call arrives (closed loop: 0, as soon as possible)
};

struct AppSpec {
  std::vector<LibraryCall> calls;
  uint64_t units() const;
};

struct WorkloadSpec {
  uint32_t apps = 8;
  uint32_t functions = 16;          // F: ids first_function .. first_function + F - 1
  engine::FunctionId first_function = 0;
  double total_sw_s = 8.0;          // whole experiment, uniprocessor SW time (Table 5.3)
  double call_min_s = 1e-3;         // workload per call, uniprocessor SW time (Table 5.3: 1-100 ms)
  double call_max_s = 100e-3;
  double cpu_hz = 667e6;            // converts SW time to work units (cycles)
  uint64_t seed = 1;
  bool same_calls_for_all = false;  // every app gets the call list of app 0 (thesis Fig 5.13/5.14)
  // Size of each call's work between call_min_s and call_max_s: uniform (Table 5.3), log-uniform,
  // exponential (call_min_s plus an exponential of mean call_mean_s - call_min_s, truncated at
  // call_max_s), or fixed (call_mean_s).
  enum class Sizes : uint8_t { uniform, log_uniform, exponential, fixed } sizes = Sizes::uniform;
  double call_mean_s = -1;          // exponential, fixed; < 0 = (call_min_s + call_max_s) / 2
  std::vector<double> weights;      // call mix: relative frequency of each of the F functions; empty = uniform
  double rate_per_s = 0;            // > 0: open arrivals, a Poisson process of this many calls/s per app
};

// splitmix64: tiny, fast, and the same on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) by multiply-shift (bias < n / 2^64: irrelevant here, and deterministic).
  uint64_t below(uint64_t n) {
    __extension__ using Wide = unsigned __int128;  // GCC/Clang; __extension__ keeps -Wpedantic quiet
    return static_cast<uint64_t>((static_cast<Wide>(next()) * n) >> 64);
  }
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// Mixes two seeds into one (for per-app and per-repetition streams).
uint64_t mix_seed(uint64_t a, uint64_t b);

std::vector<AppSpec> make_workload(const WorkloadSpec& spec);

}  // namespace tandem::sim
