// What the ICD loader finds: every platform and device, described the way `clinfo -l` does, and the
// choice of one device by name or index (the [device.opencl] platform/device keys).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "abi/status.hpp"
#include "devices/opencl/cl.hpp"

namespace tandem::devices::opencl {

struct ClDeviceInfo {
  cl_device_id id = nullptr;
  std::string name;
  std::string vendor;
  std::string version;         // "OpenCL 3.0 PoCL ..."
  std::string driver_version;
  std::string type;            // "cpu", "gpu", "accelerator", "custom"
  bool available = false;
  bool compiler_available = false;
  uint32_t compute_units = 0;
  uint32_t clock_mhz = 0;
  uint64_t global_mem_bytes = 0;
  uint64_t max_alloc_bytes = 0;
  uint32_t base_align_bytes = 128;   // CL_DEVICE_MEM_BASE_ADDR_ALIGN: a sub-buffer's origin must be a multiple
  uint64_t local_mem_bytes = 0;
  size_t max_work_group_size = 0;
  bool host_unified_memory = false;  // CL_DEVICE_HOST_UNIFIED_MEMORY (1.x) or a CPU device
  cl_device_svm_capabilities svm = 0;  // 0: no shared virtual memory
};

struct ClPlatformInfo {
  cl_platform_id id = nullptr;
  std::string name;
  std::string vendor;
  std::string version;
  std::vector<ClDeviceInfo> devices;
};

// Every platform and device the ICD loader reports. A machine without an ICD (or with no platform)
// yields an empty list, never an error: the caller says what that means.
std::vector<ClPlatformInfo> discover_platforms();

// One line per platform and per device, `clinfo -l` style with the figures tandem uses:
//   platform 0: Portable Computing Language (The pocl project, OpenCL 3.0 PoCL 3.1 ...)
//     device 0: pthread-skylake-avx512 ... [cpu, 2 compute units, 2300 MHz, 7.6 GiB global, ...]
// "no OpenCL platform found (...)" when there is none.
std::string describe_platforms(const std::vector<ClPlatformInfo>& platforms);
std::string describe_device(const ClDeviceInfo& device);

struct ClSelection {
  uint32_t platform_index = 0;
  uint32_t device_index = 0;
  ClPlatformInfo platform;  // with all its devices
  ClDeviceInfo device;
};

// Picks a platform and a device: each selector is a decimal index or a case-insensitive part of the
// name ("" = the first). The first platform that has a matching, available device wins. Fails with a
// message that names what was asked for and lists what exists.
Result<ClSelection> select_device(const std::vector<ClPlatformInfo>& platforms, std::string_view platform_selector,
                                  std::string_view device_selector);

}  // namespace tandem::devices::opencl
