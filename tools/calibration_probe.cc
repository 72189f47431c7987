#include "calibration_probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <random>

#include "client/partitioned_call.hpp"
#include "support/measure.hpp"

namespace tandem::tools {

namespace {

struct Plan {
  std::vector<uint64_t> software_sizes;  // bytes or cycles, besides 0
  std::vector<uint64_t> hardware_sizes;  // besides the granularity
  size_t rounds = 0;
  size_t warmup = 0;
};

Plan plan_for(const funcs::FunctionInfo& fn, bool quick) {
  Plan p;
  // The range of the case study (8 B to 1 MiB) for bytes; cycles cover 1 us to 0.3 ms at 3 GHz.
  const bool bytes = fn.units == "bytes";
  if (quick) {
    p.software_sizes = bytes ? std::vector<uint64_t>{4096, 65536} : std::vector<uint64_t>{4096, 65536};
    p.hardware_sizes = p.software_sizes;
    p.rounds = 40;
    p.warmup = 5;
  } else {
    p.software_sizes = bytes ? std::vector<uint64_t>{1024, 4096, 16384, 65536, 262144, 1048576}
                             : std::vector<uint64_t>{4096, 16384, 65536, 262144, 1048576};
    p.hardware_sizes = p.software_sizes;
    p.rounds = 1500;
    p.warmup = 50;
  }
  return p;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}

// Least squares T = a + b N over the points; returns (a, b).
std::pair<double, double> fit_line(const std::vector<SizePoint>& pts) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(pts.size());
  for (const SizePoint& p : pts) {
    const double x = static_cast<double>(p.units);
    sx += x;
    sy += p.median_s;
    sxx += x * x;
    sxy += x * p.median_s;
  }
  const double den = n * sxx - sx * sx;
  if (pts.size() < 2 || den == 0) return {0, 0};
  const double b = (n * sxy - sx * sy) / den;
  return {(sy - b * sx) / n, b};
}

// One kind of call in an interleaved measurement.
struct Subject {
  Subject(const funcs::Call& c, int64_t e, bool chk, engine::Partitioner* p = nullptr)
      : call(c), expected(e), check(chk), partitioner(p) {}
  funcs::Call call;
  int64_t expected = 0;
  bool check = false;
  engine::Partitioner* partitioner = nullptr;  // null: the runtime's own policy
  std::vector<double> samples;
};

// Rounds of every subject once each (A B C A B C ...), so that drift hits all of them alike.
void measure_interleaved(client::Runtime& rt, const funcs::FunctionInfo& fn, std::vector<Subject>& subjects,
                         size_t rounds, size_t warmup) {
  const bench::TickClock& clock = bench::TickClock::get();
  for (Subject& s : subjects) s.samples.reserve(rounds);
  for (size_t r = 0; r < warmup + rounds; ++r) {
    for (Subject& s : subjects) {
      int64_t value = 0;
      const uint64_t t0 = clock.now();
      const Status st = s.partitioner != nullptr ? client::run_partitioned(rt, fn, s.call, *s.partitioner, value, nullptr)
                                                 : rt.run(fn, s.call, value);
      const uint64_t t1 = clock.now();
      if (st != Status::ok) throw Error(st, "a calibration call failed: " + std::string(to_string(st)));
      if (s.check && value != s.expected) throw Error(Status::device_error, "a calibration call returned a wrong result");
      if (r >= warmup) s.samples.push_back(clock.to_ns(t1 - t0) * 1e-9);
    }
  }
}

void say(const ProbeOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

}  // namespace

ProbeData::ProbeData(uint64_t bytes) : values((bytes + 3) / 4) {
  std::mt19937 rng(42);
  for (int32_t& v : values) v = static_cast<int32_t>(rng());
}

int64_t ProbeData::reference(uint64_t units) const {
  int64_t sum = 0;
  for (uint64_t i = 0; i < units / 4 && i < values.size(); ++i) sum += values[i];
  return sum;
}

funcs::Call make_call(const funcs::FunctionInfo& fn, uint64_t units, const int32_t* data) {
  funcs::Call call;
  funcs::BufferList buffers;
  Status s;
  if (fn.units == "bytes") {
    const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data), units / 4};
    s = funcs::describe_call(fn, args, call, buffers);
    call.buffers[0] = const_cast<int32_t*>(data);
  } else {
    const uint64_t args[1] = {units};
    s = funcs::describe_call(fn, args, call, buffers);
  }
  if (s != Status::ok) throw Error(s, "cannot describe a call of " + std::string(fn.name));
  return call;
}

std::unique_ptr<client::Runtime> open_probe_runtime(const ProbeOptions& o, const client::Calibration* calibration,
                                                    client::Mode mode, const client::PartitionTuning& tuning) {
  client::RuntimeOptions ro;
  ro.embedded = true;
  ro.mode = mode;
  ro.partition = tuning;
  ro.config_text = o.config_text;
  // TOML allows a table once: a configuration with its own [dispatcher] keeps its placement.
  if (o.config_text.find("[dispatcher]") == std::string::npos) {
    ro.config_text += "\n[dispatcher]\ncpu = " + std::to_string(o.dispatcher_cpu) + "\n";
  }
  ro.wait.mode = rt::WaitMode::spin;  // the thesis polled; a blocking wait would measure the futex
  if (calibration != nullptr) ro.calibration = *calibration;
  auto rt = client::Runtime::open(ro);
  if (!rt) throw Error(rt.status(), "cannot open the embedded runtime: " + rt.message());
  return std::move(rt).value();
}

