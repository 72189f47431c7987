#include "devices/emu/fabric_config.hpp"

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <toml++/toml.h>

#include "devices/rtl/rtl_catalog.hpp"
#include "funcs/function.hpp"
#include "funcs/throughput.hpp"
#include "devices/emu/toml_checks.hpp"
#include "abi/status.hpp"

namespace tandem::devices {

namespace {

[[noreturn]] void fail(std::string_view source, const std::string& what) { toml_fail(source, what); }

double number(const toml::node_view<const toml::node>& n, double fallback, std::string_view name,
              std::string_view source, double min = 0, double max = 1e300) {
  if (!n) return fallback;
  auto v = n.value<double>();
  if (!v) fail(source, std::string(name) + " must be a number");
  if (*v < min || *v > max) {
    std::ostringstream os;
    os << name << " = " << *v << " is out of range [" << min << ", " << max << "]";
    fail(source, os.str());
  }
  return *v;
}

uint32_t count(const toml::node_view<const toml::node>& n, uint32_t fallback, std::string_view name,
               std::string_view source, uint32_t min, uint32_t max) {
  if (!n) return fallback;
  auto v = n.value<int64_t>();
  if (!v || *v < min || *v > max) {
    fail(source, std::string(name) + " must be an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
  }
  return static_cast<uint32_t>(*v);
}

// Keys the table names override `base`; a speedup replaces a throughput and vice versa.
FunctionTiming parse_timing(const toml::table& t, std::string_view name, std::string_view source,
                            FunctionTiming ft) {
  check_keys(t, "functions." + std::string(name),
             {"speedup", "throughput", "latency_us", "reconfig_ms", "bandwidth_mbps"}, source);
  toml::node_view<const toml::node> v{t};
  if (v["speedup"]) {
    ft.speedup = number(v["speedup"], 0, "speedup", source, 0, 1e6);
    ft.throughput.reset();
  }
  if (v["throughput"]) ft.throughput = number(v["throughput"], 0, "throughput", source, 0);
  ft.latency_s = number(v["latency_us"], ft.latency_s * 1e6, "latency_us", source, 0, 1e9) * 1e-6;
  ft.reconfig_s = number(v["reconfig_ms"], ft.reconfig_s * 1e3, "reconfig_ms", source, 0, 1e9) * 1e-3;
  ft.bandwidth_bps = number(v["bandwidth_mbps"], ft.bandwidth_bps / 1e6, "bandwidth_mbps", source, 0) * 1e6;
  return ft;
}

FunctionTiming timing_or_default(const FabricConfig& f, uint16_t id) {
  if (f.timing[id]) return *f.timing[id];
  const funcs::FunctionInfo* fn = funcs::find_function(id);
  FunctionTiming t;
  t.speedup = fn->default_speedup;
  t.latency_s = fn->default_latency_s;
  t.reconfig_s = fn->default_reconfig_s;
  return t;
}

}  // namespace

namespace {

// [device] and [device.rtl].
void apply_device(DeviceSettings& d, const toml::table& t, std::string_view source) {
  check_keys(t, "device", {"kind", "reconfig_delay", "slot_rows", "config_port_mbps", "reconfig_setup_us", "rtl"},
             source);
  toml::node_view<const toml::node> v{t};
  const auto word = [&](std::string_view key, std::initializer_list<std::string_view> allowed, std::string& out) {
    if (!t.contains(key)) return;
    auto value = v[key].value<std::string>();
    if (!value || std::find(allowed.begin(), allowed.end(), std::string_view(*value)) == allowed.end()) {
      std::string names;
      for (std::string_view a : allowed) names += (names.empty() ? "\"" : ", \"") + std::string(a) + "\"";
      fail(source, "device." + std::string(key) + " must be one of " + names);
    }
    out = *value;
  };
  word("kind", {"emu", "rtl"}, d.kind);
  word("reconfig_delay", {"auto", "fixed", "bitstream"}, d.reconfig_delay);
  d.slot_rows = count(v["slot_rows"], d.slot_rows, "device.slot_rows", source, 1, 64);
  d.config_port_bps = number(v["config_port_mbps"], d.config_port_bps / 1e6, "device.config_port_mbps", source,
                             1e-3, 1e6) * 1e6;
  d.reconfig_setup_s =
      number(v["reconfig_setup_us"], d.reconfig_setup_s * 1e6, "device.reconfig_setup_us", source, 0, 1e9) * 1e-6;
  if (const auto* rtl = t.get_as<toml::table>("rtl")) {
    check_keys(*rtl, "device.rtl", {"clock_mhz", "max_cycles"}, source);
    toml::node_view<const toml::node> r{*rtl};
    d.rtl_clock_hz = number(r["clock_mhz"], d.rtl_clock_hz / 1e6, "device.rtl.clock_mhz", source, 1e-3, 1e5) * 1e6;
    if (r["max_cycles"]) {
      auto cycles = r["max_cycles"].value<int64_t>();
      if (!cycles || *cycles < 1) fail(source, "device.rtl.max_cycles must be a positive integer");
      d.rtl_max_cycles = static_cast<uint64_t>(*cycles);
    }
  } else if (t.contains("rtl")) {
    fail(source, "device.rtl must be a table");
  }
}

// Applies one TOML document on top of `c`. Returns whether it named `fabric.resident`.
bool apply_config(Config& c, std::string_view text, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << e.description() << " (line " << e.source().begin.line << ")";
    fail(source, os.str());
  }
  check_keys(root, "top level",
             {"fabric", "functions", "dispatcher", "daemon", "monitor", "limits", "reconfig", "calibration", "device"},
             source);
  toml::node_view<const toml::node> r{root};
  bool named_resident = false;

