#include "config/config.hpp"
#include "config/text_file.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <toml++/toml.h>

#include "abi/status.hpp"
#include "config/toml_checks.hpp"
#include "funcs/function.hpp"
#include "funcs/throughput.hpp"

namespace tandem::config {

namespace {

using Node = toml::node_view<const toml::node>;

[[noreturn]] void fail(std::string_view source, const std::string& what) { toml_fail(source, what); }

double number(const Node& n, double fallback, std::string_view name, std::string_view source, double min = 0,
              double max = 1e300) {
  if (!n) return fallback;
  auto v = n.value<double>();
  if (!v) fail(source, std::string(name) + " must be a number");
  if (!(*v >= min && *v <= max)) {  // so written, nan is out of range too
    std::ostringstream os;
    os << name << " = " << *v << " is out of range [" << min << ", " << max << "]";
    fail(source, os.str());
  }
  return *v;
}

uint32_t count(const Node& n, uint32_t fallback, std::string_view name, std::string_view source, uint32_t min,
               uint32_t max) {
  if (!n) return fallback;
  auto v = toml_integer(n);
  if (!v || *v < min || *v > max) {
    fail(source, std::string(name) + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                     "]");
  }
  return static_cast<uint32_t>(*v);
}

// A size in MiB, as bytes: a whole number (a fraction would be dropped without a word).
uint64_t mebibytes(const Node& n, uint64_t fallback_bytes, std::string_view name, std::string_view source, double min,
                   double max) {
  const double mib = number(n, static_cast<double>(fallback_bytes >> 20), name, source, min, max);
  if (mib != std::floor(mib)) fail(source, std::string(name) + " must be a whole number of MiB");
  return static_cast<uint64_t>(mib) << 20;
}

// A key that must be true or false: node_view::value<bool>() would take an integer's truth value.
bool flag(const toml::table& t, std::string_view key, bool fallback, std::string_view name, std::string_view source) {
  if (!t.contains(key)) return fallback;
  const toml::node* on = t.get(key);
  if (on == nullptr || !on->is_boolean()) fail(source, std::string(name) + " must be true or false");
  return on->as_boolean()->get();
}

// A string key that must be one of `allowed`.
void word(const toml::table& t, std::string_view key, std::string_view where,
          std::initializer_list<std::string_view> allowed, std::string& out, std::string_view source) {
  if (!t.contains(key)) return;
  auto value = Node{t}[key].value<std::string>();
  if (!value || std::find(allowed.begin(), allowed.end(), std::string_view(*value)) == allowed.end()) {
    std::string names;
    for (std::string_view a : allowed) names += (names.empty() ? "\"" : ", \"") + std::string(a) + "\"";
    fail(source, std::string(where) + "." + std::string(key) + " must be one of " + names);
  }
  out = *value;
}

// A list of function names (`resident`).
void function_list(const toml::table& t, std::string_view where, std::vector<std::string>& out, bool& named,
                   std::string_view source) {
  if (!t.contains("resident")) return;
  const auto* list = t.get_as<toml::array>("resident");
  if (list == nullptr) fail(source, std::string(where) + ".resident must be an array of function names");
  named = true;
  out.clear();
  for (const auto& item : *list) {
    auto name = item.value<std::string>();
    if (!name) fail(source, std::string(where) + ".resident must list function names");
    if (funcs::find_function(*name) == nullptr) {
      fail(source, std::string(where) + ".resident: unknown function '" + *name + "'");
    }
    out.push_back(*name);
  }
}

// Keys the table names override `base`; a speedup replaces a throughput and vice versa.
FunctionTiming parse_timing(const toml::table& t, std::string_view name, std::string_view source, FunctionTiming ft) {
  check_keys(t, "functions." + std::string(name),
             {"speedup", "throughput", "latency_us", "reconfig_ms", "bandwidth_mbps"}, source);
  Node v{t};
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

// Which device sections a document named `resident` in (the rtl default depends on it).
struct Named {
  bool emu_resident = false;
  bool rtl_resident = false;
  bool opencl_resident = false;
  bool cuda_resident = false;
};

const std::initializer_list<std::string_view> kDeviceKinds = {"emu", "rtl", "opencl", "cuda"};

// A free-form string key (a device selector).
void text(const toml::table& t, std::string_view key, std::string_view where, std::string& out, std::string_view source) {
  if (!t.contains(key)) return;
  auto value = Node{t}[key].value<std::string>();
  if (!value) fail(source, std::string(where) + "." + std::string(key) + " must be a string");
  out = *value;
}

// A device's local memory and the copy engines that fill it: local_memory_mib, copy_engines.
void local_memory(Node v, std::string_view where, std::string_view source, uint64_t& bytes, uint32_t& engines) {
  const std::string w(where);
  bytes = mebibytes(v["local_memory_mib"], bytes, w + ".local_memory_mib", source, 0, 1 << 20);
  engines = count(v["copy_engines"], engines, w + ".copy_engines", source, 0, 64);
  if (bytes > 0 && engines == 0) {
    fail(source, w + ": local memory needs copy engines to fill it (copy_engines >= 1, or local_memory_mib = 0)");
  }
}

void apply_opencl(OpenclSettings& o, const toml::table& t, std::string_view source, Named& named) {
  check_keys(t, "device.opencl",
             {"slots", "resident", "platform", "device", "access", "job_timeout_ms", "reduction_groups", "batch_max_jobs",
              "batch_max_job_bytes", "batch_staging", "local_memory_mib", "copy_engines", "fail_every_launches",
              "fail_allocations_over_kib", "kernel_dir"},
             source);
  Node v{t};
  o.slots = count(v["slots"], o.slots, "device.opencl.slots", source, 1, 256);
  function_list(t, "device.opencl", o.resident, named.opencl_resident, source);
  text(t, "platform", "device.opencl", o.platform, source);
  text(t, "device", "device.opencl", o.device, source);
  text(t, "kernel_dir", "device.opencl", o.kernel_dir, source);
  word(t, "access", "device.opencl", {"copy", "zero_copy", "job"}, o.access, source);
  o.job_timeout_s = number(v["job_timeout_ms"], o.job_timeout_s * 1e3, "device.opencl.job_timeout_ms", source, 1, 1e9) * 1e-3;
  o.reduction_groups = count(v["reduction_groups"], o.reduction_groups, "device.opencl.reduction_groups", source, 0, 1u << 16);
  o.batch_max_jobs = count(v["batch_max_jobs"], o.batch_max_jobs, "device.opencl.batch_max_jobs", source, 1, 4096);
  o.batch_max_job_bytes = count(v["batch_max_job_bytes"], o.batch_max_job_bytes, "device.opencl.batch_max_job_bytes", source, 4,
                                1u << 26);
  word(t, "batch_staging", "device.opencl", {"auto", "svm", "copies"}, o.batch_staging, source);
  local_memory(v, "device.opencl", source, o.local_bytes, o.copy_engines);
  o.fail_every_launches = count(v["fail_every_launches"], o.fail_every_launches, "device.opencl.fail_every_launches", source,
                                0, 1u << 30);
  o.fail_allocations_over_kib = count(v["fail_allocations_over_kib"], o.fail_allocations_over_kib,
                                      "device.opencl.fail_allocations_over_kib", source, 0, 1u << 30);
}

void apply_cuda(CudaSettings& c, const toml::table& t, std::string_view source, Named& named) {
  check_keys(t, "device.cuda",
             {"slots", "resident", "device", "mode", "access", "job_timeout_ms", "reduction_groups", "local_memory_mib",
              "copy_engines", "persistent_staging_mib"},
             source);
  Node v{t};
  c.slots = count(v["slots"], c.slots, "device.cuda.slots", source, 1, 256);
  function_list(t, "device.cuda", c.resident, named.cuda_resident, source);
  text(t, "device", "device.cuda", c.device, source);
  word(t, "mode", "device.cuda", {"launch", "persistent"}, c.mode, source);
  word(t, "access", "device.cuda", {"copy", "zero_copy"}, c.access, source);
  c.job_timeout_s = number(v["job_timeout_ms"], c.job_timeout_s * 1e3, "device.cuda.job_timeout_ms", source, 1, 1e9) * 1e-3;
  c.reduction_groups = count(v["reduction_groups"], c.reduction_groups, "device.cuda.reduction_groups", source, 0, 1u << 16);
  local_memory(v, "device.cuda", source, c.local_bytes, c.copy_engines);
  c.persistent_staging_bytes =
      uint64_t{count(v["persistent_staging_mib"], static_cast<uint32_t>(c.persistent_staging_bytes >> 20), "device.cuda.persistent_staging_mib",
                     source, 1, 4096)}
      << 20;
}

void apply_emu(EmuSettings& e, const toml::table& t, std::string_view source, Named& named) {
  check_keys(t, "device.emu",
             {"slots", "resident", "reconfig_delay", "link_gbps", "dma_setup_us", "sg_gbps", "sg_setup_us",
              "sg_page_ns", "local_memory_mib", "local_gbps", "copy_engines", "copy_engine_gbps",
              "copy_engine_setup_us", "tlb_entries", "tlb_ways", "tlb_scope", "tlb_walk_reads", "tlb_read_ns",
              "service_timeout_ms"},
             source);
  Node v{t};
  e.slots = count(v["slots"], e.slots, "device.emu.slots", source, 1, 1024);
  function_list(t, "device.emu", e.resident, named.emu_resident, source);
  word(t, "reconfig_delay", "device.emu", {"fixed", "bitstream"}, e.reconfig_delay, source);
  // Bandwidths in GB/s (0: free, no transfer charged), times in us or ns.
  e.link_bps = number(v["link_gbps"], e.link_bps / 1e9, "device.emu.link_gbps", source, 0, 1e5) * 1e9;
  e.dma_setup_s = number(v["dma_setup_us"], e.dma_setup_s * 1e6, "device.emu.dma_setup_us", source, 0, 1e6) * 1e-6;
  e.sg_bps = number(v["sg_gbps"], e.sg_bps / 1e9, "device.emu.sg_gbps", source, 0, 1e5) * 1e9;
  e.sg_setup_s = number(v["sg_setup_us"], e.sg_setup_s * 1e6, "device.emu.sg_setup_us", source, 0, 1e6) * 1e-6;
  e.sg_page_s = number(v["sg_page_ns"], e.sg_page_s * 1e9, "device.emu.sg_page_ns", source, 0, 1e9) * 1e-9;
  local_memory(v, "device.emu", source, e.local_bytes, e.copy_engines);
  e.local_bps = number(v["local_gbps"], e.local_bps / 1e9, "device.emu.local_gbps", source, 0, 1e5) * 1e9;
  e.copy_engine_bps =
      number(v["copy_engine_gbps"], e.copy_engine_bps / 1e9, "device.emu.copy_engine_gbps", source, 1e-6, 1e5) * 1e9;
  e.copy_engine_setup_s = number(v["copy_engine_setup_us"], e.copy_engine_setup_s * 1e6,
                                 "device.emu.copy_engine_setup_us", source, 0, 1e6) * 1e-6;
  e.tlb_entries = count(v["tlb_entries"], e.tlb_entries, "device.emu.tlb_entries", source, 1, 1u << 20);
  e.tlb_ways = count(v["tlb_ways"], e.tlb_ways, "device.emu.tlb_ways", source, 1, 1u << 20);
  word(t, "tlb_scope", "device.emu", {"shared", "per_slot"}, e.tlb_scope, source);
  e.tlb_walk_reads = number(v["tlb_walk_reads"], e.tlb_walk_reads, "device.emu.tlb_walk_reads", source, 0, 1e3);
  e.tlb_read_s = number(v["tlb_read_ns"], e.tlb_read_s * 1e9, "device.emu.tlb_read_ns", source, 0, 1e9) * 1e-9;
  e.service_timeout_s =
      number(v["service_timeout_ms"], e.service_timeout_s * 1e3, "device.emu.service_timeout_ms", source, 1e-3, 3.6e6) * 1e-3;
  if (e.tlb_ways > e.tlb_entries) fail(source, "device.emu: tlb_ways cannot exceed tlb_entries");
}

void apply_rtl(RtlSettings& r, const toml::table& t, std::string_view source, Named& named) {
  check_keys(t, "device.rtl", {"slots", "resident", "reconfig_delay", "clock_mhz", "max_cycles", "worker_nice"},
             source);
  Node v{t};
  r.slots = count(v["slots"], r.slots, "device.rtl.slots", source, 1, 256);
  function_list(t, "device.rtl", r.resident, named.rtl_resident, source);
  word(t, "reconfig_delay", "device.rtl", {"fixed", "bitstream"}, r.reconfig_delay, source);
  r.clock_hz = number(v["clock_mhz"], r.clock_hz / 1e6, "device.rtl.clock_mhz", source, 1e-3, 1e5) * 1e6;
  if (v["max_cycles"]) {
    auto cycles = toml_integer(v["max_cycles"]);
    if (!cycles || *cycles < 1) fail(source, "device.rtl.max_cycles must be a positive integer");
    r.max_cycles = static_cast<uint64_t>(*cycles);
  }
  if (v["worker_nice"]) {
    auto nice = toml_integer(v["worker_nice"]);
    if (!nice || *nice < 0 || *nice > 19) fail(source, "device.rtl.worker_nice must be an integer in [0, 19]");
    r.worker_nice = static_cast<int>(*nice);
  }
}

// [device], its shared bitstream keys and one section per kind.
void apply_device(DeviceSettings& d, const toml::table& t, std::string_view source, Named& named) {
  if (t.contains("kind")) {
    fail(source, "device.kind was replaced by device.kinds, a list: kinds = [\"rtl\"] (or [\"emu\", \"rtl\"])");
  }
  check_keys(t, "device", {"kinds", "slot_rows", "config_port_mbps", "reconfig_setup_us", "emu", "rtl", "opencl", "cuda"},
             source);
  Node v{t};
  if (t.contains("kinds")) {
    const auto* list = t.get_as<toml::array>("kinds");
    if (list == nullptr || list->empty()) fail(source, "device.kinds must be a non-empty list of device kinds");
    d.kinds.clear();
    for (const auto& item : *list) {
      auto kind = item.value<std::string>();
      if (!kind || std::find(kDeviceKinds.begin(), kDeviceKinds.end(), std::string_view(*kind)) == kDeviceKinds.end()) {
        fail(source, "device.kinds: unknown device kind '" + (kind ? *kind : std::string("?")) +
                         "' (known: \"emu\", \"rtl\", \"opencl\", \"cuda\")");
      }
      if (d.uses(*kind)) fail(source, "device.kinds names '" + *kind + "' twice");
      d.kinds.push_back(*kind);
    }
  }
  BitstreamSettings& b = d.bitstream;
  b.slot_rows = count(v["slot_rows"], b.slot_rows, "device.slot_rows", source, 1, 64);
  b.config_port_bps =
      number(v["config_port_mbps"], b.config_port_bps / 1e6, "device.config_port_mbps", source, 1e-3, 1e6) * 1e6;
  b.reconfig_setup_s =
      number(v["reconfig_setup_us"], b.reconfig_setup_s * 1e6, "device.reconfig_setup_us", source, 0, 1e9) * 1e-6;
  for (std::string_view kind : kDeviceKinds) {
    if (!t.contains(kind)) continue;
    const auto* section = t.get_as<toml::table>(kind);
    if (section == nullptr) fail(source, "device." + std::string(kind) + " must be a table");
    if (kind == "emu") apply_emu(d.emu, *section, source, named);
    if (kind == "rtl") apply_rtl(d.rtl, *section, source, named);
    if (kind == "opencl") apply_opencl(d.opencl, *section, source, named);
    if (kind == "cuda") apply_cuda(d.cuda, *section, source, named);
  }
}

void apply_fabric(FabricSettings& f, const toml::table& t, std::string_view source) {
  for (std::string_view moved : {"slots", "resident"}) {
    if (t.contains(moved)) {
      fail(source, "fabric." + std::string(moved) + " moved to the device's own section: [device.emu] " +
                       std::string(moved) + " (or [device.rtl] ...)");
    }
  }
  check_keys(t, "fabric", {"queues", "queue_capacity", "max_job_ms"}, source);
  Node v{t};
  f.queues = count(v["queues"], f.queues, "fabric.queues", source, 0, 1024);
  f.queue_capacity = count(v["queue_capacity"], f.queue_capacity, "fabric.queue_capacity", source, 1, 1u << 20);
  f.max_job_s = number(v["max_job_ms"], f.max_job_s * 1e3, "fabric.max_job_ms", source) * 1e-3;
}

void apply_functions(Config& c, const toml::table& fns, std::string_view source) {
  for (const auto& [key, node] : fns) {
    const std::string name(key.str());
    const auto* fn = funcs::find_function(name);
    if (fn == nullptr) fail(source, "[functions." + name + "]: unknown function");
    const auto* t = node.as_table();
    if (t == nullptr) fail(source, "[functions." + name + "] must be a table");
    c.functions[fn->id] = parse_timing(*t, name, source, function_timing(c, fn->id));
  }
  // `work` also configures the 16 work variants that have no table of their own in this document.
  if (const auto* work = fns.get_as<toml::table>("work")) {
    for (uint16_t i = 0; i < TANDEM_WORK_FUNCTIONS; ++i) {
      const uint16_t id = static_cast<uint16_t>(TANDEM_FN_WORK_BASE + i);
      if (!fns.contains(funcs::find_function(id)->name)) {
        c.functions[id] = parse_timing(*work, "work", source, function_timing(c, id));
      }
    }
  }
}

void apply_dispatcher(DispatcherSettings& d, const toml::table& t, std::string_view source) {
  check_keys(t, "dispatcher", {"idle_spin_us", "batch", "cpu", "avoid_caller_cpus"}, source);
  Node v{t};
  d.avoid_caller_cpus = flag(t, "avoid_caller_cpus", d.avoid_caller_cpus, "dispatcher.avoid_caller_cpus", source);
  if (v["cpu"]) {
    auto cpu = toml_integer(v["cpu"]);
    if (!cpu || *cpu < -1 || *cpu > 4095) fail(source, "dispatcher.cpu must be -1 or a CPU number");
    d.cpu = static_cast<int>(*cpu);
  }
  d.idle_spin_s = number(v["idle_spin_us"], d.idle_spin_s * 1e6, "dispatcher.idle_spin_us", source, 0, 1e7) * 1e-6;
  d.batch = count(v["batch"], d.batch, "dispatcher.batch", source, 1, 1u << 16);
}

void apply_reconfig(ReconfigSettings& r, const toml::table& t, std::string_view source) {
  check_keys(t, "reconfig", {"policy", "c_reconfig_ms", "c_replicate_ms", "history", "min_gain", "react_idle_ms"},
             source);
  Node v{t};
  if (t.contains("policy")) {
    auto spec = v["policy"].value<std::string>();
    if (!spec) fail(source, "reconfig.policy must be a string");
    try {
      (void)parse_policy(*spec, {});  // the name and any parameters are checked here, not at start-up
    } catch (const Error& e) {
      fail(source, std::string("reconfig.policy: ") + e.what());
    }
    r.policy = *spec;
  }
  r.c_reconfig_s = number(v["c_reconfig_ms"], r.c_reconfig_s * 1e3, "reconfig.c_reconfig_ms", source, 0, 1e6) * 1e-3;
  if (t.contains("c_replicate_ms")) {
    r.c_replicate_s = number(v["c_replicate_ms"], 0, "reconfig.c_replicate_ms", source, 0, 1e6) * 1e-3;
  }
  r.history = number(v["history"], r.history, "reconfig.history", source, 0, 1);
  r.min_gain = number(v["min_gain"], r.min_gain, "reconfig.min_gain", source, 0, 1e6);
  r.react_idle_s = number(v["react_idle_ms"], r.react_idle_s * 1e3, "reconfig.react_idle_ms", source, 0, 1e6) * 1e-3;
}

void apply_daemon(DaemonSettings& d, const toml::table& t, std::string_view source) {
  check_keys(t, "daemon", {"socket", "allowed_uids"}, source);
  Node v{t};
  if (t.contains("socket")) {
    auto path = v["socket"].value<std::string>();
    if (!path) fail(source, "daemon.socket must be a path");
    d.socket = *path;
  }
  if (auto* uids = t.get_as<toml::array>("allowed_uids")) {
    d.allowed_uids.clear();
    for (const auto& item : *uids) {
      auto uid = toml_integer(item);
      if (!uid || *uid < 0 || *uid > UINT32_MAX) fail(source, "daemon.allowed_uids must list user ids");
      d.allowed_uids.push_back(static_cast<uint32_t>(*uid));
    }
  } else if (t.contains("allowed_uids")) {
    fail(source, "daemon.allowed_uids must be an array of user ids");
  }
}

void apply_limits(DaemonSettings& d, const toml::table& t, std::string_view source) {
  check_keys(t, "limits", {"sessions", "queues_per_session", "registered_mib_per_session",
                           "jobs_in_flight_per_session", "max_queue_capacity", "connections_per_uid",
                           "hello_timeout_ms", "output_buffer_kib"}, source);
  Node v{t};
  d.max_sessions = count(v["sessions"], d.max_sessions, "limits.sessions", source, 1, 65536);
  d.queues_per_session = count(v["queues_per_session"], d.queues_per_session, "limits.queues_per_session", source,
                               1, 4096);
  d.registered_bytes_per_session = mebibytes(v["registered_mib_per_session"], d.registered_bytes_per_session,
                                             "limits.registered_mib_per_session", source, 1, 1 << 22);
  d.jobs_in_flight_per_session = count(v["jobs_in_flight_per_session"], d.jobs_in_flight_per_session,
                                       "limits.jobs_in_flight_per_session", source, 1, 1u << 20);
  d.max_queue_capacity = count(v["max_queue_capacity"], d.max_queue_capacity, "limits.max_queue_capacity", source,
                               TANDEM_RING_MIN_CAPACITY, TANDEM_RING_MAX_CAPACITY);
  d.connections_per_uid = count(v["connections_per_uid"], d.connections_per_uid, "limits.connections_per_uid", source,
                                1, 65536);
  d.hello_timeout_ms = count(v["hello_timeout_ms"], d.hello_timeout_ms, "limits.hello_timeout_ms", source, 1,
                             3'600'000);
  d.output_buffer_kib = count(v["output_buffer_kib"], d.output_buffer_kib, "limits.output_buffer_kib", source, 128,
                              1u << 20);
}

void apply_energy(model::EnergyModel& e, const toml::table& t, std::string_view source) {
  check_keys(t, "energy", {"cpu_busy_w", "cpu_idle_w", "slot_busy_w", "slot_idle_w", "copy_engine_w",
                           "link_pj_per_byte", "local_pj_per_byte"}, source);
  Node v{t};
  e.cpu_busy_w = number(v["cpu_busy_w"], e.cpu_busy_w, "energy.cpu_busy_w", source, 0, 1e4);
  e.cpu_idle_w = number(v["cpu_idle_w"], e.cpu_idle_w, "energy.cpu_idle_w", source, 0, 1e4);
  e.slot_busy_w = number(v["slot_busy_w"], e.slot_busy_w, "energy.slot_busy_w", source, 0, 1e4);
  e.slot_idle_w = number(v["slot_idle_w"], e.slot_idle_w, "energy.slot_idle_w", source, 0, 1e4);
  e.copy_engine_w = number(v["copy_engine_w"], e.copy_engine_w, "energy.copy_engine_w", source, 0, 1e4);
  e.link_j_per_byte = number(v["link_pj_per_byte"], e.link_j_per_byte * 1e12, "energy.link_pj_per_byte", source, 0, 1e6) * 1e-12;
  e.local_j_per_byte =
      number(v["local_pj_per_byte"], e.local_j_per_byte * 1e12, "energy.local_pj_per_byte", source, 0, 1e6) * 1e-12;
}

uint32_t power_of_two(const Node& n, uint32_t fallback, std::string_view name, std::string_view source, uint32_t min,
                      uint32_t max) {
  const uint32_t v = count(n, fallback, name, source, min, max);
  if ((v & (v - 1)) != 0) fail(source, std::string(name) + " must be a power of two");
  return v;
}

void apply_trace(TraceSettings& t, const toml::table& table, std::string_view source) {
  check_keys(table, "trace",
             {"enabled", "dispatcher_records", "client_threads", "client_records", "max_records", "drain_ms"}, source);
  Node v{table};
  t.enabled = flag(table, "enabled", t.enabled, "trace.enabled", source);
  t.dispatcher_records =
      power_of_two(v["dispatcher_records"], t.dispatcher_records, "trace.dispatcher_records", source, 64, 1u << 24);
  t.client_threads = count(v["client_threads"], t.client_threads, "trace.client_threads", source, 0, 256);
  t.client_records = power_of_two(v["client_records"], t.client_records, "trace.client_records", source, 64, 1u << 20);
  t.max_records = count(v["max_records"], static_cast<uint32_t>(t.max_records), "trace.max_records", source, 1, 1u << 26);
  t.drain_s = number(v["drain_ms"], t.drain_s * 1e3, "trace.drain_ms", source, 0.1, 1e4) * 1e-3;
}

void apply_metrics(MetricsSettings& m, const toml::table& table, std::string_view source) {
  check_keys(table, "metrics", {"listen", "min_interval_ms"}, source);
  Node v{table};
  if (table.contains("listen")) {
    auto listen = v["listen"].value<std::string>();
    if (!listen) fail(source, "metrics.listen must be a string (\"127.0.0.1:9464\", or \"\" for none)");
    m.listen = *listen;
  }
  m.min_interval_s =
      number(v["min_interval_ms"], m.min_interval_s * 1e3, "metrics.min_interval_ms", source, 0, 6e4) * 1e-3;
}

// One TOML document; a syntax error names the source and the line.
toml::table parse_document(std::string_view text, std::string_view source) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << e.description() << " (line " << e.source().begin.line << ")";
    fail(source, os.str());
  }
}

// Applies one TOML document on top of `c`.
void apply_config(Config& c, std::string_view text, std::string_view source, Named& named) {
  const toml::table root = parse_document(text, source);
  check_keys(root, "top level",
             {"fabric", "functions", "dispatcher", "daemon", "monitor", "limits", "reconfig", "calibration", "device",
              "energy", "trace", "metrics"},
             source);
  const auto table = [&](std::string_view key) -> const toml::table* {
    if (!root.contains(key)) return nullptr;
    const auto* t = root.get_as<toml::table>(key);
    if (t == nullptr) fail(source, "[" + std::string(key) + "] must be a table");
    return t;
  };
  if (const auto* t = table("fabric")) apply_fabric(c.fabric, *t, source);
  if (const auto* t = table("functions")) apply_functions(c, *t, source);
  if (const auto* t = table("device")) apply_device(c.device, *t, source, named);
  if (const auto* t = table("dispatcher")) apply_dispatcher(c.dispatcher, *t, source);
  if (const auto* t = table("calibration")) {
    check_keys(*t, "calibration", {"file"}, source);
    if (t->contains("file")) {
      auto file = Node{*t}["file"].value<std::string>();
      if (!file) fail(source, "calibration.file must be a string");
      c.calibration_file = *file;
    }
  }
  if (const auto* t = table("monitor")) {
    check_keys(*t, "monitor", {"period_ms", "available_bandwidth_mbps"}, source);
    Node v{*t};
    c.monitor.period_s = number(v["period_ms"], c.monitor.period_s * 1e3, "monitor.period_ms", source, 1e-3, 1e6) * 1e-3;
    c.monitor.available_bandwidth = number(v["available_bandwidth_mbps"], c.monitor.available_bandwidth / 1e6,
                                           "monitor.available_bandwidth_mbps", source, -1) * 1e6;
    if (c.monitor.available_bandwidth < 0) c.monitor.available_bandwidth = -1;  // any negative: measured
  }
  if (const auto* t = table("reconfig")) apply_reconfig(c.reconfig, *t, source);
  if (const auto* t = table("daemon")) apply_daemon(c.daemon, *t, source);
  if (const auto* t = table("energy")) apply_energy(c.energy, *t, source);
  if (const auto* t = table("limits")) apply_limits(c.daemon, *t, source);
  if (const auto* t = table("trace")) apply_trace(c.trace, *t, source);
  if (const auto* t = table("metrics")) apply_metrics(c.metrics, *t, source);
}

// A device's resident list must fit its slots and name only what the device can hold.
void check_resident(std::vector<std::string>& resident, uint32_t slots, bool user_named, std::string_view where,
                    std::string_view source) {
  if (resident.size() <= slots) return;
  if (user_named) fail(source, std::string(where) + ".resident lists more functions than the device has slots");
  resident.resize(slots);  // fewer slots than the default lists: keep the first ones
}

}  // namespace

