#include "calibration_probe.hpp"

#include "daemon_launcher.hpp"
#include "rt/completion.hpp"
#include "base/clock.hpp"
#include "base/stats.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <random>

#include <fmt/format.h>

#include "client/partitioned_call.hpp"
#include "devices/device_factory.hpp"
#include "devices/emu/emu_device.hpp"
#include "config/config.hpp"
#include "support/measure.hpp"

#if defined(TANDEM_HAVE_RTL_DEVICE)
#include "devices/rtl/calibrate.hpp"
#endif

namespace tandem::tools {

namespace {

struct Plan {
  std::vector<uint64_t> software_sizes;  // bytes or cycles, besides 0
  std::vector<uint64_t> hardware_sizes;  // besides the granularity
  size_t rounds = 0;        // at least this many rounds of each group
  size_t max_rounds = 0;    // at most this many (bounds the memory for samples)
  double budget_s = 0;      // and rounds until this much time has passed: a burst of load from other
                            // tenants then spoils a small share of the samples, not all of them
  size_t warmup = 0;
};

Plan plan_for(const funcs::FunctionInfo& fn, bool quick) {
  Plan p;
  // The range of the case study (8 B to 1 MiB) for bytes, and likewise for pixels and multiply-adds;
  // cycles cover 1 us to 0.3 ms at 3 GHz; blocks (64 samples each) a 256th of the bytes' range.
  const bool bytes = fn.units != "cycles";
  if (quick) {
    p.software_sizes = {4096, 65536};
    // A job of 64 KiB can take less than its own latency (PoCL: 28 us of work after 26 us), so on a
    // loaded machine the two smaller jobs alone may not show X_a: a large one makes the slope plain.
    p.hardware_sizes = {4096, 65536, 1048576};
    p.rounds = 40;
    p.max_rounds = 40;
    p.warmup = 5;
  } else {
    // Log-spaced like the sizes the model predicts (the case study's 8 B..1 MiB).
    p.software_sizes = bytes ? std::vector<uint64_t>{256, 1024, 4096, 16384, 65536, 262144, 1048576}
                             : std::vector<uint64_t>{1024, 4096, 16384, 65536, 262144, 1048576};
    p.hardware_sizes = bytes ? std::vector<uint64_t>{1024, 4096, 16384, 65536, 262144, 1048576}
                             : std::vector<uint64_t>{4096, 16384, 65536, 262144, 1048576};
    p.rounds = 1000;
    p.max_rounds = 60000;
    p.budget_s = 3.0;
    p.warmup = 50;
  }
  if (fn.units == "blocks") {
    for (auto* sizes : {&p.software_sizes, &p.hardware_sizes}) {
      for (uint64_t& n : *sizes) n = std::max<uint64_t>(n / 256, 1);
    }
  }
  return p;
}

// matmul's probe calls: B (16 x 16 int16) at the start of the input, A after it.
constexpr uint64_t kMatmulB = 16 * 16 * 2;

// The step of a probe's sizes: the function's granularity, or a whole row of the image (sobel, 256
// pixels wide) or of C (matmul, 256 multiply-adds), so that every call is a whole image or matrix.
uint64_t probe_step(const funcs::FunctionInfo& fn) {
  if (fn.id == TANDEM_FN_SOBEL || fn.id == TANDEM_FN_MATMUL) return 256;
  return fn.granularity;
}


// The slope b of T = a + b N through the points, for a given intercept a, that minimises the
// relative residuals sum(((a + b N - T) / T)^2): the model predicts T from its measured fixed cost
// (O_0, D_a) and a throughput, and is judged by its relative error at every size alike. 0 if the
// points do not determine it.
double fit_slope(const std::vector<SizePoint>& pts, double a) {
  double num = 0, den = 0;
  for (const SizePoint& p : pts) {
    if (!(p.median_s > 0) || p.units == 0) continue;
    const double x = static_cast<double>(p.units) / p.median_s;
    num += x * (p.median_s - a) / p.median_s;
    den += x * x;
  }
  return den > 0 ? num / den : 0;
}

// One kind of call in an interleaved measurement.
struct Subject {
  Subject(const funcs::Call& c, int64_t e, bool chk, engine::Partitioner* p = nullptr, bool keep = true)
      : call(c), expected(e), check(chk), partitioner(p), recorded(keep) {}
  funcs::Call call;
  int64_t expected = 0;
  bool check = false;
  engine::Partitioner* partitioner = nullptr;  // null: the runtime's own policy
  bool recorded = true;                        // false: only keeps the device busy like real calls do
  std::vector<double> samples;                 // call time, s
  std::vector<double> visible;                 // call time less the CPU's work after the last job was seen, s
};

// Rounds of every subject once each (A B C A B C ...), so that drift hits all of them alike: the
// plan's minimum of rounds, and more until its time budget has passed (up to its maximum).
void measure_interleaved(client::Runtime& rt, const funcs::FunctionInfo& fn, std::vector<Subject>& subjects,
                         const Plan& plan) {
  const bench::TickClock& clock = bench::TickClock::get();
  const size_t warmup = plan.warmup;
  const uint64_t start = clock.now();
  const uint64_t budget = clock.ticks_for_ns(plan.budget_s * 1e9);
  for (Subject& s : subjects) s.samples.reserve(plan.rounds);
  for (size_t r = 0; r < warmup + plan.max_rounds; ++r) {
    if (r >= warmup + plan.rounds && clock.now() - start >= budget) break;
    for (Subject& s : subjects) {
      int64_t value = 0;
      client::CallReport report;
      const uint64_t t0 = clock.now();
      const Status st = s.partitioner != nullptr
                            ? client::run_partitioned(rt, fn, s.call, *s.partitioner, value, &report)
                            : rt.run(fn, s.call, value, &report);
      const uint64_t t1 = clock.now();
      if (st != Status::ok) throw Error(st, "a calibration call failed: " + std::string(to_string(st)));
      if (s.check && value != s.expected) throw Error(Status::device_error, "a calibration call returned a wrong result");
      if (r < warmup || !s.recorded) continue;
      const double t = clock.to_ns(t1 - t0) * 1e-9;
      s.samples.push_back(t);
      s.visible.push_back(t - std::max(0.0, report.driver_s - report.hw_done_s));
    }
  }
}

std::unique_ptr<engine::Partitioner> make_partitioner(const model::CostParams& p, engine::PartitionPolicy policy,
                                                      double alpha = 0) {
  engine::PartitionerConfig c;
  c.policy = policy;
  c.fixed_alpha = alpha;
  c.jobs_per_round = 1;
  c.max_outstanding_jobs = 4;
  return std::make_unique<engine::Partitioner>(p, c);
}

void say(const ProbeOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

}  // namespace

ProbeData::ProbeData(uint64_t bytes) : values((bytes + 3) / 4) {
  std::mt19937 rng(42);
  for (int32_t& v : values) v = static_cast<int32_t>(rng());
}

ProbeData::ProbeData(const funcs::FunctionInfo& fn, uint64_t largest_units)
    : ProbeData(fn.units == "bytes" ? largest_units : 0) {
  // Input and output bytes per unit: sobel 1 pixel in and out; matmul B (16x16 int16), then a row of A
  // (16 int16) and of C (16 int32) per 256 units; dct_quant 64 samples in and 64 int16 out per block.
  uint64_t in_bytes = 0, out_bytes = 0;
  if (fn.id == TANDEM_FN_SOBEL) {
    in_bytes = out_bytes = largest_units;
  } else if (fn.id == TANDEM_FN_MATMUL) {
    in_bytes = kMatmulB + (largest_units + 255) / 256 * 32;
    out_bytes = (largest_units + 255) / 256 * 64;
  } else if (fn.id == TANDEM_FN_DCT_QUANT) {
    in_bytes = largest_units * 64;
    out_bytes = largest_units * 128;
    table.assign(64, 0);
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<uint16_t>(1 + i % 16);
  }
  input.resize((in_bytes + 7) / 8);
  output.resize((out_bytes + 7) / 8);
  std::mt19937_64 rng(43);
  for (uint64_t& w : input) w = rng() & 0x00ff00ff00ff00ffull;  // small values: int16 products stay in range
}

int64_t ProbeData::reference(uint64_t units) const {
  int64_t sum = 0;
  for (uint64_t i = 0; i < units / 4 && i < values.size(); ++i) sum += values[i];
  return sum;
}

bool calibratable(const funcs::FunctionInfo& fn) {
  return fn.units == "bytes" || fn.units == "cycles" || fn.id == TANDEM_FN_SOBEL || fn.id == TANDEM_FN_MATMUL ||
         fn.id == TANDEM_FN_DCT_QUANT;
}

funcs::Call make_call(const funcs::FunctionInfo& fn, uint64_t units, const ProbeData& data) {
  const auto address = [](const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); };
  uint64_t args[4] = {};
  uint32_t count = 0;
  if (fn.units == "bytes") {
    if (units > data.values.size() * 4) throw Error(Status::invalid_argument, "a probe call beyond its data");
    args[0] = address(data.values.data());
    args[1] = units / 4;
    count = 2;
  } else if (fn.id == TANDEM_FN_SOBEL || fn.id == TANDEM_FN_MATMUL) {
    // Whole rows of 256 units (probe_step): sobel an image 256 pixels wide; matmul C (m x 16) =
    // A (m x 16) B (16 x 16), B at the start of the input and A after it.
    const uint64_t rows = units / 256;
    const bool sobel = fn.id == TANDEM_FN_SOBEL;
    const uint64_t in = sobel ? units : kMatmulB + rows * 32, out = sobel ? units : rows * 64;
    if (units % 256 != 0 || rows > 0xffff || in > data.input.size() * 8 || out > data.output.size() * 8) {
      throw Error(Status::invalid_argument, "a probe call beyond its data, or not of whole rows");
    }
    const auto* input = reinterpret_cast<const uint8_t*>(data.input.data());
    args[0] = address(sobel ? input : input + kMatmulB);
    args[1] = address(sobel ? static_cast<const void*>(data.output.data()) : input);
    args[2] = sobel ? 256 : address(data.output.data());
    args[3] = sobel ? rows : rows | (uint64_t{16} << 16) | (uint64_t{16} << 32);
    count = 4;
  } else if (fn.id == TANDEM_FN_DCT_QUANT) {
    if (units * 64 > data.input.size() * 8 || units * 128 > data.output.size() * 8 || data.table.size() < 64) {
      throw Error(Status::invalid_argument, "a probe call beyond its data");
    }
    args[0] = address(data.input.data());
    args[1] = address(data.output.data());
    args[2] = units | (uint64_t{TANDEM_DCT_MODE_DCT_QUANTIZE} << 32);
    args[3] = address(data.table.data());
    count = 4;
  } else {
    args[0] = units;
    count = 1;
  }
  funcs::Call call;
  funcs::BufferList buffers;
  const Status s = funcs::describe_call(fn, {args, count}, call, buffers);
  if (s != Status::ok) throw Error(s, "cannot describe a call of " + std::string(fn.name));
  for (uint32_t i = 0; i < buffers.count; ++i) {  // in the buffer list's order, as the runtime translates them
    call.buffers[i] = reinterpret_cast<void*>(static_cast<uintptr_t>(args[buffers.items[i].arg]));
  }
  return call;
}

std::unique_ptr<client::Runtime> open_probe_runtime(const ProbeOptions& o, const client::Calibration* calibration,
                                                    client::Mode mode, const client::PartitionTuning& tuning) {
  client::RuntimeOptions ro;
  ro.embedded = true;
  ro.mode = mode;
  ro.partition = tuning;
  // The dispatcher's pin under the configuration: one that sets [dispatcher] cpu keeps its placement.
  ro.config_text = config::overlay_config_text("[dispatcher]\ncpu = " + std::to_string(o.dispatcher_cpu) + "\n",
                                               "the probe's dispatcher pin", o.config_text, o.config_source);
  ro.config_source = o.config_source;
  ro.wait.mode = rt::WaitMode::spin;  // the thesis polled; a blocking wait would measure the futex
  if (calibration != nullptr) ro.calibration = *calibration;
  auto rt = client::Runtime::open(ro);
  if (!rt) throw Error(rt.status(), "cannot open the embedded runtime: " + rt.message());
  return std::move(rt).value();
}

std::vector<std::string> probe_devices() { return {"emu", "rtl", "opencl", "cuda"}; }

// --device rtl: the CPU side (X_c, O_0, O_c) and the round trip to the engine are measured as for emu;
// the accelerator's own figures come from the Verilated accelerator's cycle counts at its fabric
// clock (src/devices/rtl/calibrate.hpp): X_a = clock / cycles per unit, and D_a = its fixed cycles per
// job / clock plus the round trip that emu's D_a holds beyond emu's modelled latency.
static FunctionProbe probe_rtl(const funcs::FunctionInfo& fn, const ProbeOptions& o) {
#if defined(TANDEM_HAVE_RTL_DEVICE)
  if (fn.id != TANDEM_FN_ACCUMULATE) {
    throw Error(Status::invalid_argument,
                "--device rtl calibrates the partitioner of accumulate (the only RTL kernel with a software "
                "share); tandem calibrate-rtl gives every RTL accelerator's X_a and D_a as a configuration layer");
  }
  FunctionProbe out = probe_function(fn, "emu", o);
  say(o, std::string(fn.name) + ": Verilated accelerator cycle counts (X_a, D_a)");
  auto cal = devices::rtl::calibrate(devices::rtl::RtlFunction::accumulate);
  if (!cal) throw Error(cal.status(), "RTL calibration failed: " + cal.message());
  const double round_trip = std::max(0.0, out.params.da - out.device_model.latency_s);
  out.params.xa = cal.value().throughput_units_per_s;
  out.params.da = cal.value().latency_s + round_trip;
  out.device_model.throughput = cal.value().throughput_units_per_s;
  out.device_model.latency_s = cal.value().latency_s;
  return out;
#else
  (void)fn;
  (void)o;
  throw Error(Status::not_accelerated,
              "--device rtl: this tandem was built without the RTL device (Verilator); calibrate --device emu");
#endif
}

FunctionProbe probe_function(const funcs::FunctionInfo& fn, const std::string& device, const ProbeOptions& o) {
  if (device == "rtl") return probe_rtl(fn, o);
  if (device == "opencl" || device == "cuda") {
    // A real device: everything is measured end to end through the embedded runtime, as for emu, with
    // the device holding the function in two slots (its own models are what it measured at start).
    if (!devices::device_kind_available(device)) {
      throw Error(Status::not_accelerated, "--device " + device + ": this tandem was built without it");
    }
    // Over the configuration's own [device.<kind>] settings (its selector, time limit, access...).
    ProbeOptions real = o;
    real.device_label = device;
    real.config_text = config::overlay_config_text(
        o.config_text, o.config_source,
        fmt::format("[device]\nkinds = [\"{0}\"]\n[device.{0}]\nslots = 2\nresident = [\"{1}\", \"{1}\"]\n", device, fn.name),
        "the probe's device");
    return probe_function(fn, "emu", real);
  }
  if (device != "emu") {
    throw Error(Status::invalid_argument, "unknown device '" + device + "' (emu, rtl, opencl or cuda)");
  }
  if (!calibratable(fn)) {
    throw Error(Status::invalid_argument, std::string(fn.name) + " has no work units to calibrate "
                                                                 "(accumulate, work, sobel, matmul, dct_quant)");
  }
  const Plan plan = plan_for(fn, o.quick);
  const uint64_t g = probe_step(fn);
  uint64_t largest = 0;
  for (uint64_t n : plan.software_sizes) largest = std::max(largest, n);
  for (uint64_t n : plan.hardware_sizes) largest = std::max(largest, n);
  const ProbeData data(fn, fn.units == "bytes" ? 4 * largest : largest);
  // Results checked: accumulate's sum against the reference; sobel, matmul and dct_quant return 0 (dct:
  // a valid table), their outputs being the kernels' tests' business; work's value is its units.
  const bool check = fn.units != "cycles";
  bench::ScopedPin pin(o.client_cpu);
  FunctionProbe out;
  model::CostParams& p = out.params;
  p.granularity = fn.granularity;

  // ---- the CPU: X_c and O_0 from calls that the policy keeps in software ----
  say(o, std::string(fn.name) + ": software calls (X_c, O_0)");
  {
    // The device runs with its default speed here; only the software calls are measured.
    auto rt = open_probe_runtime(o, nullptr, client::Mode::sw, {});
    const bool hw = client::live_metrics(*rt, fn.id).n_a > 0;
    auto sw_part = make_partitioner(rt->cost_params(fn.id), engine::PartitionPolicy::sw_only);
    auto hw_part = make_partitioner(rt->cost_params(fn.id), engine::PartitionPolicy::hw_only);
    // O_0: calls with no work among small ones (warm, like the small calls it predicts), each followed
    // by a hardware-only call of the same size, so that the dispatcher is as awake as when calls are
    // partitioned. Kept apart from the large calls, whose data would evict the call path's own state.
    std::vector<Subject> small;
    for (uint64_t n : {uint64_t{0}, 8 * g, 32 * g}) {
      const funcs::Call call = make_call(fn, n, data);
      small.emplace_back(call, data.reference(n), check, sw_part.get());
      if (hw && n > 0) small.emplace_back(call, data.reference(n), check, hw_part.get(), false);
    }
    Plan half = plan;
    half.budget_s = plan.budget_s / 2;
    measure_interleaved(*rt, fn, small, half);
    p.o0 = median(small.front().samples);
    out.software.push_back(SizePoint{0, p.o0, small.front().samples.size()});
    // X_c: calls of 256 B..1 MiB, likewise each followed by a hardware-only call of the same size.
    std::vector<Subject> subjects;
    for (uint64_t n : plan.software_sizes) {
      const funcs::Call call = make_call(fn, n, data);
      subjects.emplace_back(call, data.reference(n), check, sw_part.get());
      if (hw) subjects.emplace_back(call, data.reference(n), check, hw_part.get(), false);
    }
    measure_interleaved(*rt, fn, subjects, plan);
    for (const Subject& sub : subjects) {
      if (sub.recorded) out.software.push_back(SizePoint{sub.call.workload, median(sub.samples), sub.samples.size()});
    }
    const double b = fit_slope(out.software, p.o0);
    if (!(b > 0)) throw Error(Status::device_error, "software times do not grow with the work: measure again");
    p.xc = 1.0 / b;
  }

  // ---- the device: X_a and D_a from calls with one job for everything, O_c from a tiny job ----
  say(o, std::string(fn.name) + ": accelerator jobs on " + (o.device_label.empty() ? device : o.device_label) +
             " (X_a, D_a, O_c)");
  client::Calibration cpu_only;
  cpu_only.device = device;
  cpu_only.functions[fn.id] = p;  // the emulated accelerator's speed is relative to this X_c
  client::PartitionTuning one_job;
  one_job.jobs_per_round = 1;
  one_job.rebalance = false;
  auto rt = open_probe_runtime(o, &cpu_only, client::Mode::hw, one_job);
  out.device_model = rt->accel_model(fn.id);
  p.bw_per_accel = out.device_model.bandwidth_bps;
  if (client::live_metrics(*rt, fn.id).n_a == 0) {
    if (!o.device_label.empty()) throw devices::kernel_not_built(fn.name, o.device_label);  // a real device, resident
    throw Error(Status::not_accelerated, std::string(fn.name) + " is not resident in the configuration measured "
                                                                "(--config: a file whose [device.emu] resident names it)");
  }
  {
    // D_a is the latency until the result is visible to the caller, the thesis's
    // sense: the CPU's work after it saw the completion (collect, combine, return) belongs to O_c, so it
    // is taken out of each sample (CallReport::driver_s - hw_done_s). O_c: a call whose SW part takes
    // about three job latencies, plus one job of one granule at the end that is done long before the
    // SW part, against the SW-only call of the same SW part; the difference is what the job cost the
    // CPU: submit, collect, combine and the partitioner.
    auto hw_part = make_partitioner(p, engine::PartitionPolicy::hw_only);
    const double expected_da = out.device_model.latency_s + 1.5e-6;
    const double sw_units = std::max(3.0 * expected_da * p.xc, 64.0 * static_cast<double>(g));
    uint64_t n_sw = model::round_up(static_cast<uint64_t>(sw_units), g);
    if (fn.units != "cycles") n_sw = std::min(n_sw, model::round_up(largest, g) - g);  // within the data
    out.overhead_units = n_sw;
    auto with_job = make_partitioner(p, engine::PartitionPolicy::fixed_alpha,
                                     static_cast<double>(g) / static_cast<double>(n_sw + g));
    auto software = make_partitioner(p, engine::PartitionPolicy::sw_only);
    std::vector<uint64_t> sizes{g};
    sizes.insert(sizes.end(), plan.hardware_sizes.begin(), plan.hardware_sizes.end());
    // The jobs' times must grow with their work for X_a; a burst of load or the dispatcher moving to
    // another CPU during one size's samples can hide that in a quick run: measured again, up to 3 times.
    std::vector<Subject> subjects;
    std::vector<SizePoint> visible;
    double b = 0;
    double da = 0;
    for (int attempt = 0; attempt < 3 && !(b > 0); ++attempt) {
      if (attempt > 0) say(o, "  accelerator times did not grow with the work: measuring again");
      subjects.clear();
      for (uint64_t n : sizes) {
        subjects.emplace_back(make_call(fn, n, data), data.reference(n), check, hw_part.get());
      }
      measure_interleaved(*rt, fn, subjects, plan);
      visible.clear();
      for (size_t i = 0; i < sizes.size(); ++i) visible.push_back(SizePoint{sizes[i], median(subjects[i].visible), subjects[i].visible.size()});
      // D_a from the smallest job (what matters most for small calls); X_a the throughput that, with
      // it, predicts the larger jobs best. The smallest job's granule of work is negligible. A job with
      // more work cannot take less than the latency, so a larger job's median below the smallest's
      // (a loaded machine: threads descheduled during that size's samples) bounds D_a instead.
      // The largest job must take longer than that latency (by 2%: a GPU's 1 MiB adds little to its
      // launch), or nothing here shows X_a: with D_a the least median no point lies below it, and the
      // fit alone would always find a slope.
      da = visible.front().median_s;
      for (const SizePoint& v : visible) da = std::min(da, v.median_s);
      const bool grew = da > 0 && visible.back().median_s > 1.02 * da;
      b = grew ? fit_slope({visible.begin() + 1, visible.end()}, da) : 0;
    }
    // The pair for O_c on its own: the difference of two medians is only as good as their conditions
    // are alike, and the large hardware calls above would come between them unevenly.
    std::vector<Subject> pair;
    pair.emplace_back(make_call(fn, n_sw + g, data), data.reference(n_sw + g), check, with_job.get());
    pair.emplace_back(make_call(fn, n_sw, data), data.reference(n_sw), check, software.get());
    Plan half = plan;
    half.budget_s = plan.budget_s / 2;
    measure_interleaved(*rt, fn, pair, half);
    for (size_t i = 0; i < sizes.size(); ++i) {
      out.hardware.push_back(SizePoint{sizes[i], median(subjects[i].samples), subjects[i].samples.size()});
    }
    p.da = da;
    if (!(b > 0)) throw Error(Status::device_error, "accelerator times do not grow with the work: measure again");
    p.xa = 1.0 / b;
    out.hardware_visible = std::move(visible);
    out.overhead_call_s = median(pair[0].samples);
    out.overhead_sw_s = median(pair[1].samples);
    p.oc = std::max(p.o0, out.overhead_call_s - out.overhead_sw_s + p.o0);
  }
  return out;
}

std::vector<const funcs::FunctionInfo*> calibratable_functions() {
  return {funcs::find_function(TANDEM_FN_ACCUMULATE), funcs::find_function(TANDEM_FN_WORK)};
}

std::vector<uint16_t> calibration_aliases(const funcs::FunctionInfo& fn) {
  std::vector<uint16_t> ids{fn.id};
  if (fn.id == TANDEM_FN_WORK) {
    for (uint16_t i = 0; i < TANDEM_WORK_FUNCTIONS; ++i) ids.push_back(static_cast<uint16_t>(TANDEM_FN_WORK_BASE + i));
  }
  return ids;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// tandemd's hand-off of a scatter-gather job to its mover and back: median round trip of a one-page
// accumulate from the heap (scatter-gather) less the same from session memory (zero-copy). 0 if it
// could not be measured (no tandemd binary).
bool measure_remote_gather(bool quick, model::HostAccessCosts& costs) {
  try {
    // The accelerator's own time nil, so that a round trip is the access path alone.
    const std::string config_text = "[device.emu]\nresident = [\"accumulate\"]\n[functions.accumulate]\nthroughput = 1e15\n";
    DaemonLauncher daemon(config_text);
    client::RuntimeOptions ro;
    ro.socket_path = daemon.socket();
    auto rt = client::Runtime::open(ro);
    if (!rt) return false;
    client::Runtime& r = *rt.value();
    // What the emulated device itself charges scatter-gather beyond zero-copy (its page-list model):
    // known from the configuration, taken off the measured difference.
    const model::TransferModel device = devices::emu_memory(config::parse_config(config_text, "probe").device.emu).transfer;
    tandem_completion_t* rec = r.thread_records();
    const auto round_trip = [&](const int32_t* data, uint64_t count, uint8_t method) {
      const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data), count};
      rt::reset_record(rec);
      const int64_t t0 = tandem::now_ns();
      if (r.default_queue().dispatch(TANDEM_FN_ACCUMULATE, args, 2, count * 4, rec, false, TANDEM_FLAG_ACCESS(method)) != Status::ok ||
          r.wait(rec, {}) != Status::ok) {
        return -1.0;
      }
      return static_cast<double>(tandem::now_ns() - t0) * 1e-9;
    };
    // The host side's extra time of a scatter-gather job of `bytes` over a zero-copy one: medians of
    // interleaved round trips (drift hits both alike), less the device model's difference.
    const auto host_extra = [&](uint64_t bytes, int samples) {
      const uint64_t count = bytes / 4;
      std::vector<int32_t> heap(count, 1);
      auto* session = static_cast<int32_t*>(r.alloc(bytes));
      if (session == nullptr) return -1.0;
      std::fill(session, session + count, 1);
      std::vector<double> sg, zc;
      for (int i = 0; i < samples; ++i) {
        sg.push_back(round_trip(heap.data(), count, TANDEM_ACCESS_SCATTER_GATHER));
        zc.push_back(round_trip(session, count, TANDEM_ACCESS_ZERO_COPY));
      }
      r.free(session);
      if (std::min(*std::min_element(sg.begin(), sg.end()), *std::min_element(zc.begin(), zc.end())) < 0) return -1.0;
      const auto pages = static_cast<uint32_t>(bytes / 4096);
      const double modelled = device.job_s(TANDEM_ACCESS_SCATTER_GATHER, bytes, 0, pages, 0) -
                              device.job_s(TANDEM_ACCESS_ZERO_COPY, bytes, 0, pages, 0);
      return std::max(0.0, median(sg) - median(zc) - modelled);
    };
    constexpr uint64_t kSmall = 4096, kLarge = 1 << 20;
    const double small = host_extra(kSmall, quick ? 200 : 2000);
    const double large = host_extra(kLarge, quick ? 20 : 200);
    if (small < 0 || large < 0) return false;
    // Two sizes, two unknowns: a fixed hand-off and a cost per byte (pages are proportional to bytes
    // here, so the per-page cost is folded into the per-byte one).
    const double per_byte = std::max(0.0, (large - small) / static_cast<double>(kLarge - kSmall));
    costs.handoff_s = std::max(0.0, small - per_byte * kSmall);
    if (per_byte > 0) {
      costs.gather_bps = 1.0 / per_byte;
      costs.gather_page_s = 0;
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace tandem::tools
