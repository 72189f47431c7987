// The discrete-event driver: tandem's own engine, monitor, reconfiguration policy and partitioner in
// virtual time, with simulated CPUs that time-slice simulated applications (docs/sim.md).
//
// Events are ordered by (time, sequence number), nothing reads a clock or the host's speed, and all
// randomness comes from the seeds, so one configuration always gives byte-identical results.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "engine/monitor.hpp"
#include "engine/partitioner.hpp"
#include "engine/reconfig.hpp"
#include "devices/device_tlb.hpp"
#include "model/access_model.hpp"
#include "sim/workload.hpp"

namespace tandem::sim {

using engine::Time;

struct SimConfig {
  // ---- CPUs ----
  uint32_t cpus = 2;
  Time time_slice_ns = 10'000'000;  // Linux's default slice (Table 5.3)
  double cpu_hz = 667e6;            // nominal: one work unit is one cycle of this CPU (thesis Zedboard)
  // ---- accelerators ----
  uint32_t slots = 8;
  double speedup = 4;               // X_a / X_c of every accelerator; 0 = no benefit
  double da_s = 2e-6;               // D_a: initiation + first data + return of one job
  double oc_s = 1e-6;               // O_c: CPU time of one job (submit + collect + combine)
  double o0_s = 0.1e-6;             // O_0: CPU time of calling the SW function with no work
  std::vector<engine::FunctionId> resident;  // loaded in slots 0.. at t = 0, no delay (static cluster)
  // Per-function accelerator and call costs that differ from the figures above (< 0: not set).
  struct FunctionCosts {
    double speedup = -1;
    double da_s = -1;
    double oc_s = -1;
    double o0_s = -1;
    double reconfig_s = -1;  // its reconfiguration delay (< 0: reconfig_ns)
  };
  std::map<engine::FunctionId, FunctionCosts> function_costs;
  // ---- reconfiguration ----
  Time period_ns = 1'000'000;       // monitoring period P
  Time reconfig_ns = -1;            // reconfiguration delay; < 0 = P (Table 5.3)
  std::string policy = "algorithm1";  // config::make_policy spec ("name" or "name:key=value:...")
  engine::ReconfigParams reconfig;  // thresholds (period and X_c are filled in from the above)
  // ---- data access (docs/access.md): how a job's data reaches its slot ----
  // Off while bytes_per_unit is 0: data moves for free (the thesis's world, and every study before
  // the access methods). On, each call chooses its method as libtandem does (client/access.cc: in
  // place on session memory, else the faster predicted of copy and scatter-gather), jobs take the
  // method's device-side time and a copy costs the calling CPU its staging copy.
  struct Access {
    std::string method = "auto";  // "auto" | "zero_copy" | "copy" | "sg"
    double bytes_per_unit = 0;    // bytes a work unit moves, in and out together
    bool registered = true;       // the calls' buffers are session memory (zero-copy reaches them)
    bool remote = false;          // the engine in another process (tandemd): scatter-gather's mover
    model::TransferModel transfer;
    model::HostAccessCosts host;
    bool enabled() const { return bytes_per_unit > 0; }
  } access;
  // ---- address translation (issue 12, docs/sim.md): a PHASE/V session's device TLB ----
  // "aisle" (the default): jobs reach registered windows through a constant offset; no TLB, no walks.
  // "phasev": every read of a job goes through the device's TLB (devices::DeviceTlb, the emulated
  // fabric's own: shared or per slot, LRU sets, one ASID per application); a miss walks the page tables
  // for walk_reads device reads, charged to the job's time in its slot as the emulated fabric charges it.
  struct Translation {
    std::string mode = "aisle";   // "aisle" | "phasev"
    devices::TlbSettings tlb;     // entries, ways, per_slot, walk_reads, read_s (streaming reads)
    double bytes_per_unit = 16;   // bytes one work unit reads (list_walk: one 16-byte node)
    // Reads at random in the call's buffer (pointer chasing: one lookup per unit, a read costs the
    // function's per-unit time) or in order (streaming: one lookup per page, a read costs read_s).
    bool random = true;
    bool enabled() const { return mode == "phasev"; }
  } translation;
  // ---- applications ----
  engine::PartitionerConfig partitioner = default_partitioner();
  // Repetition perturbation (a real machine's noise): 0 = none; otherwise the initial run-queue order
  // and each CPU's first time-slice phase are drawn from this seed.
  uint64_t jitter_seed = 0;
  bool trace = false;               // record the timeline (SimResult::trace)
  // Measured progress (issue 15): like libtandem's driver, an app times its software steps in virtual
  // time (time slices included) and the partitioner plans the rest of the call with that rate.
  bool measured_cpu_rate = false;
  // libtandem's automatic mode where a caller has no core to itself (client/partitioned_call.cc): the
  // call is not split; all of it goes to the accelerators (CPU chunks until a replica comes) where Eq
  // 4.3a predicts that faster than software at the CPU share the app gets (model::cpu_share: the apps
  // inside calls and engine_cores against the CPUs), else all of it to software. Off: the thesis's
  // partitioner, which splits whatever the CPUs' load.
  bool split_needs_free_core = false;
  // The CPUs a real engine's dispatcher keeps busy (0 to cpus), which the simulated engine itself does
  // not: the applications' work units run at (cpus - engine_cores) / cpus of a CPU's speed, and the
  // share above counts them. 0: the engine costs no CPU (the thesis's world).
  double engine_cores = 0;

