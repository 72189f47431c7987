#include "devices/device_factory.hpp"

#include <fmt/format.h>

#include "devices/copy_engines.hpp"
#include "devices/emu/emu_device.hpp"
#if TANDEM_HAVE_RTL_DEVICE
#include "devices/rtl/rtl_device.hpp"
#endif
#if TANDEM_HAVE_OPENCL_DEVICE
#include "devices/opencl/opencl_device.hpp"
#endif
#if TANDEM_HAVE_CUDA_DEVICE
#include "devices/cuda/cuda_device.hpp"
#endif

namespace tandem::devices {

namespace {

std::unique_ptr<Device> make_device(std::string_view kind, const config::Config& config, const DeviceContext& context) {
  if (kind == "emu") {
    auto emu = std::make_unique<EmuDevice>(config.device.emu.slots, emu_models(config, context.cpu_rate),
                                           emu_memory(config.device.emu), emu_tlb(config.device.emu));
    emu->set_service_timeout_ns(static_cast<int64_t>(config.device.emu.service_timeout_s * 1e9));
    return emu;
  }
#if TANDEM_HAVE_RTL_DEVICE
  if (kind == "rtl") return std::make_unique<rtl::RtlDevice>(config);
#endif
#if TANDEM_HAVE_OPENCL_DEVICE
  if (kind == "opencl") return std::make_unique<opencl::OpenclDevice>(config.device.opencl);
#endif
#if TANDEM_HAVE_CUDA_DEVICE
  if (kind == "cuda") return std::make_unique<cuda::CudaDevice>(config.device.cuda);
#endif
  if (kind == "rtl") {
    throw Error(Status::invalid_argument,
                "device \"rtl\": this build has no RTL device (TANDEM_BUILD_RTL off or Verilator missing)");
  }
  if (kind == "opencl" || kind == "cuda") {
    throw Error(Status::invalid_argument, "device \"" + std::string(kind) + "\": this build has no " + std::string(kind) +
                                              " device (TANDEM_BUILD_OPENCL / TANDEM_BUILD_CUDA off, or the SDK missing)");
  }
  throw Error(Status::invalid_argument, "device \"" + std::string(kind) + "\": unknown device kind");
}

}  // namespace

const std::vector<std::string>& resident_functions(std::string_view kind, const config::Config& config) {
  static const std::vector<std::string> none;
  static const std::vector<std::string> copy_engines(64, "copy");  // every copy engine holds `copy`
  if (kind == "copy") return copy_engines;
  if (kind == "emu") return config.device.emu.resident;
  if (kind == "rtl") return config.device.rtl.resident;
  if (kind == "opencl") return config.device.opencl.resident;
  if (kind == "cuda") return config.device.cuda.resident;
  return none;
}

bool device_kind_available(std::string_view kind) {
  if (kind == "emu") return true;
  if (kind == "rtl") return TANDEM_HAVE_RTL_DEVICE != 0;
  if (kind == "opencl") return TANDEM_HAVE_OPENCL_DEVICE != 0;
  if (kind == "cuda") return TANDEM_HAVE_CUDA_DEVICE != 0;
  return false;
}

Error kernel_not_built(std::string_view function, std::string_view kind) {
  return Error(Status::not_accelerated, fmt::format("{} has no accelerator on the {} device: its kernel did not build there "
                                                    "(the build log is above)",
                                                    function, kind));
}

std::vector<std::unique_ptr<Device>> make_devices(const config::Config& config, const DeviceContext& context) {
  std::vector<std::unique_ptr<Device>> devices, copy_engines;
  for (const std::string& kind : config.device.kinds) {
    auto device = make_device(kind, config, context);
    const DeviceInfo& info = device->info();
    std::bitset<TANDEM_FN_MAX> left_out;
    for (const std::string& name : resident_functions(kind, config)) {
      const funcs::FunctionInfo* fn = funcs::find_function(name);
      if (fn != nullptr && info.not_built[fn->id]) {
        // A kernel that did not build here (its log is above): the other functions serve, and this
        // one's calls run on the CPU; its slots start empty. Said once per function.
        if (!left_out[fn->id]) {
          fmt::print(stderr, "tandem: device.{}.resident: '{}' is left out: its kernel did not build on this device\n", kind,
                     name);
        }
        left_out.set(fn->id);
        continue;
      }
      if (fn == nullptr || !info.loadable[fn->id]) {
        throw Error(Status::invalid_argument, "device." + kind + ".resident: '" + name + "' has no accelerator on the " +
                                                  kind + " device");
      }
    }
    // The first device with local memory holds the runtime's (rt::Dispatcher) and brings its copy
    // engines: a device of their own, after the configured ones (whose slots keep the numbers the
    // configuration gives them), moving the bytes the way that device does.
    if (info.memory.local_bytes > 0 && info.memory.copy_engines > 0 && copy_engines.empty()) {
      copy_engines.push_back(std::make_unique<CopyEngines>(info.name, info.memory, device->local_transfer()));
    }
    devices.push_back(std::move(device));
  }
  for (auto& c : copy_engines) devices.push_back(std::move(c));
  return devices;
}

}  // namespace tandem::devices
