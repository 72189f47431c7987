// Small pieces every peer shares: where its two sides run, and starting the helper thread.
#pragma once

#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "abi/status.hpp"
#include "support/measure.hpp"
#include "support/peers.hpp"

namespace tandem::bench::detail {

struct Placement {
  int cpu_a = -1;  // measuring side; -1: not pinned
  int cpu_b = -1;  // echoing side; -1: not pinned
  bool distinct = false;  // the two sides can run at the same time
};

inline Placement resolve_placement(const PeerOptions& options) {
  const CpuPair pair = pick_cpu_pair();
  if (!options.pin) return {-1, -1, pair.distinct};
  Placement p;
  p.cpu_a = options.cpu_a >= 0 ? options.cpu_a : pair.a;
  p.cpu_b = options.cpu_b >= 0 ? options.cpu_b : pair.b;
  p.distinct = p.cpu_a != p.cpu_b;
  return p;
}

inline double timeout_ns(const PeerOptions& options) {
  return static_cast<double>(std::chrono::nanoseconds(options.timeout).count());
}

inline SamplePlan sample_plan(const PeerOptions& options) {
  return {options.warmup, options.samples, options.round_trips_per_sample};
}

// Round trips the echoing side must answer for a whole measurement.
inline std::size_t total_round_trips(const PeerOptions& options) {
  const std::size_t per_sample = options.round_trips_per_sample == 0 ? 1 : options.round_trips_per_sample;
  return options.warmup + options.samples * per_sample;
}

// std::thread reports failure by throwing; benchmark code reports it as a Status.
template <class Fn>
Result<std::thread> start_thread(Fn&& fn) {
  try {
    return std::thread(std::forward<Fn>(fn));
  } catch (const std::system_error& e) {
    return {Status::io_error, std::string("cannot start thread: ") + e.what()};
  }
}

}  // namespace tandem::bench::detail