  static engine::PartitionerConfig default_partitioner();
};

// One segment of the timeline (Fig 5.13/5.14), in virtual ns.
struct TraceSpan {
  enum Kind : uint8_t { call, job, configure, resident } kind = call;
  uint32_t lane = 0;            // app (call), slot (job, configure, resident)
  engine::FunctionId function = 0;
  Time begin = 0;
  Time end = 0;
  double sw_only_s = 0;         // call: its SW-only duration on an idle CPU
  uint32_t app = 0;             // job: the submitting app
};

struct SimResult {
  Time makespan = 0;                 // the last application's completion
  std::vector<Time> app_finish;
  uint64_t events = 0;               // state transitions processed (see docs/sim.md)
  uint64_t total_units = 0;          // work in the call lists
  uint64_t sw_units = 0;             // processed by run_sw steps
  uint64_t hw_units = 0;             // processed by completed jobs
  uint64_t sw_units_unaccelerated = 0;  // SW units run while the call's function had no replica
  uint64_t calls = 0;
  uint64_t jobs_completed = 0;
  uint64_t jobs_cancelled = 0;
  uint64_t demand_packets = 0;
  uint64_t reconfigurations = 0;
  uint64_t context_switches = 0;
  Time slot_busy_ns = 0;             // sum over slots
  Time cpu_busy_ns = 0;              // sum over CPUs
  std::vector<uint64_t> slot_jobs;   // jobs each slot completed
  std::array<uint64_t, TANDEM_ACCESS_COUNT_> calls_by_method{};  // access on: calls per chosen method
  uint64_t bytes_moved = 0;          // access on: bytes completed jobs moved
  uint64_t tlb_hits = 0;             // translation phasev: device TLB lookups that hit
  uint64_t tlb_misses = 0;           // translation phasev: lookups that walked the page tables
  // Per call, in completion order: its latency (from when it could start, i.e. its arrival or the end
  // of the application's previous call, to its end) and its SW-only time on an idle CPU.
  std::vector<Time> call_latency;
  std::vector<Time> call_sw_ns;
  std::vector<Time> app_latency_ns;  // per application: sum of its calls' latencies
  std::vector<Time> app_sw_ns;       // per application: sum of its calls' SW-only times
  std::vector<TraceSpan> trace;
};

class Simulator {
 public:
  Simulator(const SimConfig& config, std::vector<AppSpec> apps);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  SimResult run();

  // The engine's configuration implied by SimConfig (models from speedup, D_a and P).
  static engine::EngineConfig engine_config(const SimConfig& config, const std::vector<AppSpec>& apps);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Convenience: one simulation of `apps` under `config`.
SimResult simulate(const SimConfig& config, const std::vector<AppSpec>& apps);

// The same applications on the CPUs alone (every call SW-only): the normaliser of every figure.
SimResult simulate_sw_baseline(SimConfig config, const std::vector<AppSpec>& apps);

}  // namespace tandem::sim
