#include "devices/opencl/platform.hpp"

#include "devices/selector.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace tandem::devices::opencl {

namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  if (clGetPlatformInfo(p, what, size, s.data(), nullptr) != CL_SUCCESS) return {};
  s.resize(std::strlen(s.c_str()));
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  if (clGetDeviceInfo(d, what, size, s.data(), nullptr) != CL_SUCCESS) return {};
  s.resize(std::strlen(s.c_str()));
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T value{};
  if (clGetDeviceInfo(d, what, sizeof value, &value, nullptr) != CL_SUCCESS) return T{};
  return value;
}

std::string type_name(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return "gpu";
  if (type & CL_DEVICE_TYPE_CPU) return "cpu";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (type & CL_DEVICE_TYPE_CUSTOM) return "custom";
  return "unknown";
}

ClDeviceInfo read_device(cl_device_id d) {
  ClDeviceInfo info;
  info.id = d;
  info.name = device_string(d, CL_DEVICE_NAME);
  info.vendor = device_string(d, CL_DEVICE_VENDOR);
  info.version = device_string(d, CL_DEVICE_VERSION);
  info.driver_version = device_string(d, CL_DRIVER_VERSION);
  const auto type = device_value<cl_device_type>(d, CL_DEVICE_TYPE);
  info.type = type_name(type);
  info.available = device_value<cl_bool>(d, CL_DEVICE_AVAILABLE) == CL_TRUE;
  info.compiler_available = device_value<cl_bool>(d, CL_DEVICE_COMPILER_AVAILABLE) == CL_TRUE;
  info.compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  info.clock_mhz = device_value<cl_uint>(d, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  info.global_mem_bytes = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  info.max_alloc_bytes = device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  info.base_align_bytes = std::max<uint32_t>(device_value<cl_uint>(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8, 1);
  info.local_mem_bytes = device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
  info.max_work_group_size = device_value<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  // Deprecated in 2.0 but still answered by 3.0 drivers; a CPU device shares the host's memory anyway.
  info.host_unified_memory =
      device_value<cl_bool>(d, CL_DEVICE_HOST_UNIFIED_MEMORY) == CL_TRUE || (type & CL_DEVICE_TYPE_CPU) != 0;
  // Only 2.0+ devices answer; a 1.x device leaves it 0.
  info.svm = device_value<cl_device_svm_capabilities>(d, CL_DEVICE_SVM_CAPABILITIES);
  return info;
}

std::string gib(uint64_t bytes) { return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1u << 30)); }

}  // namespace

std::vector<ClPlatformInfo> discover_platforms() {
  std::vector<ClPlatformInfo> platforms;
  cl_uint count = 0;
  // CL_PLATFORM_NOT_FOUND_KHR (no ICD) and every other failure read as "nothing found".
  if (clGetPlatformIDs(0, nullptr, &count) != CL_SUCCESS || count == 0) return platforms;
  std::vector<cl_platform_id> ids(count);
  if (clGetPlatformIDs(count, ids.data(), nullptr) != CL_SUCCESS) return platforms;
  for (cl_platform_id p : ids) {
    ClPlatformInfo info;
    info.id = p;
    info.name = platform_string(p, CL_PLATFORM_NAME);
    info.vendor = platform_string(p, CL_PLATFORM_VENDOR);
    info.version = platform_string(p, CL_PLATFORM_VERSION);
    cl_uint devices = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &devices) == CL_SUCCESS && devices > 0) {
      std::vector<cl_device_id> device_ids(devices);
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, devices, device_ids.data(), nullptr) == CL_SUCCESS) {
        for (cl_device_id d : device_ids) info.devices.push_back(read_device(d));
      }
    }
    platforms.push_back(std::move(info));
  }
  return platforms;
}

std::string describe_device(const ClDeviceInfo& d) {
  std::string svm = "no SVM";
  if (d.svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM) {
    svm = "fine-grain system SVM";
  } else if (d.svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) {
    svm = "fine-grain buffer SVM";
  } else if (d.svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) {
    svm = "coarse-grain buffer SVM";
  }
  return fmt::format("{} [{}, {} compute units, {} MHz, {} global, {} max buffer, {} KiB local, {}{}{}, {}]",
                     d.name, d.type, d.compute_units, d.clock_mhz, gib(d.global_mem_bytes), gib(d.max_alloc_bytes),
                     d.local_mem_bytes / 1024, svm, d.host_unified_memory ? ", host-unified memory" : "",
                     d.available ? "" : ", NOT AVAILABLE", d.version);
}

std::string describe_platforms(const std::vector<ClPlatformInfo>& platforms) {
  if (platforms.empty()) {
    return "no OpenCL platform found (is an ICD installed? Debian: pocl-opencl-icd for the CPU, or the GPU "
           "vendor's; /etc/OpenCL/vendors lists the registered ones)\n";
  }
  std::string out;
  for (size_t p = 0; p < platforms.size(); ++p) {
    const ClPlatformInfo& pl = platforms[p];
    out += fmt::format("platform {}: {} ({}, {})\n", p, pl.name, pl.vendor, pl.version);
    if (pl.devices.empty()) out += "  (no devices)\n";
    for (size_t d = 0; d < pl.devices.size(); ++d) out += fmt::format("  device {}: {}\n", d, describe_device(pl.devices[d]));
  }
  return out;
}

Result<ClSelection> select_device(const std::vector<ClPlatformInfo>& platforms, std::string_view platform_selector,
                                  std::string_view device_selector) {
  if (platforms.empty()) return Result<ClSelection>(Status::device_error, "opencl: " + describe_platforms(platforms));
  // Digits are a device index where any platform has that many devices: a choice that does not hang
  // on which platform comes first.
  size_t most_devices = 0;
  for (const ClPlatformInfo& pl : platforms) most_devices = std::max(most_devices, pl.devices.size());
  for (uint32_t p = 0; p < platforms.size(); ++p) {
    if (!selector_matches(platform_selector, p, platforms.size(), {platforms[p].name, platforms[p].vendor})) continue;
    for (uint32_t d = 0; d < platforms[p].devices.size(); ++d) {
      const ClDeviceInfo& dev = platforms[p].devices[d];
      if (!dev.available || !dev.compiler_available || !selector_matches(device_selector, d, most_devices, {dev.name, dev.vendor})) continue;
      return ClSelection{p, d, platforms[p], dev};
    }
  }
  return Result<ClSelection>(Status::device_error,
                             fmt::format("opencl: no available device with a compiler matches platform \"{}\", "
                                         "device \"{}\"; found:\n{}",
                                         platform_selector, device_selector, describe_platforms(platforms)));
}

}  // namespace tandem::devices::opencl
