#include "client/calibration.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>

#include "config/toml_checks.hpp"
#include "config/text_file.hpp"
#include "abi/status.hpp"

namespace tandem::client {

namespace {

// Typical costs on a current x86 server (measured by `tandem calibrate` on the build machine and
// rounded up): what an uncalibrated runtime assumes.
constexpr double kDefaultRoundTripS = 1.5e-6;  // submit -> dispatcher -> completion observed, no work
constexpr double kDefaultCallOverheadS = 60e-9;  // O_0: a high-level call that runs in software
constexpr double kDefaultJobOverheadS = 400e-9;  // O_c: submit, collect and combine one job

using config::check_keys;

[[noreturn]] void fail(std::string_view source, const std::string& what) { config::toml_fail(source, what); }

double number(const toml::table& t, std::string_view key, std::string_view where, std::string_view source,
              double min, double max) {
  const toml::node* n = t.get(key);
  if (n == nullptr) {
    std::ostringstream os;
    os << "[" << where << "] lacks " << key;
    fail(source, os.str());
  }
  std::optional<double> v = n->value<double>();
  if (!v || !(*v >= min && *v <= max)) {
    std::ostringstream os;
    os << "[" << where << "] " << key << " must be a number in [" << min << ", " << max << "]";
    fail(source, os.str());
  }
  return *v;
}

std::string text(const toml::table& t, std::string_view key, std::string_view source) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return {};
  std::optional<std::string> v = n->value<std::string>();
  if (!v) fail(source, "[calibration] " + std::string(key) + " must be a string");
  return *v;
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;  // control characters have no place here
  }
  return out + "\"";
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  std::string s = os.str();
  // TOML floats need a '.' or an exponent to stay floats.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// mkdir -p: every prefix of `dir` that ends before a '/', then `dir` itself.
void make_dirs(const std::string& dir) {
  for (size_t pos = dir.find('/', 1);; pos = dir.find('/', pos + 1)) {
    const std::string prefix = pos == std::string::npos ? dir : dir.substr(0, pos);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      std::ostringstream os;
      os << "cannot create directory '" << prefix << "': " << std::strerror(errno);
      throw Error(Status::io_error, os.str());
    }
    if (pos == std::string::npos) return;
  }
}

}  // namespace

