#include "devices/device_factory.hpp"

#include "devices/emu/emu_device.hpp"
#if TANDEM_HAVE_RTL_DEVICE
#include "devices/rtl/rtl_device.hpp"
#endif

namespace tandem::devices {

namespace {

std::unique_ptr<Device> make_device(std::string_view kind, const config::Config& config, const DeviceContext& context) {
  if (kind == "emu") return std::make_unique<EmuDevice>(config.device.emu.slots, emu_models(config, context.cpu_rate));
#if TANDEM_HAVE_RTL_DEVICE
  if (kind == "rtl") return std::make_unique<rtl::RtlDevice>(config);
#endif
  if (kind == "rtl") {
    throw Error(Status::invalid_argument,
                "device \"rtl\": this build has no RTL device (TANDEM_BUILD_RTL off or Verilator missing)");
  }
  throw Error(Status::invalid_argument, "device \"" + std::string(kind) + "\": unknown device kind");
}

}  // namespace

const std::vector<std::string>& resident_functions(std::string_view kind, const config::Config& config) {
  static const std::vector<std::string> none;
  if (kind == "emu") return config.device.emu.resident;
  if (kind == "rtl") return config.device.rtl.resident;
  return none;
}

bool device_kind_available(std::string_view kind) {
  if (kind == "emu") return true;
  if (kind == "rtl") return TANDEM_HAVE_RTL_DEVICE != 0;
  return false;
}

std::vector<std::unique_ptr<Device>> make_devices(const config::Config& config, const DeviceContext& context) {
  std::vector<std::unique_ptr<Device>> devices;
  for (const std::string& kind : config.device.kinds) {
    auto device = make_device(kind, config, context);
    const DeviceInfo& info = device->info();
    for (const std::string& name : resident_functions(kind, config)) {
      const funcs::FunctionInfo* fn = funcs::find_function(name);
      if (fn == nullptr || !info.loadable[fn->id]) {
        throw Error(Status::invalid_argument, "device." + kind + ".resident: '" + name + "' has no accelerator on the " +
                                                  kind + " device");
      }
    }
    devices.push_back(std::move(device));
  }
  return devices;
}

}  // namespace tandem::devices
