#include "devices/rtl/calibrate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "devices/rtl/rtl_jobs.hpp"

namespace tandem::devices::rtl {
namespace {

constexpr uint32_t kSobelCalibrationWidth = 640;

class Rng {  // splitmix64: deterministic data, independent of the standard library's engines
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t s_;
};

struct SizedJob {
  uint64_t units = 0;
  RtlJob job;
};

Result<SizedJob> make_job(RtlFunction f, uint64_t size, uint32_t sobel_lanes, Rng& rng) {
  SizedJob sj;
  switch (f) {
    case RtlFunction::accumulate: {
      std::vector<int32_t> v(size / 4);
      for (auto& x : v) x = static_cast<int32_t>(rng.next());
      sj.units = v.size() * 4;
      sj.job = accumulate_job(v);
      return sj;
    }
    case RtlFunction::sobel: {
      const uint32_t height = static_cast<uint32_t>(
          std::max<uint64_t>(1, (size + kSobelCalibrationWidth - 1) / kSobelCalibrationWidth));
      std::vector<uint8_t> px(size_t{kSobelCalibrationWidth} * height);
      for (auto& p : px) p = static_cast<uint8_t>(rng.next());
      auto job = sobel_job(px, kSobelCalibrationWidth, height, sobel_lanes);
      if (!job) return {job.status(), job.message()};
      sj.units = px.size();
      sj.job = std::move(job).value();
      return sj;
    }
    case RtlFunction::matmul: {
      const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(size, kMatmulMaxDim));
      std::vector<int16_t> a(size_t{n} * n), b(size_t{n} * n);
      for (auto& x : a) x = static_cast<int16_t>(rng.next());
      for (auto& x : b) x = static_cast<int16_t>(rng.next());
      auto job = matmul_job(a, b, n, n, n);
      if (!job) return {job.status(), job.message()};
      sj.units = uint64_t{n} * n * n;
      sj.job = std::move(job).value();
      return sj;
    }
    case RtlFunction::dct_quant: {
      std::vector<SampleBlock8x8> blocks(size);
      for (auto& b : blocks) {
        for (auto& s : b) s = static_cast<uint8_t>(rng.next());
      }
      QuantValues table{};
      for (auto& q : table) q = static_cast<uint16_t>(1 + rng.next() % 255);
      sj.units = size;
      sj.job = dct_quantize_job(blocks, table);
      return sj;
    }
    case RtlFunction::priority_queue: {
      // Pushes and pops in a random mix that keeps the queue below its capacity.
      std::vector<uint64_t> cmds(size);
      uint64_t queued = 0;
      for (auto& c : cmds) {
        const bool push = queued == 0 || (queued < kPqCapacity && rng.next() % 2 == 0);
        const uint64_t r = rng.next();
        c = push ? pq_command_word(static_cast<uint8_t>(PqOpcode::push), static_cast<uint32_t>(r),
                                   static_cast<uint8_t>(r >> 32), (r >> 40) & 1, false)
                 : pq_command_word(static_cast<uint8_t>(PqOpcode::pop), 0, 0, false, true);
        queued = push ? queued + 1 : queued - 1;
      }
      sj.units = size;
      sj.job = pq_job(cmds, true);
      return sj;
    }
    case RtlFunction::list_walk:
      return {Status::invalid_argument, "list_walk reads client memory: calibrate-rtl covers the stream accelerators"};
  }
  return {Status::invalid_argument, "unknown RTL function"};
}

}  // namespace

std::string_view calibration_unit(RtlFunction f) {
  switch (f) {
    case RtlFunction::accumulate: return "bytes";
    case RtlFunction::sobel: return "pixels";
    case RtlFunction::matmul: return "MACs";
    case RtlFunction::dct_quant: return "blocks";
    case RtlFunction::priority_queue: return "commands";
    case RtlFunction::list_walk: return "nodes";
  }
  return "unit";
}

std::vector<uint64_t> default_calibration_sizes(RtlFunction f) {
  switch (f) {
    case RtlFunction::accumulate: return {8, 64, 512, 4096, 32768};
    case RtlFunction::sobel: return {640 * 4, 640 * 30, 640 * 120, 640 * 480};
    case RtlFunction::matmul: return {4, 16, 32, 64, 100};
    case RtlFunction::dct_quant: return {1, 8, 64, 256, 1024};
    case RtlFunction::priority_queue: return {1, 16, 256, 4096};
    case RtlFunction::list_walk: return {};
  }
  return {};
}

