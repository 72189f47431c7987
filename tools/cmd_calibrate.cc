// `tandem calibrate`: measures the cost-model parameters (thesis Table 4.3) of each function on this
// machine and the current device, and writes the calibration file the partitioner loads.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "calibration_probe.hpp"
#include "daemon_launcher.hpp"
#include "base/clock.hpp"
#include "base/stats.hpp"
#include "config/text_file.hpp"
#include "rt/host_access.hpp"
#include "client/access.hpp"
#include "rt/completion.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "support/measure.hpp"

namespace tandem::tools {

namespace {


struct CalibrateOptions {
  std::vector<std::string> functions;
  std::string out;
  std::string device = "emu";
  std::string config;
  bool quick = false;
  bool json_output = false;
  bool dry_run = false;
  bool replace = false;  // another device's calibration in `out` may be replaced
};

std::string rate(double units_per_s, std::string_view units) {
  if (units == "bytes") return fmt::format("{:.3f} GB/s", units_per_s / 1e9);
  return fmt::format("{:.3f} G{}/s", units_per_s / 1e9, units);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string read_config_text(const std::string& path) {
  if (path.empty()) return {};
  return config::read_text_file(path, "configuration file");
}

void run_calibrate(const CalibrateOptions& o) {
  std::vector<const funcs::FunctionInfo*> fns;
  if (o.functions.empty()) {
    fns = calibratable_functions();
  } else {
    for (const std::string& name : o.functions) {
      const funcs::FunctionInfo* fn = funcs::find_function(name);
      if (fn == nullptr) throw Error(Status::invalid_argument, "unknown function '" + name + "'");
      fns.push_back(fn);
    }
  }
  const std::string out = !o.out.empty() ? o.out : client::user_calibration_path();
  if (out.empty() && !o.dry_run) throw Error(Status::invalid_argument, "no --out and no home directory to write to");

  // Functions measured now replace their entries; the others of an existing file for this device stay.
  // A file holds one device's calibration: another device's is replaced only when asked, and checked
  // before the measurement, as is whether the file can be written at all.
  client::Calibration cal;
  if (!o.dry_run) {
    if (exists(out)) {
      client::Calibration old = client::load_calibration(out);
      if (old.device == o.device) {
        cal = old;
      } else if (!o.replace) {
        throw Error(Status::invalid_argument,
                    fmt::format("{}: holds the {} device's calibration ({} function(s)); calibrating {} would replace it. "
                                "Give --out another file (and TANDEM_CALIBRATION or the config's [calibration] file "
                                "to the runtimes that use it), or --replace",
                                out, old.device,
                                std::count_if(old.functions.begin(), old.functions.end(),
                                              [](const auto& f) { return f.has_value(); }),
                                o.device));
      }
    }
    client::check_calibration_writable(out);
  }
  cal.device = o.device;
  cal.host = host_name();
  cal.created = utc_now();

  const bench::CpuPair cpus = bench::pick_cpu_pair();
  ProbeOptions po;
  po.quick = o.quick;
  po.client_cpu = cpus.a;
  po.dispatcher_cpu = cpus.distinct ? cpus.b : -1;
  po.config_text = read_config_text(o.config);
  if (!o.config.empty()) po.config_source = o.config;
  if (!o.json_output) po.progress = [](const std::string& line) { fmt::print("  measuring {}\n", line); };

  nlohmann::json j;
  j["device"] = o.device;
  j["cpus"] = {cpus.a, cpus.b};
  bench::TextTable t({"function", "X_c", "X_a", "X_a/X_c", "O_0", "O_c", "D_a", "N_L (Eq 4.8)", "device model"});
  for (const funcs::FunctionInfo* fn : fns) {
    const FunctionProbe probe = probe_function(*fn, o.device, po);
    const model::CostParams& p = probe.params;
    for (uint16_t id : calibration_aliases(*fn)) cal.functions[id] = p;
    const uint64_t nl = model::break_even_work(p, p.xa);
    t.add_row({std::string(fn->name), rate(p.xc, fn->units), rate(p.xa, fn->units), bench::fixed(p.xa / p.xc, 2),
               bench::fixed(p.o0 * 1e9, 1) + " ns", bench::fixed(p.oc * 1e9, 1) + " ns",
               bench::fixed(p.da * 1e9, 1) + " ns", fmt::format("{} {}", nl, fn->units),
               fmt::format("X_a {}, latency {:.0f} ns", rate(probe.device_model.throughput, fn->units),
                           probe.device_model.latency_s * 1e9)});
    nlohmann::json f;
    f["xc"] = p.xc;
    f["xa"] = p.xa;
    f["o0_ns"] = p.o0 * 1e9;
    f["oc_ns"] = p.oc * 1e9;
    f["da_ns"] = p.da * 1e9;
    f["granularity"] = p.granularity;
    f["nl_units"] = nl;
    f["units"] = fn->units;
    f["device_model_xa"] = probe.device_model.throughput;
    f["device_model_latency_ns"] = probe.device_model.latency_s * 1e9;
    for (const SizePoint& s : probe.software) f["software_ns"][std::to_string(s.units)] = s.median_s * 1e9;
    for (const SizePoint& s : probe.hardware) f["hardware_ns"][std::to_string(s.units)] = s.median_s * 1e9;
    for (const SizePoint& s : probe.hardware_visible) {
      f["hardware_visible_ns"][std::to_string(s.units)] = s.median_s * 1e9;
    }
    f["overhead"] = {{"sw_units", probe.overhead_units},
                     {"call_with_job_ns", probe.overhead_call_s * 1e9},
                     {"sw_only_ns", probe.overhead_sw_s * 1e9}};
    j["functions"][std::string(fn->name)] = f;
  }
  // The host side of the access methods: the staging copy measured here; scatter-gather's hand-off and
  // page gathering measured through a private tandemd (calibration_probe.hpp).
  model::HostAccessCosts access = rt::host_access_costs();
  if (!o.json_output) fmt::print("  measuring the access methods' host costs (a private tandemd)\n");
  (void)measure_remote_gather(o.quick, access);  // else the in-process figures stand
  cal.access = access;
  j["access"] = {{"memcpy_gbps", access.memcpy_bps / 1e9},
                 {"gather_gbps", access.gather_bps / 1e9},
                 {"gather_page_ns", access.gather_page_s * 1e9},
                 {"handoff_us", access.handoff_s * 1e6}};
  if (!o.dry_run) client::save_calibration(cal, out);
  j["file"] = o.dry_run ? "" : out;
  if (o.json_output) {
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{}\n", t.render());
  fmt::print("access methods: staging copy {:.2f} GB/s, gathering pages {:.2f} GB/s + {:.0f} ns/page, tandemd hand-off "
             "{:.1f} us\n",
             access.memcpy_bps / 1e9, access.gather_bps / 1e9, access.gather_page_s * 1e9, access.handoff_s * 1e6);
  if (o.dry_run) {
    fmt::print("--dry-run: nothing written. The file would read:\n\n{}", client::format_calibration(cal));
  } else {
    fmt::print("wrote {} (device {}); runtimes load it by default (TANDEM_CALIBRATION or the config's "
               "[calibration] file name another)\n",
               out, o.device);
  }
}

}  // namespace

void add_calibrate_commands(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Measure X_c, O_0 (CPU) and X_a, D_a, O_c (device) per function; write the calibration file");
  cmd->add_option("--function", o->functions, "Function to calibrate (repeatable; default: accumulate and work; also sobel, matmul, dct_quant)");
  cmd->add_option("--out", o->out, "Calibration file (default: $XDG_CONFIG_HOME/tandem/calibration.toml)");
  cmd->add_option("--device", o->device,
                  "Device to calibrate: emu (the embedded emulated fabric), rtl (Verilated accelerators' cycles), opencl or cuda (the real device, end to end)")
      ->capture_default_str();
  cmd->add_option("--config", o->config, "Configuration file of the runtime measured (default: built-in)");
  cmd->add_flag("--quick", o->quick, "Few sizes and samples (seconds; for tests, not for use)");
  cmd->add_flag("--json", o->json_output, "Print JSON instead of a table");
  cmd->add_flag("--dry-run", o->dry_run, "Measure and print, but write nothing");
  cmd->add_flag("--replace", o->replace, "Replace a calibration of another device in the file (a file holds one device's)");
  cmd->callback([o] { run_calibrate(*o); });
}

}  // namespace tandem::tools
