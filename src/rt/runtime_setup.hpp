// Builds a dispatcher from a configuration: the devices, engine parameters, monitor, resident functions
// and the reconfiguration policy. One place for what the embedded runtime and tandemd set up alike.
#pragma once

#include <functional>
#include <memory>

#include "config/config.hpp"
#include "rt/dispatcher.hpp"

namespace tandem::rt {

struct SetupOptions {
  uint32_t max_jobs_per_session = 0;  // engine bound on jobs in flight per session (0: none)
  std::shared_ptr<tandem_metrics_page_t> metrics_page;  // null: private
  // The CPU throughput the emulated accelerators' speedups are relative to (a calibrated X_c); empty
  // or 0 for a function: its software throughput measured in this process.
  std::function<double(uint16_t)> cpu_rate;
};

// A dispatcher (not started) with the configured devices, each device's resident functions already
// loaded (but those whose kernel did not build: their slots start empty) and the configured
// reconfiguration policy. Set-up code: throws tandem::Error naming the device or key when something
// cannot start (a device this build lacks, a resident function a device has no kernel for).
std::unique_ptr<Dispatcher> build_dispatcher(const config::Config& config, const SetupOptions& options = {});

}  // namespace tandem::rt