std::vector<std::string> probe_devices() { return {"emu", "rtl"}; }

FunctionProbe probe_function(const funcs::FunctionInfo& fn, const std::string& device, const ProbeOptions& o) {
  if (device == "rtl") {
    // The hook for the Verilator device: its cycle counts per job give X_a (cycles per unit at the
    // clock rate) and D_a (fixed cycles per job plus the round trip measured here like for emu).
    throw Error(Status::not_accelerated,
                "--device rtl: the RTL device is not part of this build yet; calibrate --device emu");
  }
  if (device != "emu") throw Error(Status::invalid_argument, "unknown device '" + device + "' (emu or rtl)");
  if (fn.units != "bytes" && fn.units != "cycles") {
    throw Error(Status::invalid_argument, std::string(fn.name) + " has no work units to calibrate");
  }
  const Plan plan = plan_for(fn, o.quick);
  const uint64_t g = fn.granularity;
  uint64_t largest = 0;
  for (uint64_t n : plan.software_sizes) largest = std::max(largest, n);
  for (uint64_t n : plan.hardware_sizes) largest = std::max(largest, n);
  const ProbeData data(fn.units == "bytes" ? 4 * largest : 0);
  const bool check = fn.units == "bytes";
  bench::ScopedPin pin(o.client_cpu);
  FunctionProbe out;
  model::CostParams& p = out.params;
  p.granularity = g;

  // ---- the CPU: X_c and O_0 from high-level calls that the policy keeps in software ----
  say(o, std::string(fn.name) + ": software calls (X_c, O_0)");
  {
    auto rt = open_probe_runtime(o, nullptr, client::Mode::sw, {});
    std::vector<uint64_t> sizes{0};
    sizes.insert(sizes.end(), plan.software_sizes.begin(), plan.software_sizes.end());
    std::vector<Subject> subjects;
    for (uint64_t n : sizes) subjects.emplace_back(make_call(fn, n, data.values.data()), data.reference(n), check);
    measure_interleaved(*rt, fn, subjects, plan.rounds, plan.warmup);
    for (size_t i = 0; i < sizes.size(); ++i) {
      out.software.push_back(SizePoint{sizes[i], median(subjects[i].samples), subjects[i].samples.size()});
    }
    p.o0 = out.software.front().median_s;
    const auto [a, b] = fit_line({out.software.begin() + 1, out.software.end()});
    (void)a;
    if (!(b > 0)) throw Error(Status::device_error, "software times do not grow with the work: measure again");
    p.xc = 1.0 / b;
  }

  // ---- the device: X_a and D_a from calls with one job for everything, O_c from a tiny job ----
  say(o, std::string(fn.name) + ": accelerator jobs on " + device + " (X_a, D_a, O_c)");
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
    throw Error(Status::not_accelerated, std::string(fn.name) + " is not resident in the configuration measured");
  }
  {
    std::vector<uint64_t> sizes{g};
    sizes.insert(sizes.end(), plan.hardware_sizes.begin(), plan.hardware_sizes.end());
    std::vector<Subject> subjects;
    for (uint64_t n : sizes) subjects.emplace_back(make_call(fn, n, data.values.data()), data.reference(n), check);
    measure_interleaved(*rt, fn, subjects, plan.rounds, plan.warmup);
    for (size_t i = 0; i < sizes.size(); ++i) {
      out.hardware.push_back(SizePoint{sizes[i], median(subjects[i].samples), subjects[i].samples.size()});
    }
    const auto [a, b] = fit_line(out.hardware);
    (void)a;
    if (!(b > 0)) throw Error(Status::device_error, "accelerator times do not grow with the work: measure again");
    p.xa = 1.0 / b;
    // D_a from the smallest job (what matters most for small calls), less its tiny share of work.
    p.da = std::max(0.0, out.hardware.front().median_s - static_cast<double>(g) / p.xa);
  }
  {
    // O_c: a call whose SW part takes about three job latencies, plus one job of one granule at the
    // end that is done long before the SW part, against the SW-only call of the same SW part. The
    // difference is what the job cost the CPU: submit, collect, combine and the partitioner.
    const double sw_units = std::max(3.0 * p.da * p.xc, 64.0 * static_cast<double>(g));
    uint64_t n_sw = model::round_up(static_cast<uint64_t>(sw_units), g);
    if (fn.units == "bytes") n_sw = std::min(n_sw, model::round_up(largest, g) - g);
    out.overhead_units = n_sw;
    engine::PartitionerConfig split;
    split.policy = engine::PartitionPolicy::fixed_alpha;
    split.fixed_alpha = static_cast<double>(g) / static_cast<double>(n_sw + g);
    split.jobs_per_round = 1;
    split.max_outstanding_jobs = 4;
    engine::Partitioner with_job(p, split);
    engine::PartitionerConfig sw;
    sw.policy = engine::PartitionPolicy::sw_only;
    sw.max_outstanding_jobs = 4;
    engine::Partitioner software(p, sw);
    std::vector<Subject> subjects;
    subjects.emplace_back(make_call(fn, n_sw + g, data.values.data()), data.reference(n_sw + g), check, &with_job);
    subjects.emplace_back(make_call(fn, n_sw, data.values.data()), data.reference(n_sw), check, &software);
    measure_interleaved(*rt, fn, subjects, plan.rounds, plan.warmup);
    out.overhead_call_s = median(subjects[0].samples);
    out.overhead_sw_s = median(subjects[1].samples);
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

}  // namespace tandem::tools
