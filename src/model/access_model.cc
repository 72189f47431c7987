#include "model/access_model.hpp"

#include <algorithm>
#include <cmath>

#include "tandem/tandem_abi.h"

namespace tandem::model {

std::optional<uint8_t> access_method_from_name(std::string_view name) {
  if (name == "zero_copy") return TANDEM_ACCESS_ZERO_COPY;
  if (name == "copy") return TANDEM_ACCESS_COPY;
  if (name == "sg" || name == "scatter_gather") return TANDEM_ACCESS_SCATTER_GATHER;
  if (name == "local" || name == "device_local") return TANDEM_ACCESS_DEVICE_LOCAL;
  return std::nullopt;
}

std::string_view access_method_name(uint8_t method) {
  switch (method) {
    case TANDEM_ACCESS_ZERO_COPY: return "zero_copy";
    case TANDEM_ACCESS_COPY: return "copy";
    case TANDEM_ACCESS_SCATTER_GATHER: return "sg";
    case TANDEM_ACCESS_DEVICE_LOCAL: return "local";
  }
  return "?";
}

double TransferModel::job_s(uint8_t method, uint64_t host_bytes, uint64_t local_bytes, uint32_t pages,
                            double compute_s) const {
  double setup = 0, stream = 0;
  const double host = static_cast<double>(host_bytes);
  if (host_bytes > 0) {
    if (method == TANDEM_ACCESS_SCATTER_GATHER) {
      const double bps = sg_bps > 0 ? sg_bps : link_bps;
      setup = sg_setup_s + sg_page_s * pages;
      stream = bps > 0 ? host / bps : 0;
    } else {  // zero-copy and copy: DMA from host memory (the copy's staging buffer is host memory too)
      setup = dma_setup_s;
      stream = link_bps > 0 ? host / link_bps : 0;
    }
  }
  if (local_bytes > 0 && local_bps > 0) stream += static_cast<double>(local_bytes) / local_bps;
  return setup + std::max(compute_s, stream);
}

DeviceCopyCosts DeviceCopyCosts::between(const AccelModel& in_place, const AccelModel& copied) {
  DeviceCopyCosts c;
  if (!(in_place.latency_s > 0) || !(copied.latency_s > 0)) return c;
  c.measured = true;
  c.setup_s = copied.latency_s - in_place.latency_s;
  if (in_place.throughput > 0 && copied.throughput > 0) c.unit_s = 1.0 / copied.throughput - 1.0 / in_place.throughput;
  return c;
}

bool DeviceCopyCosts::copies(uint8_t method) {
  return method == TANDEM_ACCESS_COPY || method == TANDEM_ACCESS_SCATTER_GATHER;
}

double DeviceCopyCosts::in_place_s(double device_s, double units) const {
  if (!measured) return device_s;
  return std::max(device_s - setup_s - unit_s * std::max(0.0, units), 0.1 * device_s);
}

CostParams with_access(const CostParams& p, uint8_t method, double bytes_per_unit, const TransferModel& t,
                       const HostAccessCosts& h, bool remote, const DeviceCopyCosts& device_copy) {
  CostParams q = p;
  const double b = std::max(0.0, bytes_per_unit);
  if (b == 0) return q;
  double setup = 0, unit_s = p.xa > 0 ? 1.0 / p.xa : 0;
  if (device_copy.measured && DeviceCopyCosts::copies(method)) {
    // The measured difference, on top of the live in-place figures; never below a tenth of them (the
    // two measurements are each a few runs: a noisy difference must not make a job free).
    if (unit_s > 0) unit_s = std::max(unit_s + device_copy.unit_s, 0.1 * unit_s);
    setup = std::max(device_copy.setup_s, -0.9 * p.da);
  }
  switch (method) {
    case TANDEM_ACCESS_SCATTER_GATHER: {
      const double bps = t.sg_bps > 0 ? t.sg_bps : t.link_bps;
      setup += t.sg_setup_s;
      if (bps > 0) unit_s = std::max(unit_s, b / bps);
      unit_s += b / kPageBytes * t.sg_page_s;
      if (remote) {  // tandemd gathers and scatters the pages before and after the device's part
        setup += h.handoff_s;
        if (h.gather_bps > 0) unit_s += b / h.gather_bps;
        unit_s += b / kPageBytes * h.gather_page_s;
      }
      break;
    }
    case TANDEM_ACCESS_DEVICE_LOCAL:
      if (t.local_bps > 0) unit_s = std::max(unit_s, b / t.local_bps);
      break;
    default:  // zero-copy, copy: DMA from host memory
      setup += t.dma_setup_s;
      if (t.link_bps > 0) unit_s = std::max(unit_s, b / t.link_bps);
      if (method == TANDEM_ACCESS_COPY && h.memcpy_bps > 0) unit_s += b / h.memcpy_bps;  // into and out of staging
      break;
  }
  q.da = p.da + setup;
  q.xa = unit_s > 0 ? 1.0 / unit_s : p.xa;
  return q;
}

uint8_t choose_access(std::span<const uint8_t> candidates, const CostParams& p, const LiveMetrics& m, uint32_t jobs,
                      double units, double bytes_per_unit, const TransferModel& transfer, const HostAccessCosts& host,
                      bool remote, const DeviceCopyCosts& device_copy, double margin) {
  uint8_t best = candidates.empty() ? uint8_t{TANDEM_ACCESS_ZERO_COPY} : candidates[0];
  double best_time = INFINITY;
  for (uint8_t method : candidates) {
    const Plan plan = plan_call(with_access(p, method, bytes_per_unit, transfer, host, remote, device_copy), m, jobs, units);
    const double t = plan.accelerate ? plan.predicted : plan.sw_only;
    if (best_time == INFINITY ? t < best_time : t < best_time * (1 - margin)) {
      best_time = t;
      best = method;
    }
  }
  return best;
}

}  // namespace tandem::model