Calibration parse_calibration(std::string_view text_in, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(text_in, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << e.description() << " (line " << e.source().begin.line << ")";
    fail(source, os.str());
  }
  check_keys(root, "top level", {"calibration", "functions", "access"}, source);
  Calibration c;
  c.source = std::string(source);
  const toml::table* head = root["calibration"].as_table();
  if (head == nullptr) fail(source, "missing [calibration] table");
  check_keys(*head, "calibration", {"version", "device", "host", "created"}, source);
  const toml::node* version = head->get("version");
  if (version == nullptr || config::toml_integer(*version) != kCalibrationVersion) {
    fail(source, "[calibration] version must be " + std::to_string(kCalibrationVersion));
  }
  c.device = text(*head, "device", source);
  if (c.device.empty()) fail(source, "[calibration] lacks device");
  c.host = text(*head, "host", source);
  c.created = text(*head, "created", source);

  if (const toml::node* fns_node = root.get("functions")) {
    const toml::table* fns = fns_node->as_table();
    if (fns == nullptr) fail(source, "[functions] must be a table");
    for (const auto& [key, node] : *fns) {
      const std::string name(key.str());
      const funcs::FunctionInfo* fn = funcs::find_function(name);
      if (fn == nullptr) fail(source, "[functions." + name + "]: unknown function");
      const toml::table* t = node.as_table();
      if (t == nullptr) fail(source, "[functions." + name + "] must be a table");
      const std::string where = "functions." + name;
      check_keys(*t, where,
                 {"units", "xc", "xa", "o0_ns", "oc_ns", "da_ns", "granularity", "bw_per_accel", "samples_cpu",
                  "samples_jobs", "samples_oc", "device_xa", "device_da_ns"},
                 source);
      model::CostParams p;
      p.xc = number(*t, "xc", where, source, 1e-300, 1e300);
      p.xa = number(*t, "xa", where, source, 0, 1e300);
      p.o0 = number(*t, "o0_ns", where, source, 0, 1e12) * 1e-9;
      p.oc = number(*t, "oc_ns", where, source, 0, 1e12) * 1e-9;
      p.da = number(*t, "da_ns", where, source, 0, 1e12) * 1e-9;
      p.bw_per_accel = t->contains("bw_per_accel") ? number(*t, "bw_per_accel", where, source, 0, 1e300) : 0;
      p.granularity = fn->granularity;
      if (const toml::node* g = t->get("granularity")) {
        std::optional<int64_t> v = config::toml_integer(*g);
        if (!v || *v < 1 || *v > (int64_t{1} << 40) || static_cast<uint64_t>(*v) % fn->granularity != 0) {
          fail(source, "[" + where + "] granularity must be a positive multiple of " +
                           std::to_string(fn->granularity));
        }
        p.granularity = static_cast<uint64_t>(*v);
      }
      c.functions[fn->id] = p;
      const auto count = [&](std::string_view count_key) {
        return t->contains(count_key) ? static_cast<uint64_t>(number(*t, count_key, where, source, 0, 1e15))
                                      : uint64_t{0};
      };
      c.samples[fn->id] = SampleCounts{count("samples_cpu"), count("samples_jobs"), count("samples_oc")};
      if (t->contains("device_xa") || t->contains("device_da_ns")) {
        if (!t->contains("device_xa") || !t->contains("device_da_ns")) {
          fail(source, "[" + where + "] needs both device_xa and device_da_ns, or neither");
        }
        c.learnt_on[fn->id] = LearntOnDevice{number(*t, "device_xa", where, source, 0, 1e300),
                                             number(*t, "device_da_ns", where, source, 0, 1e12) * 1e-9};
      }
    }
  }
  if (const toml::node* access_node = root.get("access")) {
    const toml::table* a = access_node->as_table();
    if (a == nullptr) fail(source, "[access] must be a table");
    check_keys(*a, "access", {"memcpy_gbps", "gather_gbps", "gather_page_ns", "handoff_us"}, source);
    model::HostAccessCosts h;
    h.memcpy_bps = number(*a, "memcpy_gbps", "access", source, 1e-6, 1e6) * 1e9;
    h.gather_bps = number(*a, "gather_gbps", "access", source, 1e-6, 1e6) * 1e9;
    h.gather_page_s = number(*a, "gather_page_ns", "access", source, 0, 1e9) * 1e-9;
    h.handoff_s = number(*a, "handoff_us", "access", source, 0, 1e9) * 1e-6;
    c.access = h;
  }
  return c;
}

Calibration load_calibration(const std::string& path) {
  return parse_calibration(config::read_text_file(path, "calibration file"), path);
}

