#include "devices/device_factory.hpp"

#include "devices/emu/fabric.hpp"
#if TANDEM_HAVE_RTL_DEVICE
#include "devices/rtl/rtl_fabric.hpp"
#endif

namespace tandem::devices {

bool rtl_device_available() { return TANDEM_HAVE_RTL_DEVICE != 0; }

std::unique_ptr<Device> make_device(const FabricConfig& fabric,
                                    const std::array<model::AccelModel, TANDEM_FN_MAX>& models) {
  if (fabric.device.kind == "emu") return std::make_unique<EmulatedFabric>(fabric.slots, models);
  if (fabric.device.kind == "rtl") {
#if TANDEM_HAVE_RTL_DEVICE
    rtl::RtlFabricOptions o;
    o.accelerator.clock_hz = fabric.device.rtl_clock_hz;
    o.accelerator.max_cycles = fabric.device.rtl_max_cycles;
    return std::make_unique<rtl::RtlFabric>(fabric.slots, o, models);
#else
    throw Error(Status::invalid_argument,
                "device.kind = \"rtl\": this build has no RTL device (TANDEM_BUILD_RTL off or Verilator missing)");
#endif
  }
  throw Error(Status::invalid_argument, "device.kind = \"" + fabric.device.kind + "\": unknown device");
}

}  // namespace tandem::devices
