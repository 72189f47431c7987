#include "devices/kernel_models.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <cstdint>
#include <vector>

#include "base/clock.hpp"
#include "base/stats.hpp"

namespace tandem::devices {

namespace {

// Inputs for the start-up measurement of one function: `scale` 0 is a small job, 1 a larger one.
struct Probe {
  std::vector<uint8_t> a, b, c, table;
  funcs::Call call;
  uint64_t units = 0;
};

// `cap`, halved until s * s * per_element fits in max_bytes (at least 1).
uint64_t side_within(uint64_t cap, uint64_t per_element, uint64_t max_bytes) {
  uint64_t s = cap;
  while (s > 1 && s * s * per_element > max_bytes) s /= 2;
  return s;
}

// A probe buffer of `bytes`, filled with `fill`, starting 64-byte aligned as session memory does
// (client::kAllocAlign), so that the probes meet what jobs meet: a driver may treat a host pointer at
// malloc's 16 bytes otherwise (docs/results/opencl.md, run 9).
uint8_t* place(std::vector<uint8_t>& v, uint64_t bytes, uint8_t fill) {
  v.assign(bytes + 64, fill);
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(v.data()) + 63) / 64 * 64);
}

// The small probe (scale 0) or the large one (scale 1). The large one shrinks until no buffer is
// over `max_bytes`, but never below the small one (at most 4 KiB a buffer).
void make_probe(uint16_t function, int scale, Probe& p, uint64_t max_bytes) {
  funcs::Call& call = p.call;
  call = funcs::Call{};
  call.function = function;
  KernelId id{};
  (void)kernel_for_function(function, id);
  switch (id) {
    case KernelId::nop: p.units = 0; break;
    case KernelId::accumulate: {
      const uint64_t n = scale ? std::max<uint64_t>(std::min<uint64_t>(1u << 20, max_bytes / 4), 1024) : 1024;
      call.args = {0, n};
      call.buffers[0] = place(p.a, n * 4, 1);
      p.units = n * 4;
      break;
    }
    case KernelId::work: {
      p.units = scale ? 20'000'000 : 1000;
      call.args[0] = p.units;
      break;
    }
    case KernelId::sobel: {
      const uint64_t side = scale ? std::max<uint64_t>(side_within(512, 1, max_bytes), 32) : 32;
      call.args = {0, 0, side, side};
      call.buffers = {place(p.a, side * side, 7), place(p.b, side * side, 0)};
      p.units = side * side;
      break;
    }
    case KernelId::matmul: {
      const uint64_t d = scale ? std::max<uint64_t>(side_within(128, 4, max_bytes), 8) : 8;
      call.args = {0, 0, 0, TANDEM_MATMUL_DIMS(d, d, d)};
      call.buffers = {place(p.a, d * d * 2, 1), place(p.b, d * d * 2, 1), place(p.c, d * d * 4, 0)};
      p.units = d * d * d;
      break;
    }
    case KernelId::dct_quant: {
      const uint64_t blocks = scale ? std::max<uint64_t>(std::min<uint64_t>(8192, max_bytes / 128), 16) : 16;
      call.args = {0, 0, TANDEM_DCT_ARG(blocks, TANDEM_DCT_MODE_DCT_QUANTIZE), 0};
      call.buffers = {place(p.a, blocks * 64, 100), place(p.b, blocks * 128, 0),
                      place(p.table, 128, 1)};  // every table entry 257: valid
      p.units = blocks;
      break;
    }
  }
  call.workload = p.units;
}

}  // namespace

void measure_kernel_models(DeviceInfo& info, const std::function<bool(KernelId)>& select,
                           const std::function<bool(const funcs::Call&)>& run, uint64_t max_buffer_bytes,
                           const std::function<bool(const funcs::Call&)>& run_copied) {
  // The ways measured: in place (or the device's one way), and with copies when asked.
  std::vector<std::pair<const std::function<bool(const funcs::Call&)>*, std::array<model::AccelModel, TANDEM_FN_MAX>*>> ways;
  ways.emplace_back(&run, &info.models);
  if (run_copied) ways.emplace_back(&run_copied, &info.copy_models);
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    if (!info.loadable[fn->id]) continue;
    KernelId id{};
    (void)kernel_for_function(fn->id, id);
    model::AccelModel& m = info.models[fn->id];
    const int64_t s0 = now_ns();
    if (!select(id)) {  // its kernel object cannot be made: as if it had not built
      info.loadable.reset(fn->id);
      info.not_built.set(fn->id);
      continue;
    }
    m.reconfig_s = static_cast<double>(now_ns() - s0) * 1e-9;
    if (fn->id >= TANDEM_FN_WORK_BASE) {  // the variants share work's kernel and timing
      for (auto& [way, models] : ways) {
        (*models)[fn->id].throughput = (*models)[TANDEM_FN_WORK].throughput;
        (*models)[fn->id].latency_s = (*models)[TANDEM_FN_WORK].latency_s;
      }
      continue;
    }
    // Each sample runs every way in turn, so that a burst of load elsewhere hits them alike and the
    // difference between them (model::DeviceCopyCosts) stays honest.
    std::vector<std::array<double, 2>> times(ways.size(), {0, 0});
    Probe probes[2];
    for (int scale = 0; scale < 2; ++scale) {
      make_probe(fn->id, scale, probes[scale], max_buffer_bytes);
      std::vector<std::vector<double>> samples(ways.size());
      for (int repeat = 0; repeat < (scale == 0 ? 9 : 3); ++repeat) {
        for (size_t w = 0; w < ways.size(); ++w) {
          if (samples[w].size() < static_cast<size_t>(repeat)) continue;  // failed before
          const int64_t t0 = now_ns();
          if (!(*ways[w].first)(probes[scale].call)) continue;
          samples[w].push_back(static_cast<double>(now_ns() - t0) * 1e-9);
        }
      }
      for (size_t w = 0; w < ways.size(); ++w) {
        if (samples[w].empty()) continue;
        times[w][scale] = scale == 0 ? median(samples[w]) : *std::min_element(samples[w].begin(), samples[w].end());
      }
    }
    const uint64_t units = probes[1].units - probes[0].units;
    for (size_t w = 0; w < ways.size(); ++w) {
      model::AccelModel& out = (*ways[w].second)[fn->id];
      out.latency_s = times[w][0];
      const double extra = times[w][1] - times[w][0];
      out.throughput = fn->id == TANDEM_FN_NOP ? 0 : (extra > 0 && units > 0 ? static_cast<double>(units) / extra : 0);
    }
  }
}

}  // namespace tandem::devices
