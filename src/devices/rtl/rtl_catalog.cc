#include "devices/rtl/rtl_catalog.hpp"

#include <algorithm>
#include <array>

#include "tandem/tandem_abi.h"

namespace tandem::devices::rtl {

namespace {

// Fits and areas as measured (docs/rtl.md, docs/results/rtl_area.md); tests/rtl checks both
// against a fresh calibration and the area table, so they cannot drift silently.
constexpr std::array<RtlCatalogEntry, 5> kCatalog{{
    {"accumulate", TANDEM_FN_ACCUMULATE, "bytes", 0.125, 9, {391, 425, 0, 0}},
    {"sobel", TANDEM_FN_SOBEL, "pixels", 41.0 / 640.0, 53, {2765, 1390, 4, 0}},
    {"matmul", TANDEM_FN_MATMUL, "MACs", 0.254938, 314.3, {1032, 832, 5, 5}},
    {"dct_quant", TANDEM_FN_DCT_QUANT, "blocks", 16, 48, {6680, 4083, 0, 24}},
    {"priority_queue", TANDEM_FN_PRIORITY_QUEUE, "commands", 1, 11, {1742, 726, 0, 0}},
}};

}  // namespace

// Cycles at the default memory (20-cycle reads), every lookup a TLB hit: 46 per node + 17 per job, exact
// (test RtlListWalk.CyclesPerNodeAreTheNominalFit; docs/rtl.md,
// "list_walk"). Area as measured (docs/results/rtl_area.md): its 64-entry TLB is most of the flip-flops.
constexpr RtlCatalogEntry kListWalkAccelerator{"list_walk", TANDEM_FN_LIST_WALK, "nodes", 46, 17, {4808, 6179, 0, 0}};

std::span<const RtlCatalogEntry> rtl_catalog() { return kCatalog; }

const RtlCatalogEntry* find_rtl_entry(uint16_t function) {
  for (const RtlCatalogEntry& e : kCatalog) {
    if (e.function == function) return &e;
  }
  return nullptr;
}

const RtlCatalogEntry* find_rtl_entry(std::string_view name) {
  for (const RtlCatalogEntry& e : kCatalog) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

model::AccelModel nominal_model(const RtlCatalogEntry& entry, double clock_hz) {
  model::AccelModel m;
  m.throughput = entry.cycles_per_unit > 0 ? clock_hz / entry.cycles_per_unit : 0;
  m.latency_s = std::max(0.0, entry.fixed_cycles) / clock_hz;
  return m;
}

SlotResources largest_tenant() {
  SlotResources r;
  auto widen = [&r](const RtlCatalogEntry& e) {
    r.luts = std::max(r.luts, e.area.luts);
    r.flip_flops = std::max(r.flip_flops, e.area.flip_flops);
    r.bram36 = std::max(r.bram36, e.area.bram36);
    r.dsps = std::max(r.dsps, e.area.dsps);
  };
  for (const RtlCatalogEntry& e : kCatalog) widen(e);
  widen(kListWalkAccelerator);  // loadable on the rtl device, so a slot must fit it too
  return r;
}

double slot_reconfiguration_s(uint32_t rows, const ConfigPort& port) {
  return reconfiguration_delay_s(largest_tenant(), std::max(rows, 1u), FabricGeometry{}, port);
}

double bitstream_delay_s(const config::BitstreamSettings& b) {
  return slot_reconfiguration_s(b.slot_rows, ConfigPort{4, b.config_port_bps / 4, b.reconfig_setup_s});
}

std::array<model::AccelModel, TANDEM_FN_MAX> rtl_models(const config::Config& config) {
  const config::RtlSettings& r = config.device.rtl;
  const bool bitstream = r.reconfig_delay == "bitstream";
  const double bitstream_s = bitstream_delay_s(config.device.bitstream);
  std::array<model::AccelModel, TANDEM_FN_MAX> models{};
  auto set = [&](const RtlCatalogEntry& e) {
    const config::FunctionTiming t = config::function_timing(config, e.function);
    model::AccelModel& m = models[e.function];
    m = nominal_model(e, r.clock_hz);
    m.reconfig_s = bitstream ? bitstream_s : t.reconfig_s;
    m.bandwidth_bps = t.bandwidth_bps;
  };
  for (const RtlCatalogEntry& e : kCatalog) set(e);
  set(kListWalkAccelerator);
  return models;
}

}  // namespace tandem::devices::rtl