Result<LinearFit> fit_cycles(std::span<const CalibrationPoint> points) {
  const double n = static_cast<double>(points.size());
  double sx = 0, sy = 0;
  for (const auto& p : points) {
    sx += static_cast<double>(p.units);
    sy += static_cast<double>(p.total_cycles);
  }
  if (points.size() < 2) return {Status::invalid_argument, "need at least two points"};
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0, syy = 0;
  for (const auto& p : points) {
    const double dx = static_cast<double>(p.units) - mx;
    const double dy = static_cast<double>(p.total_cycles) - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx <= 0) return {Status::invalid_argument, "need two different sizes"};
  LinearFit fit;
  fit.cycles_per_unit = sxy / sxx;
  fit.fixed_cycles = my - fit.cycles_per_unit * mx;
  fit.r_squared = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1.0;
  return fit;
}

Result<Calibration> derive_calibration(RtlFunction f, double clock_hz,
                                       std::vector<CalibrationPoint> points) {
  if (!(clock_hz > 0)) return {Status::invalid_argument, "clock_hz must be positive"};
  auto fit = fit_cycles(points);
  if (!fit) return {fit.status(), fit.message()};
  Calibration c;
  c.function = f;
  c.unit = calibration_unit(f);
  c.clock_hz = clock_hz;
  c.points = std::move(points);
  c.fit = fit.value();
  c.throughput_units_per_s = c.fit.cycles_per_unit > 0 ? clock_hz / c.fit.cycles_per_unit : 0;
  c.latency_s = std::max(0.0, c.fit.fixed_cycles) / clock_hz;
  return c;
}

Result<Calibration> calibrate(RtlFunction f, const RtlOptions& options,
                              std::span<const uint64_t> sizes) {
  std::vector<uint64_t> chosen(sizes.begin(), sizes.end());
  if (chosen.empty()) chosen = default_calibration_sizes(f);
  auto slot = make_rtl_accelerator(f, options);
  if (!slot) return {slot.status(), slot.message()};
  RtlAccelerator& acc = *slot.value();
  Rng rng(0x7a4d3e2full + static_cast<uint64_t>(f));
  std::vector<CalibrationPoint> points;
  for (uint64_t size : chosen) {
    auto sj = make_job(f, size, acc.ports().in_beat_bytes, rng);
    if (!sj) return {sj.status(), sj.message()};
    const auto t0 = std::chrono::steady_clock::now();
    const RtlResult r = acc.run(sj->job);
    const std::chrono::duration<double> host = std::chrono::steady_clock::now() - t0;
    if (r.status != Status::ok) {
      return {r.status,
              std::string(to_string(f)) + " at size " + std::to_string(size) + ": " + r.message};
    }
    points.push_back({sj->units, r.cycles, r.total_cycles, host.count()});
  }
  return derive_calibration(f, options.clock_hz, std::move(points));
}

std::string timing_config_layer(std::span<const Calibration> calibrations) {
  std::string out;
  char line[1024];
  const double clock_mhz = calibrations.empty() ? 0 : calibrations.front().clock_hz / 1e6;
  std::snprintf(line, sizeof line,
                "# RTL-derived accelerator timing: X_a and D_a from Verilator cycle counts at a %.6g MHz\n"
                "# fabric clock, written by `tandem calibrate-rtl`. A configuration layer: use it as the\n"
                "# configuration (--config, TANDEM_CONFIG) or copy its tables into yours.\n",
                clock_mhz);
  out += line;
  for (const Calibration& c : calibrations) {
    std::snprintf(line, sizeof line,
                  "\n[functions.%s]\n"
                  "throughput = %.6e   # %s/s: %.6g cycles each (fit over %zu sizes, r^2 = %.6f)\n"
                  "latency_us = %.6g   # %.6g cycles\n",
                  std::string(to_string(c.function)).c_str(), c.throughput_units_per_s,
                  std::string(c.unit).c_str(), c.fit.cycles_per_unit, c.points.size(), c.fit.r_squared,
                  c.latency_s * 1e6, std::max(0.0, c.fit.fixed_cycles));
    out += line;
  }
  return out;
}

}  // namespace tandem::devices::rtl
