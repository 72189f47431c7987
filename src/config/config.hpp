// The configuration layer: TOML -> typed configuration, layered over the built-in default
// (configs/default.toml, compiled in). A file overrides only the keys it names; unknown keys and
// out-of-range values are errors that name the key (tandem::Error, invalid_argument).
//
// Each device kind owns its section: `[device.emu]`, `[device.rtl]` (and later `[device.opencl]`,
// `[device.cuda]`); `[device] kinds` lists the devices a runtime drives, their slots numbered in that
// order. The device factory (src/devices/device_factory.cc) builds each kind from its settings.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/reconfig.hpp"
#include "model/energy_model.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::config {

// [functions.<name>]: the accelerator timing the emulated fabric (and the simulator) gives a function.
struct FunctionTiming {
  std::optional<double> speedup;     // X_a relative to the CPU's software throughput
  std::optional<double> throughput;  // X_a in units per second (overrides speedup)
  double latency_s = 0;              // D_a
  double reconfig_s = 0;
  double bandwidth_bps = 0;
};

// How loading a slot is timed: each function's reconfig_ms ("fixed"), or the time the partial
// bitstream of a slot sized for the largest RTL accelerator takes through the configuration port
// ("bitstream"; docs/rtl.md). The port model is shared by every device kind that uses it.
struct BitstreamSettings {
  uint32_t slot_rows = 1;         // clock-region rows a slot spans
  double config_port_bps = 400e6; // ICAPE2: 32 bits at 100 MHz
  double reconfig_setup_s = 0;    // fixed cost per reconfiguration
};

// [device.emu]: the emulated reconfigurable fabric (timing from [functions], reference results), and
// what moving data costs it (docs/access.md): a host link, scatter-gather, local memory, copy engines.
struct EmuSettings {
  uint32_t slots = 8;
  std::vector<std::string> resident;     // functions loaded at start, one per slot in slot order
  std::string reconfig_delay = "fixed";  // "fixed" | "bitstream" (functions with an RTL accelerator)
  double link_bps = 16e9;                // host <-> device, per direction (a PCIe 4.0 x16 link)
  double dma_setup_s = 0.5e-6;           // per zero-copy or copy job that moves data
  double sg_bps = 11.2e9;                // scatter-gather streaming (seed 001: AGSG/AGD = 250/350)
  double sg_setup_s = 1e-6;              // fetching a job's page list
  double sg_page_s = 50e-9;              // per page-list entry
  uint64_t local_bytes = uint64_t{256} << 20;  // device-local memory (0: none)
  double local_bps = 50e9;               // local memory bandwidth, per job
  uint32_t copy_engines = 2;             // shared by the slots to fill and drain local memory
  double copy_engine_bps = 12e9;
  double copy_engine_setup_s = 1e-6;
  // The device TLB that PHASE/V sessions' accesses go through (devices/device_tlb.hpp).
  uint32_t tlb_entries = 64;             // seed 004's HA-TLB: 64 entries, direct mapped
  uint32_t tlb_ways = 1;
  std::string tlb_scope = "shared";      // "shared" by the slots | "per_slot"
  double tlb_walk_reads = 1.5;           // a page walk's cost in device memory reads
  double tlb_read_s = 100e-9;            // one device read of host memory (streaming jobs' walks)
  // How long a job waits for its client's answer to a service request before it fails with TIMEOUT.
  double service_timeout_s = 1.0;
};

// [device.rtl]: the Verilog accelerators of rtl/, simulated with Verilator (docs/rtl.md).
struct RtlSettings {
  uint32_t slots = 5;
  std::vector<std::string> resident;         // default: the five accelerators (set by the parser)
  std::string reconfig_delay = "bitstream";  // "fixed" | "bitstream"
  double clock_hz = 200e6;                   // a job's device time is its cycle count at this clock
  uint64_t max_cycles = 100'000'000;         // a hardware job that runs longer fails (DEVICE_ERROR)
  int worker_nice = 10;                      // nice value of the simulation threads (one per slot)
};

