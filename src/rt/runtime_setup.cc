#include "rt/runtime_setup.hpp"

#include "devices/device_factory.hpp"

namespace tandem::rt {

std::unique_ptr<Dispatcher> build_dispatcher(const devices::Config& config, const SetupOptions& options) {
  const auto models = devices::resolve_models(config.fabric, options.cpu_rate);
  engine::EngineConfig ec = devices::engine_config(config.fabric, models);
  ec.max_jobs_per_session = options.max_jobs_per_session;
  auto device = devices::make_device(config.fabric, models);  // [device] kind: emu or rtl
  DispatcherOptions d;
  d.idle_spin_ns = static_cast<int64_t>(config.dispatcher.idle_spin_s * 1e9);
  d.batch = config.dispatcher.batch;
  d.cpu = config.dispatcher.cpu;
  d.monitor.period_ns = static_cast<engine::Time>(config.monitor.period_s * 1e9);
  d.monitor.available_bandwidth = config.monitor.available_bandwidth;
  auto dispatcher = std::make_unique<Dispatcher>(ec, std::move(device), d, options.metrics_page);
  // Resident functions are in place from the start: no reconfiguration wait.
  for (uint32_t s = 0; s < config.fabric.resident.size(); ++s) {
    if (const auto* fn = funcs::find_function(config.fabric.resident[s])) dispatcher->preload(s, fn->id);
  }
  // The reconfiguration manager ([reconfig]; thesis 5.4.7), run every monitoring period. The policy
  // name was validated with the configuration.
  dispatcher->set_reconfig_policy(engine::make_reconfig_policy(config.reconfig.policy, devices::reconfig_params(config)));
  return dispatcher;
}

}  // namespace tandem::rt
