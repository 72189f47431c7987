// Builds the devices a configuration names (`[device] kinds`), each from its own section. Adding a
// device kind is one folder under src/devices/ plus one line in make_device() (device_factory.cc).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "devices/device.hpp"

namespace tandem::devices {

struct DeviceContext {
  // The CPU throughput the emulated accelerators' speedups are relative to (a calibrated X_c); empty
  // or 0 for a function: its software throughput measured in this process.
  std::function<double(uint16_t)> cpu_rate;
};

// Whether this build can make a device of `kind` (the rtl device needs Verilator at build time).
bool device_kind_available(std::string_view kind);

// The functions `kind`'s section loads at start, one per slot of that device in slot order.
const std::vector<std::string>& resident_functions(std::string_view kind, const config::Config& config);

// One device per entry of config.device.kinds, in that order, then the copy engines of those that offer
// device-local memory (a device of kind "copy" each). Set-up code: throws tandem::Error naming
// the device when one cannot start (a kind this build lacks, a resident function it has no kernel
// for, ...). A resident function whose kernel did not build on the device (DeviceInfo::not_built) is
// left out with a warning on stderr instead.
std::vector<std::unique_ptr<Device>> make_devices(const config::Config& config, const DeviceContext& context = {});

// The error of a tool that measures `function` on a device of `kind` configured with it resident, where
// make_devices left it out (its kernel did not build): figures taken anyway would be the CPU's.
Error kernel_not_built(std::string_view function, std::string_view kind);

}  // namespace tandem::devices