  if (auto* fabric = root["fabric"].as_table()) {
    check_keys(*fabric, "fabric", {"slots", "queues", "queue_capacity", "max_job_ms", "resident"}, source);
    c.fabric.slots = count(r["fabric"]["slots"], c.fabric.slots, "fabric.slots", source, 1, 1024);
    c.fabric.queues = count(r["fabric"]["queues"], c.fabric.queues, "fabric.queues", source, 0, 1024);
    c.fabric.queue_capacity =
        count(r["fabric"]["queue_capacity"], c.fabric.queue_capacity, "fabric.queue_capacity", source, 1, 1u << 20);
    c.fabric.max_job_s = number(r["fabric"]["max_job_ms"], c.fabric.max_job_s * 1e3, "fabric.max_job_ms", source) * 1e-3;
    if (auto* res = fabric->get_as<toml::array>("resident")) {
      named_resident = true;
      c.fabric.resident.clear();
      for (const auto& item : *res) {
        auto name = item.value<std::string>();
        if (!name) fail(source, "fabric.resident must list function names");
        if (funcs::find_function(*name) == nullptr) fail(source, "fabric.resident: unknown function '" + *name + "'");
        c.fabric.resident.push_back(*name);
      }
    } else if (fabric->contains("resident")) {
      fail(source, "fabric.resident must be an array of function names");
    }
  }
  if (auto* fns = root["functions"].as_table()) {
    for (const auto& [key, node] : *fns) {
      const std::string name(key.str());
      const auto* fn = funcs::find_function(name);
      if (fn == nullptr) fail(source, "[functions." + name + "]: unknown function");
      const auto* t = node.as_table();
      if (t == nullptr) fail(source, "[functions." + name + "] must be a table");
      c.fabric.timing[fn->id] = parse_timing(*t, name, source, timing_or_default(c.fabric, fn->id));
    }
    // `work` also configures the 16 work variants that have no table of their own in this document.
    if (const auto* work = fns->get_as<toml::table>("work")) {
      for (uint16_t i = 0; i < TANDEM_WORK_FUNCTIONS; ++i) {
        if (!fns->contains(funcs::find_function(static_cast<uint16_t>(TANDEM_FN_WORK_BASE + i))->name)) {
          const uint16_t id = static_cast<uint16_t>(TANDEM_FN_WORK_BASE + i);
          c.fabric.timing[id] = parse_timing(*work, "work", source, timing_or_default(c.fabric, id));
        }
      }
    }
  }
  if (auto* d = root["device"].as_table()) apply_device(c.fabric.device, *d, source);
  if (auto* d = root["dispatcher"].as_table()) {
    check_keys(*d, "dispatcher", {"idle_spin_us", "batch", "cpu"}, source);
    if (r["dispatcher"]["cpu"]) {
      auto cpu = r["dispatcher"]["cpu"].value<int64_t>();
      if (!cpu || *cpu < -1 || *cpu > 4095) fail(source, "dispatcher.cpu must be -1 or a CPU number");
      c.dispatcher.cpu = static_cast<int>(*cpu);
    }
    c.dispatcher.idle_spin_s =
        number(r["dispatcher"]["idle_spin_us"], c.dispatcher.idle_spin_s * 1e6, "dispatcher.idle_spin_us", source, 0, 1e7) * 1e-6;
    c.dispatcher.batch = count(r["dispatcher"]["batch"], c.dispatcher.batch, "dispatcher.batch", source, 1, 1u << 16);
  }
  if (auto* cal = root["calibration"].as_table()) {
    check_keys(*cal, "calibration", {"file"}, source);
    if (cal->contains("file")) {
      auto file = r["calibration"]["file"].value<std::string>();
      if (!file) fail(source, "calibration.file must be a string");
      c.calibration_file = *file;
    }
  }
  if (auto* m = root["monitor"].as_table()) {
    check_keys(*m, "monitor", {"period_ms", "available_bandwidth_mbps"}, source);
    c.monitor.period_s = number(r["monitor"]["period_ms"], c.monitor.period_s * 1e3, "monitor.period_ms", source, 1e-3, 1e6) * 1e-3;
    c.monitor.available_bandwidth =
        number(r["monitor"]["available_bandwidth_mbps"], c.monitor.available_bandwidth / 1e6,
               "monitor.available_bandwidth_mbps", source) * 1e6;
  }
  if (auto* rc = root["reconfig"].as_table()) {
    check_keys(*rc, "reconfig", {"policy", "c_reconfig_ms", "c_replicate_ms", "history", "min_gain", "react_idle_ms"}, source);
    if (rc->contains("policy")) {
      auto name = r["reconfig"]["policy"].value<std::string>();
      if (!name || (*name != "none" && *name != "algorithm1" && *name != "sticky" && *name != "reactive")) {
        fail(source, "reconfig.policy must be \"none\", \"algorithm1\", \"sticky\" or \"reactive\"");
      }
      c.reconfig.policy = *name;
    }
    c.reconfig.c_reconfig_s =
        number(r["reconfig"]["c_reconfig_ms"], c.reconfig.c_reconfig_s * 1e3, "reconfig.c_reconfig_ms", source, 0, 1e6) * 1e-3;
    if (rc->contains("c_replicate_ms")) {
      c.reconfig.c_replicate_s = number(r["reconfig"]["c_replicate_ms"], 0, "reconfig.c_replicate_ms", source, 0, 1e6) * 1e-3;
    }
    c.reconfig.history = number(r["reconfig"]["history"], c.reconfig.history, "reconfig.history", source, 0, 1);
    c.reconfig.min_gain = number(r["reconfig"]["min_gain"], c.reconfig.min_gain, "reconfig.min_gain", source, 0, 1e6);
    c.reconfig.react_idle_s =
        number(r["reconfig"]["react_idle_ms"], c.reconfig.react_idle_s * 1e3, "reconfig.react_idle_ms", source, 0, 1e6) * 1e-3;
  }
  if (auto* d = root["daemon"].as_table()) {
    check_keys(*d, "daemon", {"socket", "allowed_uids"}, source);
    if (d->contains("socket")) {
      auto path = r["daemon"]["socket"].value<std::string>();
      if (!path) fail(source, "daemon.socket must be a path");
      c.daemon.socket = *path;
    }
    if (auto* uids = d->get_as<toml::array>("allowed_uids")) {
      c.daemon.allowed_uids.clear();
      for (const auto& item : *uids) {
        auto uid = item.value<int64_t>();
        if (!uid || *uid < 0 || *uid > UINT32_MAX) fail(source, "daemon.allowed_uids must list user ids");
        c.daemon.allowed_uids.push_back(static_cast<uint32_t>(*uid));
      }
    } else if (d->contains("allowed_uids")) {
      fail(source, "daemon.allowed_uids must be an array of user ids");
    }
  }
  if (auto* l = root["limits"].as_table()) {
    check_keys(*l, "limits", {"sessions", "queues_per_session", "registered_mib_per_session",
                              "jobs_in_flight_per_session", "max_queue_capacity", "connections_per_uid",
                              "hello_timeout_ms", "output_buffer_kib"}, source);
    DaemonSettings& d = c.daemon;
    d.max_sessions = count(r["limits"]["sessions"], d.max_sessions, "limits.sessions", source, 1, 65536);
    d.queues_per_session = count(r["limits"]["queues_per_session"], d.queues_per_session, "limits.queues_per_session",
                                 source, 1, 4096);
    d.registered_bytes_per_session =
        static_cast<uint64_t>(number(r["limits"]["registered_mib_per_session"],
                                     static_cast<double>(d.registered_bytes_per_session >> 20),
                                     "limits.registered_mib_per_session", source, 1, 1 << 22)) << 20;
    d.jobs_in_flight_per_session = count(r["limits"]["jobs_in_flight_per_session"], d.jobs_in_flight_per_session,
                                         "limits.jobs_in_flight_per_session", source, 1, 1u << 20);
    d.max_queue_capacity = count(r["limits"]["max_queue_capacity"], d.max_queue_capacity, "limits.max_queue_capacity",
                                 source, TANDEM_RING_MIN_CAPACITY, TANDEM_RING_MAX_CAPACITY);
    d.connections_per_uid = count(r["limits"]["connections_per_uid"], d.connections_per_uid,
                                  "limits.connections_per_uid", source, 1, 65536);
    d.hello_timeout_ms = count(r["limits"]["hello_timeout_ms"], d.hello_timeout_ms, "limits.hello_timeout_ms", source,
                               1, 3'600'000);
    d.output_buffer_kib = count(r["limits"]["output_buffer_kib"], d.output_buffer_kib, "limits.output_buffer_kib",
                                source, 128, 1u << 20);
  }
  return named_resident;
}

}  // namespace

// A document only overrides what it names: the built-in default is always the base layer.
Config parse_config(std::string_view text, std::string_view source) {
  Config c;
  apply_config(c, default_config_text(), "<built-in default>");
  bool user_resident = false;
  if (text.data() != default_config_text().data()) user_resident = apply_config(c, text, source);
  c.source = std::string(source);
  if (c.fabric.device.kind == "rtl") {
    // The rtl device has only the accelerators in rtl/: they are resident unless the user said otherwise.
    if (!user_resident) {
      c.fabric.resident.clear();
      for (const auto& e : devices::rtl::rtl_catalog()) c.fabric.resident.emplace_back(e.name);
    }
    for (const std::string& name : c.fabric.resident) {
      if (devices::rtl::find_rtl_entry(name) == nullptr) {
        fail(source, "fabric.resident: '" + name + "' has no RTL accelerator (device.kind = \"rtl\")");
      }
    }
  }
  if (c.fabric.resident.size() > c.fabric.slots) {
    if (user_resident) fail(source, "fabric.resident lists more functions than slots");
    c.fabric.resident.resize(c.fabric.slots);  // fewer slots than the default lists: keep the first ones
  }
  return c;
}

Config load_config(const std::string& path) {
  if (path.empty()) return parse_config(default_config_text(), "<built-in default>");
  std::ifstream in(path);
  if (!in) throw Error(Status::io_error, "cannot read configuration file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path);
}

namespace {

// The device's share of the timing: the RTL accelerators' own, and the bitstream delay.
void apply_device_timing(const DeviceSettings& d, std::array<model::AccelModel, TANDEM_FN_MAX>& models) {
  const bool rtl = d.kind == "rtl";
  const double bitstream_s = devices::rtl::slot_reconfiguration_s(
      d.slot_rows, devices::rtl::ConfigPort{4, d.config_port_bps / 4, d.reconfig_setup_s});
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    model::AccelModel& m = models[fn->id];
    const devices::rtl::RtlCatalogEntry* e = devices::rtl::find_rtl_entry(fn->id);
    if (rtl) {
      const double reconfig_s = m.reconfig_s, bandwidth = m.bandwidth_bps;
      m = e != nullptr ? devices::rtl::nominal_model(*e, d.rtl_clock_hz) : model::AccelModel{};
      m.reconfig_s = reconfig_s;
      m.bandwidth_bps = e != nullptr ? bandwidth : 0;
    }
    if (e != nullptr && d.bitstream_delay()) m.reconfig_s = bitstream_s;
  }
}

}  // namespace

std::array<model::AccelModel, TANDEM_FN_MAX> resolve_models(const FabricConfig& fabric,
                                                            const std::function<double(uint16_t)>& cpu_rate) {
  std::array<model::AccelModel, TANDEM_FN_MAX> models{};
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    const FunctionTiming t = timing_or_default(fabric, fn->id);
    model::AccelModel& m = models[fn->id];
    if (t.throughput) {
      m.throughput = *t.throughput;
    } else {
      const double speedup = t.speedup.value_or(fn->default_speedup);
      const double given = cpu_rate ? cpu_rate(fn->id) : 0;
      const double base = given > 0 ? given : funcs::software_throughput(fn->id);
      m.throughput = speedup > 0 ? speedup * base : 0;
    }
    m.latency_s = t.latency_s;
    m.reconfig_s = t.reconfig_s;
    m.bandwidth_bps = t.bandwidth_bps;
  }
  apply_device_timing(fabric.device, models);
  return models;
}

