#include "devices/kernel_models.hpp"

#include <algorithm>
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
      p.a.assign(n * 4, 1);
      call.args = {0, n};
      call.buffers[0] = p.a.data();
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
      p.a.assign(side * side, 7);
      p.b.assign(side * side, 0);
      call.args = {0, 0, side, side};
      call.buffers = {p.a.data(), p.b.data()};
      p.units = side * side;
      break;
    }
    case KernelId::matmul: {
      const uint64_t d = scale ? std::max<uint64_t>(side_within(128, 4, max_bytes), 8) : 8;
      p.a.assign(d * d * 2, 1);
      p.b.assign(d * d * 2, 1);
      p.c.assign(d * d * 4, 0);
      call.args = {0, 0, 0, TANDEM_MATMUL_DIMS(d, d, d)};
      call.buffers = {p.a.data(), p.b.data(), p.c.data()};
      p.units = d * d * d;
      break;
    }
    case KernelId::dct_quant: {
      const uint64_t blocks = scale ? std::max<uint64_t>(std::min<uint64_t>(8192, max_bytes / 128), 16) : 16;
      p.a.assign(blocks * 64, 100);
      p.b.assign(blocks * 128, 0);
      p.table.assign(128, 1);  // every entry 257: valid
      call.args = {0, 0, TANDEM_DCT_ARG(blocks, TANDEM_DCT_MODE_DCT_QUANTIZE), 0};
      call.buffers = {p.a.data(), p.b.data(), p.table.data()};
      p.units = blocks;
      break;
    }
  }
  call.workload = p.units;
}

}  // namespace

void measure_kernel_models(DeviceInfo& info, const std::function<bool(KernelId)>& select,
                           const std::function<bool(const funcs::Call&)>& run, uint64_t max_buffer_bytes) {
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    if (!info.loadable[fn->id]) continue;
    KernelId id{};
    (void)kernel_for_function(fn->id, id);
    model::AccelModel& m = info.models[fn->id];
    const int64_t s0 = now_ns();
    if (!select(id)) {
      info.loadable.reset(fn->id);
      continue;
    }
    m.reconfig_s = static_cast<double>(now_ns() - s0) * 1e-9;
    if (fn->id >= TANDEM_FN_WORK_BASE) {  // the variants share work's kernel and timing
      const model::AccelModel& w = info.models[TANDEM_FN_WORK];
      m.throughput = w.throughput;
      m.latency_s = w.latency_s;
      continue;
    }
    double times[2] = {0, 0};
    Probe probes[2];
    for (int scale = 0; scale < 2; ++scale) {
      make_probe(fn->id, scale, probes[scale], max_buffer_bytes);
      std::vector<double> samples;
      for (int repeat = 0; repeat < (scale == 0 ? 9 : 3); ++repeat) {
        const int64_t t0 = now_ns();
        if (!run(probes[scale].call)) break;
        samples.push_back(static_cast<double>(now_ns() - t0) * 1e-9);
      }
      times[scale] = samples.empty() ? 0 : *std::min_element(samples.begin(), samples.end());
      if (scale == 0 && !samples.empty()) times[0] = median(samples);
    }
    m.latency_s = times[0];
    const double extra = times[1] - times[0];
    const uint64_t units = probes[1].units - probes[0].units;
    m.throughput = fn->id == TANDEM_FN_NOP ? 0 : (extra > 0 && units > 0 ? static_cast<double>(units) / extra : 0);
  }
}

}  // namespace tandem::devices
