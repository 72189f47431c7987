// What the runtime knows about the Verilog accelerators without simulating them: which catalog
// function each one implements, its nominal timing (a linear fit of its cycle counts, as
// `tandem calibrate-rtl` measures it) and its area (Yosys, docs/results/rtl_area.md). Pure data and
// arithmetic: the emulated fabric and the simulator use it, and it builds without Verilator.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "config/config.hpp"
#include "devices/rtl/reconfig_model.hpp"
#include "model/accel_model.hpp"

namespace tandem::devices::rtl {

struct RtlCatalogEntry {
  std::string_view name;   // the accelerator's and the catalog function's name
  uint16_t function = 0;   // catalog function id (TANDEM_FN_*)
  std::string_view unit;   // one work unit of the function (what calibration counts)
  // total cycles of one job ~ fixed_cycles + cycles_per_unit * units (register-bus cycles included;
  // sobel at width 640, matmul on square matrices, dct_quant chained: see docs/rtl.md)
  double cycles_per_unit = 0;
  double fixed_cycles = 0;
  SlotResources area;      // Yosys synth_xilinx (7-series), default parameters
};

// The stream accelerators (calibrated by `tandem calibrate-rtl`, areas in docs/results/rtl_area.md).
std::span<const RtlCatalogEntry> rtl_catalog();

// list_walk, which reads client memory through its own TLB: its cycles per node depend on the memory
// latency and the TLB's hit rate, so its nominal fit is for the default memory (20-cycle reads) with
// every lookup a hit; docs/rtl.md has the measured figures. Loadable on the rtl device like the others.
extern const RtlCatalogEntry kListWalkAccelerator;
const RtlCatalogEntry* find_rtl_entry(uint16_t function);  // nullptr: no accelerator (list_walk included)
const RtlCatalogEntry* find_rtl_entry(std::string_view name);

// X_a = clock / cycles_per_unit and D_a = fixed_cycles / clock (reconfig_s and bandwidth left 0).
model::AccelModel nominal_model(const RtlCatalogEntry& entry, double clock_hz);

// A slot must hold any accelerator it may be loaded with: the largest of each resource.
SlotResources largest_tenant();

// The reconfiguration delay of a slot sized for largest_tenant(), spanning `rows` clock-region rows.
double slot_reconfiguration_s(uint32_t rows, const ConfigPort& port);
// The same for the configured slot rows and configuration port ([device] slot_rows, config_port_mbps,
// reconfig_setup_us).
double bitstream_delay_s(const config::BitstreamSettings& bitstream);

// The RTL device's timing of every function: the accelerators' nominal models at [device.rtl]'s clock,
// reconfiguring in the bitstream delay (or each function's reconfig_ms with reconfig_delay = "fixed");
// functions without an accelerator have none (all zero).
std::array<model::AccelModel, TANDEM_FN_MAX> rtl_models(const config::Config& config);

}  // namespace tandem::devices::rtl
