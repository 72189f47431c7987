// Calibration of the RTL accelerators' timing: run each at several sizes, record (size, cycles)
// and fit total_cycles = fixed + per_unit * units by least squares. At the fabric clock this gives
// the thesis's accelerator throughput X_a = clock / per_unit (units per second) and initiation
// latency D_a = fixed / clock (seconds), which the emulated fabric and the simulator can load
// instead of guessed numbers (`tandem calibrate-rtl`).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "abi/status.hpp"
#include "devices/rtl/rtl_accelerator.hpp"

namespace tandem::devices::rtl {

struct CalibrationPoint {
  uint64_t units = 0;         // work in the function's unit (calibration_unit)
  uint64_t cycles = 0;        // start to completion
  uint64_t total_cycles = 0;  // including the register-bus cycles around the job
  double host_s = 0;          // wall time the simulation took on this machine (not modelled time)
};

struct LinearFit {
  double fixed_cycles = 0;
  double cycles_per_unit = 0;
  double r_squared = 0;
};

struct Calibration {
  RtlFunction function = RtlFunction::accumulate;
  std::string_view unit;
  double clock_hz = 0;
  std::vector<CalibrationPoint> points;
  LinearFit fit;
  double throughput_units_per_s = 0;  // X_a
  double latency_s = 0;               // D_a
};

// The catalog function's work unit: "bytes" (accumulate: 4 per int32), "pixels" (sobel, images
// 640 wide), "MACs" (matmul, square matrices: n^3), "blocks" (dct_quant, DCT then quantizer),
// "commands" (priority_queue).
std::string_view calibration_unit(RtlFunction f);
std::vector<uint64_t> default_calibration_sizes(RtlFunction f);

// Least squares over total_cycles; needs two distinct unit counts (invalid_argument otherwise).
Result<LinearFit> fit_cycles(std::span<const CalibrationPoint> points);

// X_a and D_a from measured points at `clock_hz`.
Result<Calibration> derive_calibration(RtlFunction f, double clock_hz,
                                       std::vector<CalibrationPoint> points);

// Runs `f` on deterministic pseudo-random data at each size (default_calibration_sizes if empty)
// in a fresh slot, fails if any run fails, and fits. Bit-exactness is checked by tests/rtl.
Result<Calibration> calibrate(RtlFunction f, const RtlOptions& options = {},
                              std::span<const uint64_t> sizes = {});

// A configuration layer (TOML) that gives each calibrated function its RTL-derived timing:
// [functions.<name>] throughput = X_a (units/s), latency_us = D_a. Pass it as the configuration
// (--config, TANDEM_CONFIG) or copy its tables: the emulated fabric then charges these times.
std::string timing_config_layer(std::span<const Calibration> calibrations);

}  // namespace tandem::devices::rtl