engine::ReconfigParams reconfig_params(const Config& config) {
  engine::ReconfigParams p;
  p.period_ns = static_cast<engine::Time>(config.monitor.period_s * 1e9);
  p.c_reconfig_s = config.reconfig.c_reconfig_s;
  p.c_replicate_s = config.reconfig.c_replicate_s;
  p.history = config.reconfig.history;
  p.min_gain = config.reconfig.min_gain;
  p.react_idle_s = config.reconfig.react_idle_s;
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) p.xc[fn->id] = funcs::software_throughput(fn->id);
  return p;
}

engine::EngineConfig engine_config(const FabricConfig& fabric,
                                   const std::array<model::AccelModel, TANDEM_FN_MAX>& models) {
  engine::EngineConfig ec;
  ec.slots = fabric.slots;
  ec.queues = fabric.queues;
  ec.queue_capacity = fabric.queue_capacity;
  ec.max_job_ns = static_cast<engine::Time>(fabric.max_job_s * 1e9);
  ec.models = models;
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    ec.known.set(fn->id);
    // The rtl device holds only the accelerators in rtl/.
    if (fabric.device.kind == "rtl" && devices::rtl::find_rtl_entry(fn->id) == nullptr) ec.no_accelerator.set(fn->id);
  }
  return ec;
}

}  // namespace tandem::devices