std::string format_calibration(const Calibration& c) {
  std::ostringstream os;
  os << "# tandem calibration: cost-model parameters per function (thesis Table 4.3), written by\n"
        "# `tandem calibrate`. Throughputs in work units per second (see `units`), times in ns.\n"
        "# xc = X_c (CPU), xa = X_a (one accelerator), o0 = O_0 (SW call with no work),\n"
        "# oc = O_c (CPU cost of one job, O_0 included), da = D_a (job latency, call to result).\n\n";
  os << "[calibration]\n";
  os << "version = " << kCalibrationVersion << "\n";
  os << "device = " << quoted(c.device) << "\n";
  if (!c.host.empty()) os << "host = " << quoted(c.host) << "\n";
  if (!c.created.empty()) os << "created = " << quoted(c.created) << "\n";
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    const auto& p = c.functions[fn->id];
    if (!p) continue;
    os << "\n[functions." << fn->name << "]\n";
    os << "units = " << quoted(fn->units) << "\n";
    os << "xc = " << num(p->xc) << "\n";
    os << "xa = " << num(p->xa) << "\n";
    os << "o0_ns = " << num(p->o0 * 1e9) << "\n";
    os << "oc_ns = " << num(p->oc * 1e9) << "\n";
    os << "da_ns = " << num(p->da * 1e9) << "\n";
    os << "granularity = " << p->granularity << "\n";
    if (p->bw_per_accel > 0) os << "bw_per_accel = " << num(p->bw_per_accel) << "\n";
    const SampleCounts& n = c.samples[fn->id];
    if (n.cpu > 0) os << "samples_cpu = " << n.cpu << "\n";
    if (n.jobs > 0) os << "samples_jobs = " << n.jobs << "\n";
    if (n.overhead > 0) os << "samples_oc = " << n.overhead << "\n";
    if (const auto& on = c.learnt_on[fn->id]) {
      os << "device_xa = " << num(on->xa) << "\n";
      os << "device_da_ns = " << num(on->da_s * 1e9) << "\n";
    }
  }
  if (c.access) {
    const model::HostAccessCosts& h = *c.access;
    os << "\n# The host side of the data access methods (docs/access.md): the caller's staging copy, tandemd\n"
          "# gathering a client's pages, and its hand-off of a job to its mover and back.\n";
    os << "[access]\n";
    os << "memcpy_gbps = " << num(h.memcpy_bps / 1e9) << "\n";
    os << "gather_gbps = " << num(h.gather_bps / 1e9) << "\n";
    os << "gather_page_ns = " << num(h.gather_page_s * 1e9) << "\n";
    os << "handoff_us = " << num(h.handoff_s * 1e6) << "\n";
  }
  return os.str();
}

namespace {

// A private temporary name beside `path`: processes saving the same file at once each rename a whole one.
std::string temporary_name(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

void make_parent_dirs(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) make_dirs(path.substr(0, slash));
}

}  // namespace

void check_calibration_writable(const std::string& path) {
  make_parent_dirs(path);
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw Error(Status::io_error, "cannot write calibration file '" + path + "': it is a folder");
  }
  // What save_calibration will do: make its temporary file beside it (then rename it over the file).
  const std::string tmp = temporary_name(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(Status::io_error, "cannot write calibration file '" + path + "': " + std::strerror(errno));
  ::close(fd);
  ::unlink(tmp.c_str());
}

void save_calibration(const Calibration& c, const std::string& path) {
  make_parent_dirs(path);
  const std::string tmp = temporary_name(path);
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw Error(Status::io_error, "cannot write calibration file '" + path + "': " + std::strerror(errno));
    out << format_calibration(c);
    if (!out.flush()) {
      const int error = errno;
      out.close();
      std::remove(tmp.c_str());
      throw Error(Status::io_error, "cannot write calibration file '" + path + "': " + std::strerror(error));
    }
  }
  // Readers never see a half-written file.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(tmp.c_str());
    throw Error(Status::io_error, "cannot replace calibration file '" + path + "': " + std::strerror(error));
  }
}

std::string user_calibration_path() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/tandem/calibration.toml";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    return std::string(home) + "/.config/tandem/calibration.toml";
  }
  return {};
}

std::string find_calibration_file(const std::string& config_file) {
  if (const char* env = std::getenv("TANDEM_CALIBRATION"); env != nullptr && env[0] != '\0') return env;
  if (!config_file.empty()) return config_file;
  std::string user = user_calibration_path();
  return file_exists(user) ? user : std::string();
}

model::CostParams default_cost_params(const funcs::FunctionInfo& fn, const model::AccelModel& device_model,
                                      double software_throughput) {
  model::CostParams p;
  p.xc = software_throughput;
  p.xa = device_model.throughput;
  p.bw_per_accel = device_model.bandwidth_bps;
  p.o0 = kDefaultCallOverheadS;
  p.oc = kDefaultJobOverheadS;
  p.da = device_model.latency_s + kDefaultRoundTripS;
  if (!(device_model.throughput > 0) && device_model.latency_s == 0) {
    // No model of the device at hand (no device holds the function): the catalog's default speedup and latency.
    p.xa = fn.default_speedup * software_throughput;
    p.da = fn.default_latency_s + kDefaultRoundTripS;
  }
  p.granularity = fn.granularity;
  return p;
}

}  // namespace tandem::client
