// `tandem calibrate-rtl`: runs each Verilog accelerator at several sizes in Verilator, fits its
// cycle counts, and prints (or writes) X_a and D_a as a configuration layer that the emulated
// fabric loads: RTL-derived timing instead of guessed numbers (docs/rtl.md).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "output.hpp"
#include "abi/status.hpp"
#if TANDEM_HAVE_RTL_DEVICE
#include "devices/rtl/calibrate.hpp"
#endif

namespace tandem::tools {

namespace {

struct CalibrateRtlOptions {
  std::vector<std::string> functions;
  double clock_mhz = 200;
  std::string out;
  bool json_output = false;
};

#if TANDEM_HAVE_RTL_DEVICE
namespace rtl = devices::rtl;

void run_calibrate_rtl(const CalibrateRtlOptions& o) {
  if (!(o.clock_mhz > 0)) throw Error(Status::invalid_argument, "--clock-mhz must be positive");
  std::vector<rtl::RtlFunction> chosen;
  for (const std::string& name : o.functions) {
    bool found = false;
    for (rtl::RtlFunction f : rtl::kAllRtlFunctions) {
      if (rtl::to_string(f) == name) {
        chosen.push_back(f);
        found = true;
      }
    }
    if (!found) throw Error(Status::invalid_argument, "no RTL accelerator named '" + name + "'");
  }
  if (chosen.empty()) chosen.assign(std::begin(rtl::kAllRtlFunctions), std::end(rtl::kAllRtlFunctions));

  rtl::RtlOptions options;
  options.clock_hz = o.clock_mhz * 1e6;
  std::vector<rtl::Calibration> results;
  for (rtl::RtlFunction f : chosen) {
    auto c = rtl::calibrate(f, options);
    if (!c) throw Error(c.status(), std::string(rtl::to_string(f)) + ": " + c.message());
    results.push_back(std::move(c).value());
  }
  const std::string layer = rtl::timing_config_layer(results);
  if (!o.out.empty()) write_file(o.out, layer);
  if (o.json_output) {  // written by hand: every value is a number or a plain name
    std::string json = fmt::format("{{\n  \"clock_hz\": {},\n  \"functions\": {{", options.clock_hz);
    for (size_t i = 0; i < results.size(); ++i) {
      const rtl::Calibration& c = results[i];
      json += fmt::format(
          "{}\n    \"{}\": {{\"unit\": \"{}\", \"xa\": {}, \"da_ns\": {}, \"cycles_per_unit\": {}, "
          "\"fixed_cycles\": {}, \"r_squared\": {}, \"points\": [",
          i == 0 ? "" : ",", rtl::to_string(c.function), c.unit, c.throughput_units_per_s, c.latency_s * 1e9,
          c.fit.cycles_per_unit, c.fit.fixed_cycles, c.fit.r_squared);
      for (size_t k = 0; k < c.points.size(); ++k) {
        const rtl::CalibrationPoint& p = c.points[k];
        json += fmt::format("{}{{\"units\": {}, \"cycles\": {}, \"total_cycles\": {}, \"host_s\": {}}}",
                            k == 0 ? "" : ", ", p.units, p.cycles, p.total_cycles, p.host_s);
      }
      json += "]}";
    }
    fmt::print("{}\n  }}\n}}\n", json);
    return;
  }
  // The last column: how fast Verilator simulates on this machine, and how much slower than the
  // modelled hardware that is (the real-time rtl device completes jobs that much late).
  fmt::print("{:<16} {:>8} {:>14} {:>12} {:>10} {:>10} {:>6} {:>14} {:>12}\n", "accelerator", "unit",
             "X_a (units/s)", "cycles/unit", "D_a (ns)", "r^2", "sizes", "sim Mcycles/s", "sim/modelled");
  for (const rtl::Calibration& c : results) {
    uint64_t cycles = 0;
    double host = 0;
    for (const rtl::CalibrationPoint& p : c.points) {
      cycles += p.total_cycles;
      host += p.host_s;
    }
    const double modelled = static_cast<double>(cycles) / c.clock_hz;
    fmt::print("{:<16} {:>8} {:>14.4e} {:>12.5f} {:>10.1f} {:>10.6f} {:>6} {:>14.2f} {:>12.1f}\n",
               rtl::to_string(c.function), c.unit, c.throughput_units_per_s, c.fit.cycles_per_unit,
               c.latency_s * 1e9, c.fit.r_squared, c.points.size(), host > 0 ? cycles / host / 1e6 : 0,
               modelled > 0 ? host / modelled : 0);
  }
  if (o.out.empty()) {
    fmt::print("\n{}", layer);
  } else {
    fmt::print("\nwrote {}: load it with --config / TANDEM_CONFIG (the emulated fabric then uses these timings)\n",
               o.out);
  }
}
#else
void run_calibrate_rtl(const CalibrateRtlOptions&) {
  throw Error(Status::invalid_argument, "this build has no RTL device (TANDEM_BUILD_RTL off or Verilator missing)");
}
#endif

}  // namespace

void add_calibrate_rtl_commands(CLI::App& app) {
  auto o = std::make_shared<CalibrateRtlOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate-rtl", "Derive X_a and D_a of the Verilog accelerators from cycle counts (a configuration layer)");
  cmd->add_option("--function", o->functions,
                  "Accelerator to calibrate (repeatable; default: accumulate, sobel, matmul, dct_quant, "
                  "priority_queue)");
  cmd->add_option("--clock-mhz", o->clock_mhz, "Fabric clock")->check(number_in(1, 10000))->capture_default_str();
  cmd->add_option("--out", o->out, "Write the configuration layer (TOML) to this file")->check(writable_file());
  cmd->add_flag("--json", o->json_output, "Print JSON (fits and every measured point) instead of a table");
  cmd->callback([o] { run_calibrate_rtl(*o); });
}

}  // namespace tandem::tools
