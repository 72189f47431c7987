// Configuration of the emulated reconfigurable fabric and of the runtime around it, from TOML.
// A documented default (configs/default.toml) is compiled in and used when no file is given.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.hpp"
#include "engine/reconfig.hpp"
#include "model/accel_model.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::devices {

struct FunctionTiming {
  std::optional<double> speedup;     // X_a relative to the CPU's software throughput
  std::optional<double> throughput;  // X_a in units per second (overrides speedup)
  double latency_s = 0;              // D_a
  double reconfig_s = 0;
  double bandwidth_bps = 0;
};

// [device]: which backend runs the jobs, and how long loading a slot takes.
struct DeviceSettings {
  std::string kind = "emu";             // "emu" (emulated fabric) or "rtl" (Verilator models, docs/rtl.md)
  std::string reconfig_delay = "auto";  // "fixed" ([functions] reconfig_ms), "bitstream", "auto"
  uint32_t slot_rows = 1;               // bitstream: clock-region rows a slot spans
  double config_port_bps = 400e6;       // bitstream: ICAPE2, 32 bits at 100 MHz
  double reconfig_setup_s = 0;          // bitstream: fixed cost per reconfiguration
  double rtl_clock_hz = 200e6;          // rtl: fabric clock (device time = cycles / clock)
  uint64_t rtl_max_cycles = 100'000'000;  // rtl: a hardware job that runs longer fails
  // Whether RTL functions pay the partial-bitstream delay ("auto": on the rtl device only).
  bool bitstream_delay() const { return reconfig_delay == "bitstream" || (reconfig_delay == "auto" && kind == "rtl"); }
};

struct FabricConfig {
  uint32_t slots = 8;
  uint32_t queues = 0;
  uint32_t queue_capacity = 1024;
  double max_job_s = 0.1;
  std::vector<std::string> resident;           // function names loaded at start, slot by slot
  std::array<std::optional<FunctionTiming>, TANDEM_FN_MAX> timing{};  // per function id
  DeviceSettings device;                       // the [device] table
};

struct DispatcherConfig {
  double idle_spin_s = 100e-6;  // poll this long after the last packet before sleeping on doorbells
  uint32_t batch = 64;          // packets taken from one ring before looking at the next
  int cpu = -1;                 // pin the dispatcher thread (-1: no pinning)
};

struct MonitorSettings {
  double period_s = 1e-3;           // monitoring period P (thesis 5.4.6)
  double available_bandwidth = 0;   // BW for Eq 5.1, bytes/s; 0 = unknown
};

// The reconfiguration manager (thesis 5.4.7) run every monitoring period.
struct ReconfigSettings {
  std::string policy = "none";   // none | algorithm1 | sticky | reactive (engine/reconfig.hpp)
  double c_reconfig_s = 0.5e-3;  // C_RECONFIG, seconds of SW work
  double c_replicate_s = -1;     // C_REPLICATE, seconds of SW work; < 0 = P / 2
  double history = 0.25;         // sticky: demand decay per period
  double min_gain = 2.0;         // sticky: hysteresis
  double react_idle_s = 20e-3;   // reactive: a slot idle this long (or one reconfiguration delay) may be taken
};

struct DaemonSettings {
  std::string socket;                 // "" = the default socket path
  std::vector<uint32_t> allowed_uids; // besides the daemon's own uid and root
  uint32_t max_sessions = 256;
  uint32_t queues_per_session = 16;
  uint64_t registered_bytes_per_session = uint64_t{1} << 30;
  uint32_t jobs_in_flight_per_session = 4096;
  uint32_t max_queue_capacity = 1u << 16;
  uint32_t connections_per_uid = 128;  // connections one user may hold (sessions and not yet hello)
  uint32_t hello_timeout_ms = 1000;    // a connection that has not said hello by then is closed
  uint32_t output_buffer_kib = 256;    // replies queued for a client; one that lets more pile up is dropped
};

struct Config {
  FabricConfig fabric;
  DaemonSettings daemon;
  DispatcherConfig dispatcher;
  MonitorSettings monitor;
  std::string calibration_file;  // [calibration] file: the partitioner's calibration ("" = look elsewhere)
  ReconfigSettings reconfig;
  std::string source;  // file name or "<built-in default>"
};

// The built-in default configuration text (configs/default.toml).
std::string_view default_config_text();

// Parses TOML text. Throws tandem::Error(invalid_argument) with a message naming the bad key.
Config parse_config(std::string_view text, std::string_view source_name);
// Reads and parses a file; an empty path gives the built-in default.
Config load_config(const std::string& path);

// Resolves each function's timing into an accelerator model: speedup x the CPU's software
// throughput of that function on this machine: `cpu_rate(function)` when given and positive (a
// calibrated X_c), else funcs::software_throughput (measured once per process). On the rtl device the
// functions with an accelerator take its nominal timing at the fabric clock (rtl_catalog.hpp) and
// the others have none; with the bitstream delay, RTL functions reconfigure in the time a slot
// sized for the largest accelerator takes to load (docs/rtl.md).
std::array<model::AccelModel, TANDEM_FN_MAX> resolve_models(const FabricConfig& fabric,
                                                            const std::function<double(uint16_t)>& cpu_rate = {});

// The reconfiguration policy's parameters: thresholds from [reconfig], P from [monitor], and each
// function's X_c (measured on this machine) to turn the thresholds' SW time into work units.
engine::ReconfigParams reconfig_params(const Config& config);

// Engine parameters implied by the fabric configuration.
engine::EngineConfig engine_config(const FabricConfig& fabric,
                                   const std::array<model::AccelModel, TANDEM_FN_MAX>& models);

}  // namespace tandem::devices
