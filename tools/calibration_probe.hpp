// Measuring the cost-model parameters of one function (thesis Table 4.3) on this machine: X_c and
// O_0 on the CPU, X_a, D_a and O_c for the current device. Used by `tandem calibrate` and by
// `tandem experiment partition`, which calibrates in-process before it sweeps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/runtime.hpp"

namespace tandem::tools {

struct ProbeOptions {
  bool quick = false;        // fewer sizes and samples (seconds, for tests)
  int client_cpu = -1;       // pin the measuring thread (-1: no pinning)
  int dispatcher_cpu = -1;   // pin the embedded dispatcher (-1: no pinning)
  std::string config_text;   // configuration of the runtime measured (TOML; "" = built-in default)
  std::string config_source = "<calibration configuration>";  // what its errors name (the --config file)
  std::function<void(const std::string&)> progress;  // one line per phase; may be empty
  std::string device_label;  // the device the progress lines name ("" = the probed kind)
};

struct SizePoint {
  uint64_t units = 0;
  double median_s = 0;
  size_t samples = 0;
};

// What was measured for one function.
struct FunctionProbe {
  model::CostParams params;
  std::vector<SizePoint> software;   // T_sw(N): high-level calls in software
  std::vector<SizePoint> hardware;   // T_hw(N): high-level calls with one job for all N
  std::vector<SizePoint> hardware_visible;  // the same until the result was visible (X_a, D_a fit these)
  uint64_t overhead_units = 0;       // O_c: a call of this many SW units plus one job of `granularity`
  double overhead_call_s = 0;        //   its median time
  double overhead_sw_s = 0;          //   the SW-only call of the same SW units
  model::AccelModel device_model;    // the device's own timing model, for comparison
};

// The functions `tandem calibrate` can measure: work counted in bytes (accumulate), cycles (work),
// pixels (sobel), multiply-adds (matmul) or blocks (dct_quant).
bool calibratable(const funcs::FunctionInfo& fn);

// The buffers of a function's probe calls, for calls of up to `largest_units` units: random int32s
// (accumulate, with the reference sum over the first units), random samples and matrices for the
// others, and their outputs. `work` needs none.
struct ProbeData {
  explicit ProbeData(uint64_t bytes);  // accumulate's values alone
  ProbeData(const funcs::FunctionInfo& fn, uint64_t largest_units);
  std::vector<int32_t> values;
  std::vector<uint64_t> input, output;  // 8-byte aligned: every element type of the kernels fits
  std::vector<uint16_t> table;          // dct_quant's quantization table
  int64_t reference(uint64_t units) const;
};

// A call of `units` work units of `fn` over `data`: accumulate the first units/4 values; work
// `units` cycles; sobel an image 256 pixels wide and matmul C (m x 16) = A (m x 16) B (16 x 16), both
// in whole rows of 256 units; dct_quant `units` blocks of samples, transformed and quantized.
funcs::Call make_call(const funcs::FunctionInfo& fn, uint64_t units, const ProbeData& data);

// Opens an embedded runtime for measurements: `config_text` plus the dispatcher pin, calibration in
// memory (may be null), high-level calls waiting by spinning (the thesis measured polling).
std::unique_ptr<client::Runtime> open_probe_runtime(const ProbeOptions& options, const client::Calibration* calibration,
                                                    client::Mode mode, const client::PartitionTuning& tuning);

// Devices that can be calibrated. "emu": the embedded emulated fabric. "rtl": the Verilated
// accelerators' cycle counts give X_a and D_a (the CPU side and the round trip as for emu); needs a
// build with the RTL device (TANDEM_HAVE_RTL_DEVICE, see tools/CMakeLists.txt), else it fails saying so.
std::vector<std::string> probe_devices();

// Measures `fn` on the CPU and on `device`. Throws tandem::Error on failure (set-up code).
FunctionProbe probe_function(const funcs::FunctionInfo& fn, const std::string& device, const ProbeOptions& options);

// The functions `tandem calibrate` measures by default (those with work units), and the function ids
// a measurement of `fn` also stands for (work -> work0..work15, which share its timing by default).
std::vector<const funcs::FunctionInfo*> calibratable_functions();
std::vector<uint16_t> calibration_aliases(const funcs::FunctionInfo& fn);

// Host name and the current UTC time, for the calibration file's header.
std::string host_name();
std::string utc_now();

// Scatter-gather's host side as tandemd really pays it: a private tandemd, round trips of scatter-gather
// jobs from the heap against zero-copy jobs from session memory at one page and at 1 MiB, the device
// model's own difference taken off; fills `costs.handoff_s` (the dispatcher handing a job to its mover
// and back) and `costs.gather_bps` (the mover's gathering, per byte, page costs included: an in-process
// process_vm_readv of warm pages underestimates the daemon's gathering of another process's pages). False if it could not
// be measured (`costs` unchanged).
bool measure_remote_gather(bool quick, model::HostAccessCosts& costs);

}  // namespace tandem::tools