// [device.opencl]: a real OpenCL device through the ICD loader (docs/devices.md).
struct OpenclSettings {
  uint32_t slots = 4;                   // in-order command queues
  std::vector<std::string> resident;    // functions loaded at start, one per slot in slot order
  std::string platform;                 // index or part of the name; "" = the first with a usable device
  std::string device;                   // likewise within the platform
  std::string access = "copy";          // "copy" | "zero_copy" | "job" (each job's own method)
  double job_timeout_s = 10;            // a job running longer completes with TIMEOUT; its slot leaves service
  uint32_t reduction_groups = 0;        // work-groups of a reduction job; 0 = 8 per compute unit
  // Batching: small accumulate jobs handed over in one turn of the dispatcher's loop run as one
  // launch (copy access only). At most this many jobs per launch (1 = off), each of at most this many bytes.
  uint32_t batch_max_jobs = 32;
  uint32_t batch_max_job_bytes = 65536;
  // Where a batch's gathered inputs and sums live: "auto" = fine-grain buffer SVM on a device that has
  // it and shares the host's memory (measured on PoCL), else copies; "svm" = SVM wherever the device
  // offers it; "copies" = a write and a read around the kernel.
  std::string batch_staging = "auto";
  // Device-local memory: buffers in the device's own memory that stay there between chained jobs,
  // filled and drained by copy engines (at most the device's largest allocation; 0: none).
  uint64_t local_bytes = uint64_t{256} << 20;
  uint32_t copy_engines = 2;
  // Fault injection, for testing recovery: every n-th job (or batch) launched is terminated by the
  // driver (its last command waits on an event set to an error status). 0: never.
  uint32_t fail_every_launches = 0;
  uint32_t fail_allocations_over_kib = 0;  // testing: a staging buffer over this fails (0: never)
  // A folder whose <kernel>.cl files (accumulate.cl, sobel.cl, ...) replace the embedded OpenCL C
  // sources, e.g. versions tuned for a device; a kernel without a file keeps the embedded one. "": none.
  std::string kernel_dir;
};

// [device.cuda]: an NVIDIA GPU through the CUDA runtime (built when the toolkit was found).
struct CudaSettings {
  uint32_t slots = 4;                   // streams
  std::vector<std::string> resident;
  std::string device;                   // index or part of the name; "" = the first
  std::string mode = "launch";          // "launch" (a kernel launch per job) | "persistent" (resident block per slot)
  std::string access = "copy";          // "copy" | "zero_copy"
  double job_timeout_s = 10;
  uint32_t reduction_groups = 0;        // blocks of a reduction job; 0 = 4 per multiprocessor
  // Device-local memory: one cudaMalloc allocation (at most half the GPU's memory; 0: none), filled
  // and drained by copy engines (streams of their own).
  uint64_t local_bytes = uint64_t{256} << 20;
  uint32_t copy_engines = 2;
  // Persistent mode: each slot's pinned staging per buffer of a job, allocated before its resident block
  // starts (nothing may be freed while one runs, so it never grows); a larger buffer is refused (job_too_large).
  uint64_t persistent_staging_bytes = uint64_t{8} << 20;
};

// [device]
struct DeviceSettings {
  std::vector<std::string> kinds = {"emu"};  // devices this runtime drives, slots numbered in this order
  BitstreamSettings bitstream;
  EmuSettings emu;
  RtlSettings rtl;
  OpenclSettings opencl;
  CudaSettings cuda;
  bool uses(std::string_view kind) const {
    for (const auto& k : kinds) {
      if (k == kind) return true;
    }
    return false;
  }
};

// [fabric]: the engine's queues, shared by every device.
struct FabricSettings {
  uint32_t queues = 0;  // function job queues; 0 = as many as slots
  uint32_t queue_capacity = 1024;
  double max_job_s = 0.1;
};

