// The OpenCL C kernels of the catalog (kernels/*.cl), compiled into the binary by CMake: nothing is
// looked up on disk at run time. One program per function, so a function whose program fails to
// build is the only one lost.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "devices/kernel_plan.hpp"

namespace tandem::devices::opencl {

struct ClKernelSource {
  KernelId id;
  std::string_view file;         // "accumulate.cl"
  std::string_view kernel_name;  // "tandem_accumulate"
  std::string_view text;
};

std::span<const ClKernelSource> kernel_sources();
const ClKernelSource& kernel_source(KernelId id);

// Compile-time constants every program is built with (-D options): the work-group size of the 1-D
// kernels (a power of two) and matmul's tile side.
inline constexpr uint32_t kClWorkGroup = 64;
inline constexpr uint32_t kClMatmulTile = 16;

}  // namespace tandem::devices::opencl
