// A per-component energy model (issue 11; docs/access.md, "Energy"): what a job costs in joules on the
// device side (a slot busy for its device time, bytes over the host link and in local memory, copy
// engines), and what the CPU spends (busy seconds). The defaults are the seeds' published figures,
// cited where they are set (configs/default.toml, [energy]); measured CPU energy (RAPL) replaces the
// CPU part where the machine exposes it (tools do that; this is the model). Pure arithmetic.
#pragma once

#include <cstdint>

namespace tandem::model {

struct EnergyModel {
  double cpu_busy_w = 15.0;         // one core busy
  double cpu_idle_w = 2.0;          // one core idle
  double slot_busy_w = 1.0;         // an accelerator slot running a job (seed 003 Table IV: 0.94-1.01 W)
  double slot_idle_w = 0.12;        // configured but idle (seed 001: static share of 5.063 W over its groups)
  double copy_engine_w = 0.6;       // a copy engine moving data (seed 003: GPPU 0.61 W)
  double link_j_per_byte = 80e-12;  // host link, per byte moved (PCIe at about 10 pJ/bit)
  double local_j_per_byte = 520e-12;  // device DDR, per byte (seed 001: 1.663 W of DDR3 I/O at 3.2 GB/s)

  // Device-side energy of one job: its slot busy for `device_s`, `host_bytes` over the link and
  // `local_bytes` through local memory. A copy engine's transfer (`copy_engine`) draws its own power.
  double job_j(double device_s, uint64_t host_bytes, uint64_t local_bytes, bool copy_engine = false) const {
    return (copy_engine ? copy_engine_w : slot_busy_w) * device_s + link_j_per_byte * static_cast<double>(host_bytes) +
           local_j_per_byte * static_cast<double>(local_bytes);
  }
  double cpu_j(double busy_s) const { return cpu_busy_w * busy_s; }
};

}  // namespace tandem::model
