// What moving a job's data costs, per access method (docs/access.md), as pure arithmetic: the device
// side (a link, scatter-gather page lists, local memory), the host side (staging copies, gathering a
// client's pages), and how both fold into the cost model's X_a and D_a, so that a call's method and
// split are chosen together. Used by the emulated fabric (device time), libtandem (the choice) and the
// simulator. Methods are the TANDEM_ACCESS_* values.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "model/accel_model.hpp"
#include "model/cost_model.hpp"

namespace tandem::model {

// TANDEM_ACCESS_* by name: "zero_copy", "copy", "sg" (or "scatter_gather"), "local" (or "device_local").
std::optional<uint8_t> access_method_from_name(std::string_view name);
std::string_view access_method_name(uint8_t method);  // "zero_copy", "copy", "sg", "local"; "?" if none

// The device side of moving data.
struct TransferModel {
  double link_bps = 0;     // host <-> device interconnect, per direction, per job (0: free)
  double dma_setup_s = 0;  // zero-copy and copy: setting up the DMA of a job that moves data
  double sg_bps = 0;       // scatter-gather: streaming from a page list (0: link_bps)
  double sg_setup_s = 0;   // scatter-gather: fetching the page list
  double sg_page_s = 0;    // scatter-gather: per page-list entry walked
  double local_bps = 0;    // device-local memory, per job (0: free)

  // A job's time beyond D_a: its data streams through the accelerator while it computes
  // (`compute_s` = W / X_a), so the longer of transfer and computation counts, after the set-up of
  // the method that reaches its `host_bytes`; `local_bytes` stream from local memory. A job that moves
  // nothing pays no set-up (a no-op stays a no-op).
  double job_s(uint8_t method, uint64_t host_bytes, uint64_t local_bytes, uint32_t pages, double compute_s) const;
};

// The host side, measured on the machine (or by `tandem calibrate`).
struct HostAccessCosts {
  double memcpy_bps = 0;      // the caller's copy into and out of staging
  double gather_bps = 0;      // process_vm_readv/writev through a page list
  double gather_page_s = 0;   // per page of it
  double handoff_s = 20e-6;   // tandemd: the dispatcher handing a job to its mover and back
};

inline constexpr double kPageBytes = 4096;

// A device that copies a job's data into its own memory and back (OpenCL with access = "job": a copy
// or scatter-gather job is written to the device, run there and read back; a zero-copy job is run on
// the host buffers in place) measures each function both ways. What copying costs beyond working in
// place, per function, is the difference of the two models; it applies to the methods the device
// copies. Not measured (the default): every method costs the device the same.
struct DeviceCopyCosts {
  bool measured = false;
  double unit_s = 0;   // per work unit: 1 / X_a copied - 1 / X_a in place (negative: copying is faster)
  double setup_s = 0;  // per job: D_a copied - D_a in place

  // From the two measured models; not measured when either lacks its latency (a function the device
  // does not hold, or a device that measured one way only). A throughput of 0 counts as no per-unit
  // term (nop).
  static DeviceCopyCosts between(const AccelModel& in_place, const AccelModel& copied);
  // Whether a job with `method` is copied by such a device.
  static bool copies(uint8_t method);
  // What a job of `units` that took `device_s` copied would have taken in place: the difference taken
  // off, never below a tenth of it (what the live estimates learn from such a job).
  double in_place_s(double device_s, double units) const;
};

// The cost parameters of a call's jobs whose data moves with `method`: `bytes_per_unit` bytes per work
// unit, the engine in another process (`remote`: scatter-gather pays the mover's hand-off and copy)
// or in this one. D_a gains the set-up; X_a becomes the rate of the slower of computation and
// transfer, plus whatever copy is serial with the job (staging, gathering), plus what the device's
// own copy costs (`device_copy`, for the methods it copies). A copy the caller does not stage (the
// device copies from session memory itself) is priced with a `host.memcpy_bps` of 0.
CostParams with_access(const CostParams& p, uint8_t method, double bytes_per_unit, const TransferModel& transfer,
                       const HostAccessCosts& host, bool remote, const DeviceCopyCosts& device_copy = {});

// Among `candidates`, the method whose plan for a call of `units` units (plan_call with the method's
// parameters, `bytes_per_unit`) is predicted fastest; ties go to the earlier candidate, and a later one
// must be predicted faster by more than the fraction `margin` (the noise of the figures that tell the
// two apart). Deterministic.
uint8_t choose_access(std::span<const uint8_t> candidates, const CostParams& p, const LiveMetrics& m, uint32_t jobs,
                      double units, double bytes_per_unit, const TransferModel& transfer, const HostAccessCosts& host,
                      bool remote, const DeviceCopyCosts& device_copy = {}, double margin = 0);

// The margin a device's copied way must win by over working in place: the two are each measured once,
// in a few runs, when the device starts: on PoCL, accumulate's X_a in place over X_a copied ranged
// 0.98-1.62 over five start-ups (copying is never the faster way there).
inline constexpr double kDeviceCopyMargin = 0.15;

}  // namespace tandem::model
