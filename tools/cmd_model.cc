// `tandem model ...`: evaluate the cost model for given parameters (the thesis's aim A2: a model
// that software engineers can use without hardware at hand).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "abi/status.hpp"
#include "commands.hpp"
#include "model/cost_model.hpp"

namespace tandem::tools {

namespace {

enum class Quantity { size, rate, time };

// "594MiB", "231M", "6.2e8", "80ns", "1.5us", "1KiB". Sizes and rates take K/M/G (10^3) and
// Ki/Mi/Gi (2^10) with an optional B (and /s for rates); times take s, ms, us, ns (plain = seconds).
double parse_quantity(const std::string& text, Quantity kind) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw Error(Status::invalid_argument, "not a number: '" + text + "'");
  }
  std::string unit = text.substr(used);
  if (kind == Quantity::rate && unit.size() >= 2 && unit.compare(unit.size() - 2, 2, "/s") == 0) {
    unit.resize(unit.size() - 2);
  }
  double scale = 0;
  if (kind == Quantity::time) {
    static const std::map<std::string, double> times{{"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
    if (auto it = times.find(unit); it != times.end()) scale = it->second;
  } else {
    static const std::map<std::string, double> sizes{
        {"", 1},       {"B", 1},          {"K", 1e3},        {"KB", 1e3},           {"M", 1e6},
        {"MB", 1e6},   {"G", 1e9},        {"GB", 1e9},       {"Ki", 1024.0},        {"KiB", 1024.0},
        {"Mi", 1048576.0}, {"MiB", 1048576.0}, {"Gi", 1073741824.0}, {"GiB", 1073741824.0}};
    if (auto it = sizes.find(unit); it != sizes.end()) scale = it->second;
  }
  if (scale == 0) throw Error(Status::invalid_argument, "unknown unit in '" + text + "'");
  const double v = value * scale;
  if (!std::isfinite(v) || v < 0) throw Error(Status::invalid_argument, "must be a finite value >= 0: '" + text + "'");
  return v;
}

std::string format_time(double s) {
  if (!std::isfinite(s)) return "inf";
  if (s < 1e-6) return fmt::format("{:.1f} ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:.3f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

std::string format_size(uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

struct PartitionOptions {
  std::string preset;
  std::string xa, xc, o0, oc, da;
  uint64_t granularity = 0;  // 0 = from the preset, else 1
  uint32_t accelerators = 1;
  uint32_t jobs = 1;
  std::string queue_wait = "0";
  std::string bw_per_accel = "0";
  std::string available_bw = "0";
  std::vector<std::string> sizes;
  bool json = false;
};

model::CostParams params_from(const PartitionOptions& o) {
  model::CostParams p;
  if (o.preset == "zynq-accumulator") {  // thesis Table 4.3 (its MB are 2^20 bytes)
    p.xa = 594 * 1048576.0;
    p.xc = 231 * 1048576.0;
    p.o0 = 36e-9;
    p.oc = 80e-9;
    p.da = 401e-9;
    p.granularity = 8;
  } else if (!o.preset.empty()) {
    throw Error(Status::invalid_argument, "unknown preset '" + o.preset + "' (known: zynq-accumulator)");
  }
  const auto take = [&](const std::string& text, const char* name, Quantity q, double& field) {
    if (!text.empty()) {
      field = parse_quantity(text, q);
    } else if (o.preset.empty()) {
      throw Error(Status::invalid_argument, std::string("--") + name + " is required (or use --preset)");
    }
  };
  take(o.xa, "xa", Quantity::rate, p.xa);
  take(o.xc, "xc", Quantity::rate, p.xc);
  take(o.o0, "o0", Quantity::time, p.o0);
  take(o.oc, "oc", Quantity::time, p.oc);
  take(o.da, "da", Quantity::time, p.da);
  if (o.granularity > 0) p.granularity = o.granularity;
  if (!(p.xc > 0 && std::isfinite(p.xc))) throw Error(Status::invalid_argument, "--xc must be > 0");
  if (!(p.xa > 0 && std::isfinite(p.xa))) throw Error(Status::invalid_argument, "--xa must be > 0");
  for (const auto& [value, name] : {std::pair{p.o0, "--o0"}, std::pair{p.oc, "--oc"}, std::pair{p.da, "--da"}}) {
    if (!(value >= 0 && std::isfinite(value))) throw Error(Status::invalid_argument, std::string(name) + " must be >= 0");
  }
  p.bw_per_accel = parse_quantity(o.bw_per_accel, Quantity::rate);
  return p;
}

std::vector<uint64_t> sizes_from(const PartitionOptions& o) {
  std::vector<uint64_t> sizes;
  if (o.sizes.empty()) {
    for (uint64_t s = 8; s <= (1u << 20); s *= 2) sizes.push_back(s);
    return sizes;
  }
  for (const std::string& text : o.sizes) {
    const double v = parse_quantity(text, Quantity::size);
    if (v < 1 || v > 1e18) throw Error(Status::invalid_argument, "size out of range: '" + text + "'");
    sizes.push_back(static_cast<uint64_t>(std::llround(v)));
  }
  return sizes;
}

void run_partition(const PartitionOptions& o) {
  const model::CostParams p = params_from(o);
  model::LiveMetrics m;
  m.n_a = o.accelerators;
  m.d_q = parse_quantity(o.queue_wait, Quantity::time);
  m.available_bw = parse_quantity(o.available_bw, Quantity::rate);
  const uint32_t n_j = std::max<uint32_t>(o.jobs, 1);
  const std::vector<uint64_t> sizes = sizes_from(o);
  const double xa_eff = model::effective_accel_throughput(p, m);
  const uint64_t nl = model::break_even_work(p, xa_eff);
  const double nl_exact = model::break_even_work_exact(p, xa_eff);
  const double alpha_star = model::alpha_proportional(static_cast<double>(m.n_a) * xa_eff, p.xc);

  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  nlohmann::ordered_json alpha = nlohmann::ordered_json::object();
  nlohmann::ordered_json alpha_formula = nlohmann::ordered_json::object();
  std::string table;
  table += fmt::format("{:>10} {:>8} {:>8} {:>12} {:>12} {:>12} {:>8}\n", "size", "alpha", "chosen",
                       "t_sw", "t_split", "t_model", "speedup");
  for (uint64_t size : sizes) {
    const double n = static_cast<double>(size);
    const model::Plan plan = model::plan_call(p, m, n_j, n);
    const double t_split = model::partitioned_times(p, xa_eff, m.n_a, n_j, m.d_q, plan.alpha_model, n).total();
    const double speedup = model::effective_speedup(plan.sw_only, plan.predicted, 0);
    const std::string key = std::to_string(size);
    alpha[key] = plan.alpha;
    alpha_formula[key] = plan.alpha_model;
    rows.push_back({{"size", size},
                    {"alpha", plan.alpha},
                    {"alpha_formula", plan.alpha_model},
                    {"accelerate", plan.accelerate},
                    {"t_sw_s", plan.sw_only},
                    {"t_split_s", t_split},
                    {"t_model_s", plan.predicted},
                    {"effective_speedup", speedup}});
    table += fmt::format("{:>10} {:>8.4f} {:>8.4f} {:>12} {:>12} {:>12} {:>7.3f}x\n", format_size(size),
                         plan.alpha_model, plan.alpha, format_time(plan.sw_only), format_time(t_split),
                         format_time(plan.predicted), speedup);
  }

  if (o.json) {
    nlohmann::ordered_json out;
    out["params"] = {{"xa", p.xa},           {"xc", p.xc},        {"o0", p.o0},
                     {"oc", p.oc},           {"da", p.da},        {"granularity", p.granularity},
                     {"bw_per_accel", p.bw_per_accel}, {"n_a", m.n_a}, {"n_j", n_j},
                     {"d_q", m.d_q},         {"available_bw", m.available_bw}, {"xa_eff", xa_eff}};
    out["alpha_star"] = alpha_star;
    out["nl_bytes"] = nl;
    out["nl_exact"] = nl_exact;
    out["alpha"] = alpha;
    out["alpha_formula"] = alpha_formula;
    out["rows"] = rows;
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("X_a {:.4g} B/s x {} replica(s) (X'_a {:.4g} B/s), X_c {:.4g} B/s\n", p.xa, m.n_a, xa_eff, p.xc);
  fmt::print("O_0 {}, O_c {}, D_a {}, D_q {}, n_j {}, granularity {} B\n", format_time(p.o0),
             format_time(p.oc), format_time(p.da), format_time(m.d_q), n_j, p.granularity);
  fmt::print("alpha* = {:.4f} (Eq 4.2)\n", alpha_star);
  fmt::print("N_L = {} B (Eq 4.8/5.4: {:.2f} B, rounded up to the granularity)\n\n", nl, nl_exact);
  fmt::print("{}", table);
  fmt::print(
      "\nalpha: Eq 5.6 (= Eq 4.4 for one replica, one job, no queue) clamped to [0,1]; chosen: the\n"
      "model's decision (0 = SW-only: N <= N_L, or the split is not faster); t_sw = N/X_c + O_0;\n"
      "t_split = max(Eq 4.3a, 4.3b) at alpha; t_model = time of the chosen plan; speedup = t_sw/t_model.\n");
}

}  // namespace

void add_model_commands(CLI::App& app) {
  CLI::App* model = app.add_subcommand("model", "Evaluate the cooperative-processing cost model");
  model->require_subcommand(1);

  auto opts = std::make_shared<PartitionOptions>();
  CLI::App* part = model->add_subcommand(
      "partition",
      "N_L and the HW share alpha per workload size, with predicted SW-only and partitioned times.\n"
      "Example (thesis Table 4.3): tandem model partition --xa 594MiB --xc 231MiB --o0 36ns --oc 80ns\n"
      "  --da 401ns --granularity 8   (or: --preset zynq-accumulator)");
  part->add_option("--preset", opts->preset, "Start from a parameter set: zynq-accumulator (Table 4.3)");
  part->add_option("--xa", opts->xa, "Accelerator throughput X_a, bytes/s (e.g. 594MiB, 6.2e8)");
  part->add_option("--xc", opts->xc, "CPU throughput X_c, bytes/s");
  part->add_option("--o0", opts->o0, "CPU time of a SW call with no work, O_0 (e.g. 36ns; plain = s)");
  part->add_option("--oc", opts->oc, "CPU overhead of one accelerated job, O_c, including O_0");
  part->add_option("--da", opts->da, "Latency of one accelerated job, D_a");
  part->add_option("--granularity", opts->granularity, "Job boundaries are multiples of this many bytes");
  part->add_option("--accelerators", opts->accelerators, "Resident replicas n_a (Eq 5.6)")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  part->add_option("--jobs", opts->jobs, "Jobs per call n_j (Eq 5.6)")->check(CLI::Range(1u, 4096u))->capture_default_str();
  part->add_option("--queue-wait", opts->queue_wait, "Queue wait D_q (Eq 5.2)")->capture_default_str();
  part->add_option("--bw-per-accel", opts->bw_per_accel, "Bandwidth one replica needs, BW_a, bytes/s (0 = none)")
      ->capture_default_str();
  part->add_option("--available-bw", opts->available_bw, "Available bandwidth BW, bytes/s (0 = unknown)")
      ->capture_default_str();
  part->add_option("--sizes", opts->sizes, "Workload sizes (e.g. 8 64 1KiB); default: powers of two 8 B..1 MiB");
  part->add_flag("--json", opts->json, "Print JSON: nl_bytes, alpha (size -> chosen alpha), rows, params");
  part->callback([opts] { run_partition(*opts); });
}

}  // namespace tandem::tools