FunctionTiming function_timing(const Config& c, uint16_t id) {
  if (c.functions[id]) return *c.functions[id];
  const funcs::FunctionInfo* fn = funcs::find_function(id);
  FunctionTiming t;
  if (fn == nullptr) return t;
  t.speedup = fn->default_speedup;
  t.latency_s = fn->default_latency_s;
  t.reconfig_s = fn->default_reconfig_s;
  return t;
}

// A document only overrides what it names: the built-in default is always the base layer.
Config parse_config(std::string_view text, std::string_view source) {
  Config c;
  Named defaults, user;
  apply_config(c, default_config_text(), "<built-in default>", defaults);
  if (text.data() != default_config_text().data()) apply_config(c, text, source, user);
  c.source = std::string(source);
  // The rtl device holds only the accelerators of rtl/: all of them are resident unless the user says
  // otherwise (the device checks the names it cannot hold when it is built).
  if (!user.rtl_resident && !defaults.rtl_resident) {
    c.device.rtl.resident = {"accumulate", "sobel", "matmul", "dct_quant", "priority_queue"};
  }
  check_resident(c.device.emu.resident, c.device.emu.slots, user.emu_resident, "device.emu", source);
  check_resident(c.device.rtl.resident, c.device.rtl.slots, user.rtl_resident, "device.rtl", source);
  check_resident(c.device.opencl.resident, c.device.opencl.slots, user.opencl_resident, "device.opencl", source);
  check_resident(c.device.cuda.resident, c.device.cuda.slots, user.cuda_resident, "device.cuda", source);
  return c;
}