struct DispatcherSettings {
  double idle_spin_s = 100e-6;  // poll this long after the last packet before sleeping on doorbells
  uint32_t batch = 64;          // packets taken from one ring before looking at the next
  int cpu = -1;                 // pin the dispatcher thread (-1: no pinning)
  bool avoid_caller_cpus = true;  // move off the CPUs high-level calls run on (Dispatcher::step_off_caller_cpus)
};

struct MonitorSettings {
  double period_s = 1e-3;           // monitoring period P (thesis 5.4.6)
  double available_bandwidth = -1;  // BW for Eq 5.1, bytes/s; 0 = unknown; < 0 = measured
};

// The reconfiguration manager (thesis 5.4.7) run every monitoring period.
struct ReconfigSettings {
  std::string policy = "none";   // none | algorithm1 | sticky | reactive, optionally ":key=value:..."
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

// [trace]: per-job trace records (docs/tracing.md).
struct TraceSettings {
  bool enabled = false;                 // record from start-up (tandemd --trace); else `tandem trace start`
  uint32_t dispatcher_records = 1u << 16;  // the dispatcher's ring (a power of two)
  uint32_t client_threads = 8;          // traced threads per session (0: no client records)
  uint32_t client_records = 1u << 12;   // records per client thread's ring (a power of two)
  uint64_t max_records = 1u << 18;      // records tandemd keeps between exports; beyond, dropped and counted
  double drain_s = 10e-3;               // how often the collector empties the rings
};

// [metrics]: the Prometheus endpoint (docs/tracing.md).
struct MetricsSettings {
  std::string listen;         // "host:port" to serve /metrics on ("" = no endpoint); loopback unless named
  double min_interval_s = 0.1;  // a scrape within this long of the last one is served the same figures
};

struct Config {
  FabricSettings fabric;
  model::EnergyModel energy;  // [energy]
  std::array<std::optional<FunctionTiming>, TANDEM_FN_MAX> functions{};  // [functions.<name>], by id
  DeviceSettings device;
  DaemonSettings daemon;
  DispatcherSettings dispatcher;
  MonitorSettings monitor;
  std::string calibration_file;  // [calibration] file: the partitioner's calibration ("" = look elsewhere)
  ReconfigSettings reconfig;
  TraceSettings trace;
  MetricsSettings metrics;
  std::string source;  // file name or "<built-in default>"
};

// The built-in default configuration text (configs/default.toml).
std::string_view default_config_text();

// Parses TOML text over the built-in default. Throws tandem::Error(invalid_argument) naming the key.
Config parse_config(std::string_view text, std::string_view source_name);
// Reads and parses a file; an empty path gives the built-in default.
Config load_config(const std::string& path);
// One TOML document of `base` with `upper`'s keys set over it (tables merged key by key, any other
// value replaced): a tool's own settings over a user's file, which TOML would refuse as a second
// [table] of the same name. Throws tandem::Error(invalid_argument) naming the source of a syntax error.
std::string overlay_config_text(std::string_view base, std::string_view base_source, std::string_view upper,
                                std::string_view upper_source);

// A function's timing from [functions], else the catalog's defaults.
FunctionTiming function_timing(const Config& config, uint16_t function);

// ---- the reconfiguration policy ----
// A policy spec: "name" or "name:key=value:key=value" (experiments override parameters without a
// file). Names: none, algorithm1, sticky, reactive (sticky with react = 1). Throws tandem::Error
// (invalid_argument) naming the bad name or parameter.
struct PolicySpec {
  std::string name;
  engine::ReconfigParams params;
};
PolicySpec parse_policy(std::string_view spec, const engine::ReconfigParams& base);
// The names parse_policy accepts, "none" first.
std::vector<std::string> policy_names();
// The policy the spec names with its parameters (nullptr for "none"). Set-up code: throws like parse_policy.
std::unique_ptr<engine::ReconfigPolicy> make_policy(std::string_view spec, const engine::ReconfigParams& base);

// The reconfiguration policy's parameters: thresholds from [reconfig], P from [monitor], and each
// function's X_c (measured on this machine) to turn the thresholds' SW time into work units.
engine::ReconfigParams reconfig_params(const Config& config);

}  // namespace tandem::config
