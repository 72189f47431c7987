// Builds the device a configuration names ([device] kind): the emulated fabric, or the Verilator
// RTL device when this build has it (TANDEM_BUILD_RTL and Verilator present).
#pragma once

#include <array>
#include <memory>

#include "devices/device.hpp"
#include "devices/emu/fabric_config.hpp"

namespace tandem::devices {

// Whether this build can make the "rtl" device.
bool rtl_device_available();

// `models` are the resolved models (resolve_models(fabric)); the engine must be configured with the
// same ones. Set-up code: throws tandem::Error for a device this build does not have.
std::unique_ptr<Device> make_device(const FabricConfig& fabric,
                                    const std::array<model::AccelModel, TANDEM_FN_MAX>& models);

}  // namespace tandem::devices
