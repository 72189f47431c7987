#include "rt/runtime_setup.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/clock.hpp"
#include "devices/device_factory.hpp"

namespace tandem::rt {

namespace {

// Bytes per second of one large copy, best of a few (a figure for all memory traffic to share).
double memory_bandwidth() {
  static const double rate = [] {
    constexpr size_t kBytes = 8 << 20;
    std::vector<char> a(kBytes, 1), b(kBytes, 2);
    double best = 0;
    for (int run = 0; run < 5; ++run) {
      const int64_t t0 = now_ns();
      std::memcpy(b.data(), a.data(), kBytes);
      const int64_t t1 = now_ns();
      if (t1 > t0) best = std::max(best, 2.0 * kBytes * 1e9 / static_cast<double>(t1 - t0));  // read + write
    }
    return best;
  }();
  return rate;
}

}  // namespace

std::unique_ptr<Dispatcher> build_dispatcher(const config::Config& config, const SetupOptions& options) {
  devices::DeviceContext context;
  context.cpu_rate = options.cpu_rate;
  auto devices = devices::make_devices(config, context);
  engine::EngineConfig ec;
  ec.queues = config.fabric.queues;
  ec.queue_capacity = config.fabric.queue_capacity;
  ec.max_job_ns = static_cast<engine::Time>(config.fabric.max_job_s * 1e9);
  ec.max_jobs_per_session = options.max_jobs_per_session;
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) ec.known.set(fn->id);
  DispatcherOptions d;
  d.idle_spin_ns = static_cast<int64_t>(config.dispatcher.idle_spin_s * 1e9);
  d.batch = config.dispatcher.batch;
  d.cpu = config.dispatcher.cpu;
  d.avoid_caller_cpus = config.dispatcher.avoid_caller_cpus;
  d.monitor.period_ns = static_cast<engine::Time>(config.monitor.period_s * 1e9);
  d.monitor.available_bandwidth = std::max(0.0, config.monitor.available_bandwidth);
  // Measured BW (Eq 5.1): the memory bandwidth of one copy on this machine, once per process.
  if (config.monitor.available_bandwidth < 0) d.measured_total_bandwidth = memory_bandwidth();
  d.energy = config.energy;
  auto dispatcher = std::make_unique<Dispatcher>(ec, std::move(devices), d, options.metrics_page);
  // Resident functions are in place from the start, slot by slot within their device: no reconfiguration wait.
  for (size_t i = 0; i < dispatcher->device_count(); ++i) {
    const auto& resident = devices::resident_functions(dispatcher->device_info(i).kind, config);
    const uint32_t slots = dispatcher->device_info(i).slots;
    for (uint32_t s = 0; s < resident.size() && s < slots; ++s) {
      const auto* fn = funcs::find_function(resident[s]);
      if (fn != nullptr && dispatcher->device_info(i).loadable[fn->id]) dispatcher->preload(dispatcher->first_slot(i) + s, fn->id);
    }
  }
  // The reconfiguration manager ([reconfig]; thesis 5.4.7), run every monitoring period. The policy
  // was validated with the configuration.
  dispatcher->set_reconfig_policy(config::make_policy(config.reconfig.policy, config::reconfig_params(config)));
  return dispatcher;
}

}  // namespace tandem::rt
