// The system monitor (thesis 5.4.6): once per monitoring period P it turns the engine's counters into
// per-function figures — jobs and work queued, work submitted during the period, accelerators serving
// the function, their utilisation, Eq 5.1's effective throughput X'_a and Eq 5.2's queue wait D_q, and
// Algorithm 1's demand. Sans-I/O like the engine: the driver passes the time. The real-time driver
// publishes the figures in the shared metrics page; the simulator hands them to the partitioner and
// the reconfiguration manager directly.
#pragma once

#include <array>
#include <vector>

#include "abi/metrics.hpp"
#include "engine/engine.hpp"

namespace tandem::engine {

struct MonitorConfig {
  Time period_ns = 1'000'000;      // P
  double available_bandwidth = 0;  // BW in bytes/s for Eq 5.1; 0 = unknown (no penalty)
};

class Monitor {
 public:
  Monitor(const EngineConfig& engine_config, const MonitorConfig& config);

  // Closes the period that ends at `now`: recomputes every known function's figures.
  void sample(const Engine& engine, Time now);
  // Refreshes the instantaneous figures of one function (n_a, queue, D_q) between periods, e.g. right
  // after a reconfiguration, keeping the period's submitted work, demand and utilisation.
  void refresh(const Engine& engine, FunctionId f);

  const abi::FunctionMetrics& metrics(FunctionId f) const { return metrics_[f]; }
  // Eq 5.1's BW as measured by the driver (memory bandwidth less what the devices moved last period);
  // used from the next sample on.
  void set_available_bandwidth(double bytes_per_s) { config_.available_bandwidth = bytes_per_s; }
  const MonitorConfig& config() const { return config_; }
  Time period_start() const { return period_start_; }
  uint64_t periods() const { return periods_; }
  // Functions whose figures the last sample() or refresh() recomputed (the ones to publish).
  const std::vector<FunctionId>& changed() const { return changed_; }

 private:
  void instantaneous(const Engine& engine, FunctionId f, abi::FunctionMetrics& m) const;

  EngineConfig engine_config_;
  MonitorConfig config_;
  Time period_start_ = 0;
  uint64_t periods_ = 0;
  std::array<uint64_t, kMaxFunctions> last_submitted_{};
  std::vector<Time> last_busy_;  // per slot: busy time accounted up to period_start_
  std::array<abi::FunctionMetrics, kMaxFunctions> metrics_{};
  std::vector<FunctionId> changed_;
};

// A reconfiguration manager's policy (thesis 5.4.7): once per period, after the monitor sampled, it
// may load functions into slots through engine.load(), which enforces the two prohibitions (never a
// busy slot, never the only slot of a non-empty queue). The engine's request bitmap says which
// unaccelerated functions were asked for during the period; policies clear it when done.
//
// An event-driven policy may also act between periods: every driver calls on_demand() when the
// engine answers a packet for `function` with NOT_ACCELERATED (a job or a demand packet while no slot
// holds it; the complete action says so), after the packet, with the same engine and clock. Drivers
// skip the call unless reacts() (a period-driven policy, Algorithm 1 included, sees nothing of it).
class ReconfigPolicy {
 public:
  virtual ~ReconfigPolicy() = default;
  virtual std::string_view name() const = 0;
  virtual void on_period(Engine& engine, const Monitor& monitor, Time now, Actions& out) = 0;
  virtual bool reacts() const { return false; }
  virtual void on_demand(Engine& engine, const Monitor& monitor, FunctionId function, Time now, Actions& out) {
    (void)engine, (void)monitor, (void)function, (void)now, (void)out;
  }
};

}  // namespace tandem::engine