namespace {
void overlay_table(toml::table& base, const toml::table& upper) {
  for (const auto& [key, node] : upper) {
    toml::node* mine = base.get(key);
    if (mine != nullptr && mine->is_table() && node.is_table()) {
      overlay_table(*mine->as_table(), *node.as_table());
    } else {
      node.visit([&, k = key](const auto& value) { base.insert_or_assign(k, value); });
    }
  }
}
}  // namespace

std::string overlay_config_text(std::string_view base, std::string_view base_source, std::string_view upper,
                                std::string_view upper_source) {
  toml::table merged = parse_document(base, base_source);
  overlay_table(merged, parse_document(upper, upper_source));
  // Strings with a newline stay basic strings: a multi-line literal would lose a leading newline.
  std::ostringstream os;
  os << toml::toml_formatter{merged, toml::toml_formatter::default_flags & ~toml::format_flags::allow_multi_line_strings};
  return os.str();
}

Config load_config(const std::string& path) {
  if (path.empty()) return parse_config(default_config_text(), "<built-in default>");
  return parse_config(read_text_file(path, "configuration file"), path);
}

// ---------------------------------------------------------------- the reconfiguration policy

std::vector<std::string> policy_names() { return {"none", "algorithm1", "sticky", "reactive"}; }

PolicySpec parse_policy(std::string_view spec, const engine::ReconfigParams& base) {
  const size_t colon = spec.find(':');
  PolicySpec out{std::string(spec.substr(0, colon)), base};
  const std::vector<std::string> names = policy_names();
  if (std::find(names.begin(), names.end(), out.name) == names.end()) {
    throw Error(Status::invalid_argument,
                "unknown reconfiguration policy '" + out.name + "' (none, algorithm1, sticky, reactive)");
  }
  engine::ReconfigParams& p = out.params;
  // "reactive" is sticky that reacts between periods; its keys (react=0 included) may override that.
  if (out.name == "reactive") {
    p.react = 1;
    out.name = "sticky";
  }
  std::string_view rest = colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  while (!rest.empty()) {
    const size_t end = rest.find(':');
    const std::string_view item = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    const size_t eq = item.find('=');
    const std::string key(item.substr(0, eq));
    double value = 0;
    try {
      if (eq == std::string_view::npos) throw std::invalid_argument("no value");
      size_t used = 0;
      const std::string number_text(item.substr(eq + 1));
      value = std::stod(number_text, &used);
      if (used != number_text.size()) throw std::invalid_argument("trailing text");
    } catch (const std::exception&) {
      throw Error(Status::invalid_argument,
                  "reconfiguration policy parameter '" + std::string(item) + "' is not key=number");
    }
    if (key == "history") p.history = value;
    else if (key == "min_gain") p.min_gain = value;
    else if (key == "in_use_first") p.in_use_first = value;
    else if (key == "evict") p.evict = value;
    else if (key == "min_streak") p.min_streak = value;
    else if (key == "min_payoff") p.min_payoff = value;
    else if (key == "payoff_weight") p.payoff_weight = value;
    else if (key == "request_weight_us") p.request_weight_s = value * 1e-6;
    else if (key == "c_reconfig_ms") p.c_reconfig_s = value * 1e-3;
    else if (key == "c_replicate_ms") p.c_replicate_s = value * 1e-3;
    else if (key == "react") p.react = value;
    else if (key == "react_idle_ms") p.react_idle_s = value * 1e-3;
    else if (key == "react_idle_delays") p.react_idle_delays = value;
    else if (key == "react_period_chase") p.react_period_chase = value;
    else if (key == "react_payoff") p.react_payoff = value;
    else if (key == "react_adapt") p.react_adapt = value;
    else if (key == "react_scale_min") p.react_scale_min = value;
    else if (key == "react_scale_max") p.react_scale_max = value;
    else throw Error(Status::invalid_argument, "unknown reconfiguration policy parameter '" + key + "'");
  }
  return out;
}

std::unique_ptr<engine::ReconfigPolicy> make_policy(std::string_view spec, const engine::ReconfigParams& base) {
  const PolicySpec p = parse_policy(spec, base);
  return engine::make_reconfig_policy(p.name, p.params);
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

}  // namespace tandem::config
