// The start-up measurement of a data-parallel device's cost model (OpenCL, CUDA): for every function
// the device can run, D_a from a small job's median round trip and X_a from a larger job's extra time
// over it, both measured end to end on one of its slots.
#pragma once

#include <cstdint>
#include <functional>

#include "devices/device.hpp"
#include "devices/kernel_plan.hpp"
#include "funcs/function.hpp"

namespace tandem::devices {

// Fills info.models (throughput, latency_s, reconfig_s) for every function info.loadable marks.
// `select(kernel)` makes the kernel ready on the measuring slot (its time is the reconfiguration
// delay; false: the function is not loadable after all), `run(call)` runs one whole job (false: failed).
// The larger probe of each function shrinks until no buffer exceeds `max_buffer_bytes` (a CUDA
// persistent slot's pinned staging), so that a device with a per-job limit still gets a measured X_a;
// never below the small probe, so a limit under 4 KiB is not met.
// `run_copied` (optional): runs a job with every buffer copied, on a device whose `run` works in place;
// it fills info.copy_models (throughput, latency_s) alike, each sample taken right after `run`'s.
void measure_kernel_models(DeviceInfo& info, const std::function<bool(KernelId)>& select,
                           const std::function<bool(const funcs::Call&)>& run,
                           uint64_t max_buffer_bytes = UINT64_MAX,
                           const std::function<bool(const funcs::Call&)>& run_copied = {});

}  // namespace tandem::devices
