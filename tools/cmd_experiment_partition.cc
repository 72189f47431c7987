// `tandem experiment partition`: the accumulator case study of thesis 4.6 (Fig 4.10) on this machine.
//
// For each workload size the call is run with every split alpha = 0, 0.001, ..., 1 (fixed-alpha
// calls, one job, interleaved in random order, many rounds, medians) to find the empirical optimum,
// and with the model's own choice (the runtime's auto policy: Eq 4.8 then Eq 4.4 with the calibrated
// parameters). The few best splits, SW-only, HW-only and the model are then measured again, longer
// and interleaved, so that the optimum is not just the luckiest of a thousand noisy medians. Around
// the predicted N_L a finer grid of sizes locates the empirical crossover: where the best partitioned
// call starts to beat the SW-only call (both fitted with a line, intersected).
//
// Writes results.csv (per size), sweep.csv (every split), nl_grid.csv, calibration.toml and
// summary.json, then partition.png through python/plot_partition.py (tools/plot.hpp) when Python and
// matplotlib are there. Prints N_L predicted vs empirical, the mean gap between the model's time and the optimum,
// and the model's mean relative prediction error.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "calibration_probe.hpp"
#include "base/stats.hpp"
#include "client/embedded.hpp"
#include "client/partitioned_call.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "plot.hpp"
#include "support/measure.hpp"

namespace tandem::tools {

namespace {

struct ExperimentOptions {
  std::string function = "accumulate";
  std::vector<std::string> sizes;
  std::string out = "partition-results";
  std::string calibration;  // a calibration file to use instead of calibrating first
  bool quick = false;
  double alpha_step = 0;    // 0: 0.001 (quick: 0.01)
  size_t rounds = 0;        // sweep rounds per split (0: 31; quick: 3)
  size_t confirm_rounds = 0;  // rounds of the re-measured candidates (0: 501; quick: 31)
  size_t candidates = 5;    // best splits re-measured
  size_t nl_points = 0;     // sizes of the fine grid around N_L (0: 24; quick: 6)
  bool no_plot = false;
  std::string python;       // "" = $TANDEM_PYTHON or python3
};

struct Settings {
  double alpha_step = 0.001;
  size_t rounds = 31;
  size_t confirm_rounds = 501;
  size_t confirm_passes = 5;
  size_t candidates = 5;
  size_t nl_points = 24;
};

// One split of a size: a fixed share for the accelerator.
struct Split {
  uint64_t hw_units = 0;           // nominal, from the alpha grid (the partitioner's rounding)
  uint64_t actual_hw_units = 0;    // what the call gave the hardware (job boundaries on the granularity)
  double alpha_min = 0, alpha_max = 0;  // the alphas of the grid that map to it
  bool on_grid = true;             // false: the model's split, added because the grid skips it
  bool candidate = false;          // re-measured in stage 2
  std::unique_ptr<engine::Partitioner> partitioner;
  std::vector<double> sweep;       // stage 1 samples (s)
  std::vector<double> confirm;     // stage 2 samples (s), if a candidate
  double sweep_median = 0;
  double confirm_median = 0;
};

struct SizeResult {
  uint64_t size = 0;
  funcs::Call call;
  int64_t expected = 0;
  std::vector<Split> splits;
  double model_alpha = 0;          // share the model gave the hardware (its most frequent plan)
  uint64_t model_hw_units = 0;     // nominal units of that plan
  size_t model_split = 0;          // index of the split the model chose
  double predicted_s = 0;          // the model's predicted time for that plan
  uint64_t nl = 0;                 // N_L from the model call
  std::map<uint64_t, std::pair<size_t, double>> plans;  // model plans seen: hw units -> (count, predicted)
  std::vector<double> auto_sweep, auto_confirm;  // the auto policy's own calls
  double model_s = 0;              // confirmed median of the model's split
  double auto_s = 0;               // confirmed median of the auto calls
  size_t opt = 0;                  // index of the empirical optimum (any split)
  size_t best_partitioned = 0;     // index of the best split with hardware work
  double sw_s = 0, hw_s = 0;
};


uint64_t parse_size(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw Error(Status::invalid_argument, "not a size: '" + text + "'");
  }
  const std::string unit = text.substr(used);
  static const std::map<std::string, double> units{{"", 1},          {"B", 1},          {"K", 1024.0},
                                                   {"KiB", 1024.0},  {"M", 1048576.0},  {"MiB", 1048576.0}};
  const auto it = units.find(unit);
  if (it == units.end() || !(v > 0)) throw Error(Status::invalid_argument, "not a size: '" + text + "'");
  return static_cast<uint64_t>(std::llround(v * it->second));
}

std::string size_text(uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

// 8 B .. 1 MiB: powers of two and the midpoints 1.5 x between them (all multiples of 4 bytes).
std::vector<uint64_t> default_sizes(bool quick) {
  if (quick) return {8, 1024, 65536};
  std::vector<uint64_t> s;
  for (uint64_t p = 8; p <= (1u << 20); p *= 2) {
    s.push_back(p);
    if (p < (1u << 20)) s.push_back(p + p / 2);
  }
  return s;
}

// The partitioner's rounding of a share to the granularity (Partitioner::hw_units_for).
uint64_t hw_units_for(double alpha, uint64_t n, uint64_t g) {
  if (alpha >= 1) return n;
  const double gd = static_cast<double>(g);
  const double v = std::round(alpha * static_cast<double>(n) / gd) * gd;
  return std::min<uint64_t>(static_cast<uint64_t>(v), n);
}

class PartitionExperiment {
 public:
  PartitionExperiment(client::Runtime& rt, const funcs::FunctionInfo& fn, const model::CostParams& params,
                      const ProbeData& data, const Settings& s)
      : rt_(rt), fn_(fn), params_(params), data_(data), settings_(s), rng_(20181203) {
    // The auto policy's calls use a partitioner of their own like the fixed splits do, so that both
    // pay the same call path and differ only in the decision. Its policy is the runtime's: auto,
    // one job, one split (thesis Ch4), the calibrated parameters.
    uint64_t version = 0;
    engine::PartitionerConfig c = rt.call_policy(fn.id, version).config;
    c.max_outstanding_jobs = 4;
    auto_ = std::make_unique<engine::Partitioner>(params, c);
  }

  // Stage 1 for one size: every split of the alpha grid, and the auto policy, in a fresh random
  // order each round.
  SizeResult sweep(uint64_t n) {
    SizeResult r;
    r.size = n;
    r.call = make_call(fn_, n, data_);
    r.expected = data_.reference(n);
    const uint64_t g = fn_.granularity;
    const size_t steps = static_cast<size_t>(std::llround(1.0 / settings_.alpha_step));
    for (size_t k = 0; k <= steps; ++k) {
      const double alpha = std::min(1.0, static_cast<double>(k) * settings_.alpha_step);
      const uint64_t h = hw_units_for(alpha, n, g);
      if (r.splits.empty() || r.splits.back().hw_units != h) {
        r.splits.push_back(make_split(n, h));
        r.splits.back().alpha_min = alpha;
      }
      r.splits.back().alpha_max = alpha;
    }
    const size_t auto_index = r.splits.size();
    std::vector<size_t> order(r.splits.size() + 1);
    std::iota(order.begin(), order.end(), size_t{0});
    for (size_t round = 0; round < settings_.rounds + 1; ++round) {  // round 0 warms up
      std::shuffle(order.begin(), order.end(), rng_);
      for (size_t i : order) {
        const double t = i == auto_index ? time_auto(r) : time_split(r, r.splits[i]);
        if (round > 0) (i == auto_index ? r.auto_sweep : r.splits[i].sweep).push_back(t);
      }
    }
    for (Split& sp : r.splits) sp.sweep_median = median(sp.sweep);

    // The model's split: its most frequent plan (the monitor's D_q can change a plan now and then).
    size_t best_count = 0;
    for (const auto& [h, seen] : r.plans) {
      if (seen.first > best_count) {
        best_count = seen.first;
        r.model_hw_units = h;
        r.predicted_s = seen.second;
      }
    }
    r.model_alpha = static_cast<double>(r.model_hw_units) / static_cast<double>(n);
    r.model_split = r.splits.size();
    for (size_t i = 0; i < r.splits.size(); ++i) {
      if (r.splits[i].hw_units == r.model_hw_units) r.model_split = i;
    }
    if (r.model_split == r.splits.size()) {  // the grid skips it (large N: 0.001 N > granularity)
      r.splits.push_back(make_split(n, r.model_hw_units));
      r.splits.back().on_grid = false;
      r.splits.back().alpha_min = r.splits.back().alpha_max = r.model_alpha;
    }

    // Candidates for stage 2: the best few, the best with hardware work (the N_L grid needs it even
    // where software alone wins), SW-only, HW-only and the model's split.
    std::vector<size_t> by_time;
    for (size_t i = 0; i < r.splits.size(); ++i) {
      if (r.splits[i].on_grid) by_time.push_back(i);
    }
    std::sort(by_time.begin(), by_time.end(),
              [&](size_t a, size_t b) { return r.splits[a].sweep_median < r.splits[b].sweep_median; });
    for (size_t k = 0; k < std::min(settings_.candidates, by_time.size()); ++k) r.splits[by_time[k]].candidate = true;
    for (size_t i : by_time) {
      if (r.splits[i].hw_units > 0) {
        r.splits[i].candidate = true;
        break;
      }
    }
    r.splits.front().candidate = true;
    r.splits[by_time.size() - 1].candidate = true;  // the last grid split: HW-only
    r.splits[r.model_split].candidate = true;
    return r;
  }

  // Stage 2: the candidates of each size and the auto policy, in a random order each round, in
  // `passes` passes over all sizes (a block of rounds per size and pass, its first round discarded to
  // warm the caches). A burst of load from other tenants then spoils one block of a size, not the
  // whole size, and the median over the passes shrugs it off.
  void confirm(std::vector<SizeResult>& sizes) {
    const size_t passes = std::max<size_t>(1, std::min<size_t>(settings_.confirm_passes, settings_.confirm_rounds));
    for (size_t pass = 0; pass < passes; ++pass) {
      for (SizeResult& r : sizes) {
        std::vector<size_t> order;
        for (size_t i = 0; i < r.splits.size(); ++i) {
          if (r.splits[i].candidate) order.push_back(i);
        }
        order.push_back(r.splits.size());  // the auto policy
        const size_t rounds = settings_.confirm_rounds / passes + (pass < settings_.confirm_rounds % passes ? 1 : 0);
        for (size_t round = 0; round < rounds + 1; ++round) {
          std::shuffle(order.begin(), order.end(), rng_);
          for (size_t i : order) {
            if (i == r.splits.size()) {
              const double t = time_auto(r);
              if (round > 0) r.auto_confirm.push_back(t);
            } else {
              const double t = time_split(r, r.splits[i]);
              if (round > 0) r.splits[i].confirm.push_back(t);
            }
          }
        }
      }
    }
    for (SizeResult& r : sizes) finish(r);
  }

 private:
  Split make_split(uint64_t n, uint64_t h) const {
    Split sp;
    sp.hw_units = h;
    engine::PartitionerConfig c;
    c.policy = engine::PartitionPolicy::fixed_alpha;
    c.fixed_alpha = static_cast<double>(h) / static_cast<double>(n);
    c.jobs_per_round = 1;
    c.max_outstanding_jobs = 4;
    sp.partitioner = std::make_unique<engine::Partitioner>(params_, c);
    return sp;
  }

  void finish(SizeResult& r) {
    r.auto_s = median(r.auto_confirm);
    bool first = true;
    for (size_t i = 0; i < r.splits.size(); ++i) {
      Split& sp = r.splits[i];
      if (!sp.candidate) continue;
      sp.confirm_median = median(sp.confirm);
      if (first || sp.confirm_median < r.splits[r.opt].confirm_median) r.opt = i;
      first = false;
    }
    r.best_partitioned = r.splits.size() - 1;
    for (size_t i = 0; i < r.splits.size(); ++i) {
      const Split& sp = r.splits[i];
      if (sp.candidate && sp.hw_units > 0 && sp.confirm_median < r.splits[r.best_partitioned].confirm_median) {
        r.best_partitioned = i;
      }
    }
    if (!r.splits[r.best_partitioned].candidate) {  // the last split is off-grid and not chosen: find one
      for (size_t i = 0; i < r.splits.size(); ++i) {
        if (r.splits[i].candidate && r.splits[i].hw_units > 0) r.best_partitioned = i;
      }
    }
    r.model_s = r.splits[r.model_split].confirm_median;
    r.sw_s = r.splits.front().confirm_median;
    size_t last_grid = 0;
    for (size_t i = 0; i < r.splits.size(); ++i) {
      if (r.splits[i].on_grid) last_grid = i;
    }
    r.hw_s = r.splits[last_grid].confirm_median;
  }

  double time_split(SizeResult& r, Split& sp) {
    const bench::TickClock& clock = bench::TickClock::get();
    int64_t value = 0;
    client::CallReport report;
    const uint64_t t0 = clock.now();
    const Status s = client::run_partitioned(rt_, fn_, r.call, *sp.partitioner, value, &report);
    const uint64_t t1 = clock.now();
    verify(s, value, r.expected);
    sp.actual_hw_units = report.counters.hw_units;
    return clock.to_ns(t1 - t0) * 1e-9;
  }

  double time_auto(SizeResult& r) {
    const bench::TickClock& clock = bench::TickClock::get();
    int64_t value = 0;
    client::CallReport report;
    const uint64_t t0 = clock.now();
    const Status s = client::run_partitioned(rt_, fn_, r.call, *auto_, value, &report);
    const uint64_t t1 = clock.now();
    verify(s, value, r.expected);
    const uint64_t h = report.partitioned ? hw_units_for(report.alpha, r.size, fn_.granularity) : 0;
    auto& seen = r.plans[h];
    ++seen.first;
    seen.second = report.predicted_s;
    r.nl = report.break_even_units;
    return clock.to_ns(t1 - t0) * 1e-9;
  }

  void verify(Status s, int64_t value, int64_t expected) const {
    if (s != Status::ok) throw Error(s, std::string("a call failed: ") + std::string(to_string(s)));
    if (fn_.units == "bytes" && value != expected) throw Error(Status::device_error, "a partitioned call returned a wrong sum");
  }

  client::Runtime& rt_;
  const funcs::FunctionInfo& fn_;
  model::CostParams params_;
  const ProbeData& data_;
  Settings settings_;
  std::mt19937 rng_;
  std::unique_ptr<engine::Partitioner> auto_;
};

// ---------------------------------------------------------------- set-up

Settings settings_for(const ExperimentOptions& o) {
  Settings st;
  st.alpha_step = o.alpha_step > 0 ? o.alpha_step : (o.quick ? 0.01 : 0.001);
  st.rounds = o.rounds > 0 ? o.rounds : (o.quick ? 3 : 31);
  st.confirm_rounds = o.confirm_rounds > 0 ? o.confirm_rounds : (o.quick ? 31 : 501);
  st.candidates = std::max<size_t>(o.candidates, 1);
  st.confirm_passes = o.quick ? 1 : 5;
  st.nl_points = o.nl_points > 0 ? o.nl_points : (o.quick ? 6 : 24);
  if (!(st.alpha_step > 0 && st.alpha_step <= 0.5)) throw Error(Status::invalid_argument, "--alpha-step in (0, 0.5]");
  return st;
}

// The sizes of Fig 4.10: --sizes or the defaults, on whole elements, sorted, without repeats.
std::vector<uint64_t> sizes_for(const ExperimentOptions& o, const funcs::FunctionInfo& fn) {
  std::vector<uint64_t> sizes;
  for (const std::string& s : o.sizes) sizes.push_back(parse_size(s));
  if (sizes.empty()) sizes = default_sizes(o.quick);
  const uint64_t unit_step = fn.units == "bytes" ? 4 : 1;  // accumulate works on whole int32s
  for (uint64_t& s : sizes) s = std::max(unit_step, s / unit_step * unit_step);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// ---------------------------------------------------------------- calibration

// The cost-model parameters the experiment judges: a calibration file's, or measured now. Written to
// OUT/calibration.toml either way.
model::CostParams calibrate(const ExperimentOptions& o, const funcs::FunctionInfo& fn, const ProbeOptions& po,
                            client::Calibration& cal) {
  if (!o.calibration.empty()) {
    cal = client::load_calibration(o.calibration);
    if (!cal.functions[fn.id]) throw Error(Status::invalid_argument, o.calibration + " has no " + std::string(fn.name));
  } else {
    const FunctionProbe probe = probe_function(fn, "emu", po);
    cal.device = "emu";
    cal.host = host_name();
    cal.created = utc_now();
    cal.functions[fn.id] = probe.params;
  }
  const model::CostParams p = *cal.functions[fn.id];
  client::save_calibration(cal, o.out + "/calibration.toml");
  fmt::print("parameters: X_c {:.3f} G{}/s, X_a {:.3f} G{}/s (x{:.2f}), O_0 {:.1f} ns, O_c {:.1f} ns, D_a {:.1f} ns\n",
             p.xc / 1e9, fn.units, p.xa / 1e9, fn.units, p.xa / p.xc, p.o0 * 1e9, p.oc * 1e9, p.da * 1e9);
  return p;
}

// ---------------------------------------------------------------- sweep

// Stage 1 and 2 over the sizes of Fig 4.10, with progress and the per-size table.
std::vector<SizeResult> sweep_sizes(PartitionExperiment& ex, const std::vector<uint64_t>& sizes, const Settings& st) {
  std::vector<SizeResult> results;
  for (size_t i = 0; i < sizes.size(); ++i) {
    results.push_back(ex.sweep(sizes[i]));
    const SizeResult& r = results.back();
    fmt::print("sweep [{:2}/{}] {:>9}: {:4} splits x {} rounds; model alpha {:.3f}\n", i + 1, sizes.size(),
               size_text(r.size), r.splits.size(), st.rounds, r.model_alpha);
    std::fflush(stdout);
  }
  fmt::print("confirming the best splits of every size: {} rounds in {} passes over the sizes...\n",
             st.confirm_rounds, st.confirm_passes);
  std::fflush(stdout);
  ex.confirm(results);
  fmt::print("{:>9}  {:>7} {:>9} {:>9}  {:>7} {:>9}  {:>9} {:>9}  {:>6}\n", "size", "model a", "model ns",
             "predicted", "opt a", "opt ns", "SW ns", "HW ns", "gap");
  for (const SizeResult& r : results) {
    const Split& opt = r.splits[r.opt];
    fmt::print("{:>9}  {:7.3f} {:9.0f} {:9.0f}  {:7.3f} {:9.0f}  {:9.0f} {:9.0f}  {:5.1f}%\n", size_text(r.size),
               r.model_alpha, r.model_s * 1e9, r.predicted_s * 1e9,
               static_cast<double>(opt.hw_units) / static_cast<double>(r.size), opt.confirm_median * 1e9,
               r.sw_s * 1e9, r.hw_s * 1e9, 100 * (r.model_s - opt.confirm_median) / opt.confirm_median);
  }
  return results;
}

bool partitioned_wins(const SizeResult& r) { return r.splits[r.best_partitioned].confirm_median < r.sw_s; }

// The finer grid of sizes around the predicted N_L, widened to cover a crossover the coarse sizes show.
std::vector<uint64_t> nl_grid(const std::vector<SizeResult>& results, uint64_t nl_predicted, uint64_t g, size_t points) {
  uint64_t lo = std::max(g, nl_predicted / 2);
  uint64_t hi = std::max(lo + g * points, 2 * nl_predicted);
  for (size_t i = 1; i < results.size(); ++i) {
    if (!partitioned_wins(results[i - 1]) && partitioned_wins(results[i])) {
      lo = std::min(lo, results[i - 1].size);
      hi = std::max(hi, results[i].size);
    }
  }
  std::vector<uint64_t> grid;
  for (size_t k = 0; k < points; ++k) {
    const double x = static_cast<double>(lo) +
                     (static_cast<double>(hi - lo) * static_cast<double>(k)) / static_cast<double>(points - 1);
    const uint64_t n = std::max(g, model::round_up(static_cast<uint64_t>(x), g));
    if (grid.empty() || grid.back() != n) grid.push_back(n);
  }
  return grid;
}

// ---------------------------------------------------------------- fit

// The empirical crossover: where the best partitioned call's line meets the SW-only line, fitted over
// the fine grid; the raw grid crossover where the fit is implausible.
struct Crossover {
  LineFit sw, partitioned;
  double nl_empirical = 0;
  uint64_t nl_raw = 0;     // the smallest grid size from which the partitioned call wins
  bool fit_ok = false;
};

Crossover fit_crossover(const std::vector<SizeResult>& fine, const std::vector<uint64_t>& grid) {
  std::vector<std::pair<double, double>> sw_pts, part_pts;
  for (const SizeResult& r : fine) {
    sw_pts.emplace_back(static_cast<double>(r.size), r.sw_s);
    part_pts.emplace_back(static_cast<double>(r.size), r.splits[r.best_partitioned].confirm_median);
  }
  Crossover c;
  c.sw = fit_line(sw_pts);
  c.partitioned = fit_line(part_pts);
  c.nl_empirical = c.sw.slope > c.partitioned.slope
                       ? (c.partitioned.intercept - c.sw.intercept) / (c.sw.slope - c.partitioned.slope)
                       : 0;
  for (size_t k = fine.size(); k-- > 0;) {
    if (!partitioned_wins(fine[k])) break;
    c.nl_raw = fine[k].size;
  }
  c.fit_ok = c.nl_empirical > 0 && c.nl_empirical >= static_cast<double>(grid.front()) / 2 &&
             c.nl_empirical <= 2.0 * static_cast<double>(grid.back());
  if (!c.fit_ok) c.nl_empirical = static_cast<double>(c.nl_raw);
  return c;
}

// The figures of merit. The model's choice is judged on the same measurements as the other splits
// (its split is always re-measured with them), so a size where it picked the optimum counts 0; the
// auto policy's own calls, timed alongside, are reported too.
struct Merit {
  double mean_gap = 0, mre = 0, mean_gap_auto = 0, mre_auto = 0;
  double gap_part = 0, mre_part = 0;      // sums over the sizes where a split was chosen or was best
  size_t n_part = 0;
  double gap_thesis = 0, mre_thesis = 0;  // sums over 8 B..1 KiB (the thesis's range)
  size_t n_thesis = 0;
};

Merit figures_of_merit(const std::vector<SizeResult>& results) {
  Merit m;
  for (const SizeResult& r : results) {
    const double opt_s = r.splits[r.opt].confirm_median;
    const double gap = (r.model_s - opt_s) / opt_s;  // >= 0: the optimum is the best split measured
    const double err = std::abs(r.predicted_s - r.model_s) / r.model_s;
    m.mean_gap_auto += std::abs(r.auto_s - opt_s) / opt_s;
    m.mre_auto += std::abs(r.predicted_s - r.auto_s) / r.auto_s;
    m.mean_gap += gap;
    m.mre += err;
    if (r.model_hw_units > 0 || r.splits[r.opt].hw_units > 0) {
      m.gap_part += gap;
      m.mre_part += err;
      ++m.n_part;
    }
    if (r.size <= 1024) {
      m.gap_thesis += gap;
      m.mre_thesis += err;
      ++m.n_thesis;
    }
  }
  const double n = static_cast<double>(results.size());
  m.mean_gap /= n;
  m.mre /= n;
  m.mean_gap_auto /= n;
  m.mre_auto /= n;
  return m;
}

// ---------------------------------------------------------------- output

void write_csvs(const std::string& out, const std::vector<SizeResult>& results, const std::vector<SizeResult>& fine) {
  std::string csv =
      "size,nl_predicted,model_alpha,model_hw_units,predicted_ns,model_ns,auto_ns,opt_alpha,opt_hw_units,opt_ns,"
      "best_partitioned_alpha,best_partitioned_ns,sw_ns,hw_ns,gap,prediction_error\n";
  for (const SizeResult& r : results) {
    const Split& o2 = r.splits[r.opt];
    const Split& bp = r.splits[r.best_partitioned];
    const double n = static_cast<double>(r.size);
    csv += fmt::format("{},{},{:.4f},{},{:.1f},{:.1f},{:.1f},{:.4f},{},{:.1f},{:.4f},{:.1f},{:.1f},{:.1f},{:.5f},{:.5f}\n",
                       r.size, r.nl, r.model_alpha, r.model_hw_units, r.predicted_s * 1e9, r.model_s * 1e9,
                       r.auto_s * 1e9, static_cast<double>(o2.hw_units) / n, o2.hw_units, o2.confirm_median * 1e9,
                       static_cast<double>(bp.hw_units) / n, bp.confirm_median * 1e9, r.sw_s * 1e9,
                       r.hw_s * 1e9, (r.model_s - o2.confirm_median) / o2.confirm_median,
                       std::abs(r.predicted_s - r.model_s) / r.model_s);
  }
  write_file(out + "/results.csv", csv);

  csv = "size,alpha_min,alpha_max,hw_units,actual_hw_units,on_grid,sweep_median_ns,samples,confirm_median_ns\n";
  for (const auto* set : {&results, &fine}) {
    for (const SizeResult& r : *set) {
      for (const Split& sp : r.splits) {
        csv += fmt::format("{},{:.4f},{:.4f},{},{},{},{:.1f},{},{}\n", r.size, sp.alpha_min, sp.alpha_max, sp.hw_units,
                           sp.actual_hw_units, sp.on_grid ? 1 : 0, sp.sweep_median * 1e9, sp.sweep.size(),
                           sp.confirm.empty() ? std::string() : fmt::format("{:.1f}", sp.confirm_median * 1e9));
      }
    }
  }
  write_file(out + "/sweep.csv", csv);

  csv = "size,sw_ns,best_partitioned_ns,best_partitioned_alpha,model_ns,predicted_ns\n";
  for (const SizeResult& r : fine) {
    const Split& bp = r.splits[r.best_partitioned];
    csv += fmt::format("{},{:.1f},{:.1f},{:.4f},{:.1f},{:.1f}\n", r.size, r.sw_s * 1e9, bp.confirm_median * 1e9,
                       static_cast<double>(bp.hw_units) / static_cast<double>(r.size), r.model_s * 1e9,
                       r.predicted_s * 1e9);
  }
  write_file(out + "/nl_grid.csv", csv);
}

// Everything summary.json holds besides the run's context (command, host, CPUs, duration), which the
// caller adds.
struct Findings {
  uint64_t nl_predicted = 0;
  double nl_error = 1;
  Crossover crossover;
  Merit merit;
  model::CostParams before, after;  // the calibration, and a second one at the end (drift)
};

double drift(double before, double now) { return before > 0 ? now / before - 1 : 0.0; }

void add_findings(nlohmann::ordered_json& j, const Findings& f, const Settings& st,
                  const std::vector<SizeResult>& results) {
  const Crossover& c = f.crossover;
  const Merit& m = f.merit;
  const model::CostParams& p = f.before;
  const model::CostParams& after = f.after;
  j["nl_predicted_bytes"] = f.nl_predicted;
  j["nl_empirical_bytes"] = c.nl_empirical;
  j["nl_empirical_raw_bytes"] = c.nl_raw;
  j["nl_empirical_method"] = c.fit_ok ? "line fits intersected" : "raw grid crossover";
  j["nl_relative_error"] = f.nl_error;
  j["mean_gap_to_optimum"] = m.mean_gap;
  j["prediction_mre"] = m.mre;
  j["mean_gap_to_optimum_auto_calls"] = m.mean_gap_auto;
  j["prediction_mre_auto_calls"] = m.mre_auto;
  if (m.n_part > 0) {
    j["mean_gap_to_optimum_partitioned_sizes"] = m.gap_part / static_cast<double>(m.n_part);
    j["prediction_mre_partitioned_sizes"] = m.mre_part / static_cast<double>(m.n_part);
  }
  if (m.n_thesis > 0) {
    j["mean_gap_to_optimum_8B_1KiB"] = m.gap_thesis / static_cast<double>(m.n_thesis);
    j["prediction_mre_8B_1KiB"] = m.mre_thesis / static_cast<double>(m.n_thesis);
  }
  j["targets"] = {{"mean_gap_le_2pct", m.mean_gap <= 0.02},
                  {"nl_within_8pct", f.nl_error <= 0.08},
                  {"prediction_mre_lt_12pct", m.mre < 0.12}};
  j["fits"] = {{"sw_intercept_ns", c.sw.intercept * 1e9}, {"sw_slope_ns_per_unit", c.sw.slope * 1e9},
               {"partitioned_intercept_ns", c.partitioned.intercept * 1e9},
               {"partitioned_slope_ns_per_unit", c.partitioned.slope * 1e9}};
  j["parameters_after"] = {{"xc", after.xc}, {"xa", after.xa}, {"o0_ns", after.o0 * 1e9}, {"oc_ns", after.oc * 1e9},
                           {"da_ns", after.da * 1e9}};
  j["calibration_drift"] = {{"xc", drift(p.xc, after.xc)}, {"xa", drift(p.xa, after.xa)}, {"o0", drift(p.o0, after.o0)},
                            {"oc", drift(p.oc, after.oc)}, {"da", drift(p.da, after.da)}};
  j["parameters"] = {{"xc", p.xc}, {"xa", p.xa}, {"o0_ns", p.o0 * 1e9}, {"oc_ns", p.oc * 1e9},
                     {"da_ns", p.da * 1e9}, {"granularity", p.granularity}};
  j["settings"] = {{"alpha_step", st.alpha_step}, {"rounds", st.rounds}, {"confirm_rounds", st.confirm_rounds},
                   {"confirm_passes", st.confirm_passes},
                   {"candidates", st.candidates}, {"nl_points", st.nl_points}};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const SizeResult& r : results) {
    const Split& o2 = r.splits[r.opt];
    rows.push_back({{"size", r.size},
                    {"model_alpha", r.model_alpha},
                    {"predicted_ns", r.predicted_s * 1e9},
                    {"model_ns", r.model_s * 1e9},
                    {"auto_ns", r.auto_s * 1e9},
                    {"opt_alpha", static_cast<double>(o2.hw_units) / static_cast<double>(r.size)},
                    {"opt_ns", o2.confirm_median * 1e9},
                    {"sw_ns", r.sw_s * 1e9},
                    {"hw_ns", r.hw_s * 1e9}});
  }
  j["sizes"] = rows;
}

void print_findings(const Findings& f, const funcs::FunctionInfo& fn) {
  const Crossover& c = f.crossover;
  const Merit& m = f.merit;
  const model::CostParams& p = f.before;
  const model::CostParams& after = f.after;
  fmt::print("\nN_L: predicted {} {}, empirical {:.0f} {} ({}; raw grid crossover {}): {:.1f}% apart (target <= 8%)\n",
             f.nl_predicted, fn.units, c.nl_empirical, fn.units, c.fit_ok ? "fitted lines" : "raw", c.nl_raw,
             f.nl_error * 100);
  fmt::print("model's completion time vs the empirical optimum: mean gap {:.2f}% (target <= 2%)\n", m.mean_gap * 100);
  fmt::print("model's prediction of its completion time: MRE {:.2f}% (target < 12%)\n", m.mre * 100);
  fmt::print("the auto policy's own calls, timed alongside: gap {:.2f}%, prediction MRE {:.2f}%\n", m.mean_gap_auto * 100,
             m.mre_auto * 100);
  fmt::print("calibration drift over the run: X_c {:+.1f}%, X_a {:+.1f}%, O_0 {:+.1f}%, O_c {:+.1f}%, D_a {:+.1f}%\n",
             100 * drift(p.xc, after.xc), 100 * drift(p.xa, after.xa), 100 * drift(p.o0, after.o0),
             100 * drift(p.oc, after.oc), 100 * drift(p.da, after.da));
  if (m.n_part > 0) {
    fmt::print("over the {} sizes where a split was chosen or was best: gap {:.2f}%, MRE {:.2f}%\n", m.n_part,
               m.gap_part / static_cast<double>(m.n_part) * 100, m.mre_part / static_cast<double>(m.n_part) * 100);
  }
  if (m.n_thesis > 0) {
    fmt::print("over 8 B..1 KiB (the thesis's range): gap {:.2f}%, MRE {:.2f}%\n",
               m.gap_thesis / static_cast<double>(m.n_thesis) * 100, m.mre_thesis / static_cast<double>(m.n_thesis) * 100);
  }
}

// ---------------------------------------------------------------- the experiment

void run_experiment(const ExperimentOptions& o, const std::string& command_line) {
  const auto started = std::chrono::steady_clock::now();
  const funcs::FunctionInfo* fn = funcs::find_function(o.function);
  if (fn == nullptr || (fn->units != "bytes" && fn->units != "cycles")) {
    throw Error(Status::invalid_argument, "--function must name a function with work units (accumulate, work)");
  }
  const Settings st = settings_for(o);
  const std::vector<uint64_t> sizes = sizes_for(o, *fn);
  const OutputDir out_dir(o.out);  // removed again if the run fails before writing to it

  // The case study's system: one accelerator for the function, one job per call, one split (thesis
  // Ch4 has no rebalancing); caller and dispatcher on their own CPUs.
  const bench::CpuPair cpus = bench::pick_cpu_pair();
  ProbeOptions po;
  po.quick = o.quick;
  po.client_cpu = cpus.a;
  po.dispatcher_cpu = cpus.distinct ? cpus.b : -1;
  po.config_text = fmt::format("[device.emu]\nresident = [\"{}\"]\n", fn->name);
  po.progress = [](const std::string& line) { fmt::print("calibrating {}\n", line); };
  client::Calibration cal;
  Findings f;
  f.before = calibrate(o, *fn, po, cal);
  const model::CostParams& p = f.before;

  client::PartitionTuning tuning;
  tuning.jobs_per_round = 1;
  tuning.rebalance = false;
  auto rt = open_probe_runtime(po, &cal, client::Mode::auto_mode, tuning);
  if (client::live_metrics(*rt, fn->id).n_a == 0) throw Error(Status::not_accelerated, "the function is not resident");
  const uint64_t largest = std::max(sizes.back(), 4 * model::break_even_work(p, p.xa) + 64);
  const ProbeData data(fn->units == "bytes" ? largest : 0);
  bench::ScopedPin pin(cpus.a);
  PartitionExperiment ex(*rt, *fn, p, data, st);

  const std::vector<SizeResult> results = sweep_sizes(ex, sizes, st);
  f.nl_predicted = results.front().nl;
  const std::vector<uint64_t> grid = nl_grid(results, f.nl_predicted, fn->granularity, st.nl_points);
  fmt::print("N_L grid: {} sizes from {} to {}\n", grid.size(), size_text(grid.front()), size_text(grid.back()));
  std::vector<SizeResult> fine;
  for (uint64_t n : grid) fine.push_back(ex.sweep(n));
  ex.confirm(fine);

  f.crossover = fit_crossover(fine, grid);
  f.merit = figures_of_merit(results);
  const double nl_empirical = f.crossover.nl_empirical;
  f.nl_error = nl_empirical > 0 ? std::abs(static_cast<double>(f.nl_predicted) - nl_empirical) / nl_empirical : 1;
  // The machine may have changed under the experiment (other tenants): calibrate again and report the
  // drift, so that a miss can be told apart from a wrong model.
  fmt::print("calibrating again to measure the drift...\n");
  std::fflush(stdout);
  f.after = probe_function(*fn, "emu", po).params;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  write_csvs(o.out, results, fine);
  nlohmann::ordered_json j;
  j["command"] = command_line;
  j["function"] = fn->name;
  j["units"] = fn->units;
  j["quick"] = o.quick;
  add_findings(j, f, st, results);
  j["cpus"] = {cpus.a, cpus.b};
  j["host"] = host_name();
  j["duration_s"] = seconds;
  if (auto* emb = dynamic_cast<client::EmbeddedRuntime*>(rt.get())) {
    j["dispatcher_max_lateness_ns"] = emb->dispatcher().snapshot().stats.max_lateness_ns;
  }
  write_file(o.out + "/summary.json", j.dump(2) + "\n");
  print_findings(f, *fn);
  fmt::print("wrote {}/results.csv, sweep.csv, nl_grid.csv, calibration.toml, summary.json ({:.1f} s)\n", o.out, seconds);

  if (!o.no_plot) {
    PlotOptions plot;
    plot.python = o.python;
    if (run_plot("plot_partition.py", {o.out}, plot)) fmt::print("wrote {}/partition.png\n", o.out);
  }
}

}  // namespace

void add_partition_experiment(CLI::App& experiment) {
  auto o = std::make_shared<ExperimentOptions>();
  CLI::App* cmd = experiment.add_subcommand(
      "partition", "Thesis 4.6 / Fig 4.10: sweep alpha per size, compare the model's split and N_L with the optimum");
  cmd->add_option("--function", o->function, "Function (accumulate, or work)")->capture_default_str();
  cmd->add_option("--sizes", o->sizes, "Workload sizes (8, 1KiB, 1MiB...); default 8 B..1 MiB in x1.5 steps");
  cmd->add_option("--out", o->out, "Output folder")->capture_default_str();
  cmd->add_option("--calibration", o->calibration, "Use this calibration file instead of calibrating first");
  cmd->add_flag("--quick", o->quick, "3 sizes, alpha step 0.01, few rounds: seconds (tests)");
  cmd->add_option("--alpha-step", o->alpha_step, "Step of the alpha sweep (default 0.001; quick 0.01)")
      ->check(number_in(1e-6, 0.5));
  cmd->add_option("--rounds", o->rounds, "Sweep rounds per split (default 31; quick 3)");
  cmd->add_option("--confirm-rounds", o->confirm_rounds, "Rounds of the re-measured best splits (default 501)");
  cmd->add_option("--candidates", o->candidates, "Best splits of the sweep re-measured")->capture_default_str();
  cmd->add_option("--nl-points", o->nl_points, "Sizes in the grid around N_L (default 24; quick 6)");
  cmd->add_flag("--no-plot", o->no_plot, "Do not run python/plot_partition.py");
  cmd->add_option("--python", o->python, "Python interpreter for the plot (default $TANDEM_PYTHON or python3)");
  cmd->callback([o] {
    std::string line = "tandem experiment partition --function " + o->function;
    if (!o->sizes.empty()) {
      line += " --sizes";
      for (const std::string& s : o->sizes) line += " " + s;
    }
    if (o->quick) line += " --quick";
    if (!o->calibration.empty()) line += " --calibration " + o->calibration;
    line += " --out " + o->out;
    run_experiment(*o, line);
  });
}

}  // namespace tandem::tools
