// Self-calibration (issue 15): a runtime's live estimates of every function's X_c, X_a, D_a and O_c,
// learnt from the calls and jobs it observes (model::CostEstimator), seeded from the calibration (or
// the defaults), and persisted per device kind for the next run.
//
// The persisted file is a calibration file (calibration.hpp) with samples_* counts and the device's own
// figures it was learnt against (device_*; a function whose device now measures far otherwise starts
// from its seed again: learnt_figures_fit), at
// $TANDEM_LEARNED_DIR/learned-<kind>.toml, else next to the user's calibration
// ($XDG_CONFIG_HOME/tandem/ or ~/.config/tandem/). TANDEM_LEARNED_DIR=off keeps nothing on disk. A file
// that does not parse, or was learnt on another host or device kind, is ignored with a warning.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "client/calibration.hpp"
#include "model/learning.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::client {

// What one high-level call saw, handed to LearnedCosts once when it ends (one lock per call).
struct CallObservation {
  double sw_units = 0;   // units its CPU share processed
  double sw_wall_s = 0;  // wall time those took on this thread
  double share = 1;      // model::cpu_share when the call began
  // CPU time those took on this thread (a long enough software call measures it); < 0: not measured.
  // It gives an idle core's X_c directly; wall time / share is only as good as the share was.
  double sw_cpu_s = -1;
  struct Job {
    double units = 0;
    double device_s = 0;    // the completion record's device time
    double round_trip_s = -1;  // the host's part of D_a this call showed (one job per call carries it); < 0: none
  };
  static constexpr uint32_t kMaxJobs = 8;
  std::array<Job, kMaxJobs> jobs{};
  uint32_t job_count = 0;
  // The round trip includes waking a sleeping dispatcher: it bounds D_a's host part from above only.
  bool round_trip_bound_only = false;
  double job_overhead_s = 0;  // CPU time the call's submissions took, summed
  uint32_t overhead_jobs = 0;
};

class LearnedCosts {
 public:
  LearnedCosts();
  // Starts `function` over from `seed` (the calibration's or the defaults' parameters).
  void seed(uint16_t function, const model::CostParams& seed);
  // Takes the persisted figures of a learnt file for the functions it has.
  void restore(const Calibration& learnt);
  void observe(uint16_t function, const CallObservation& call);
  // The current estimates (lock-free; each field is consistent on its own).
  model::CostParams params(uint16_t function) const;
  // Changes whenever `function`'s estimates may have (read it before params(): a caller that keeps
  // what it derived from them recomputes once it moves).
  uint64_t version(uint16_t function) const;
  SampleCounts samples(uint16_t function) const;
  // The estimates of every function with samples, as a calibration (for saving and `tandem status`).
  Calibration snapshot(const std::string& device_kind) const;
  bool learnt_anything() const { return observed_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::mutex mutex;
    model::CostEstimator estimator;
    std::atomic<double> xc{0}, xa{0}, da{0}, oc{0};
    std::atomic<double> o0{0}, bw_per_accel{0};  // never learnt: the seed's
    std::atomic<uint64_t> granularity{1};
    std::atomic<uint64_t> cpu{0}, jobs{0}, overhead{0};
    std::atomic<uint64_t> version{0};  // bumped by every publish that moved a figure
  };
  // `seeded`: the seed or a restored file replaced the figures (the version moves whatever they are).
  void publish(Entry& e, bool seeded = false);
  std::unique_ptr<std::array<Entry, TANDEM_FN_MAX>> entries_;
  std::atomic<bool> observed_{false};
};

// The learnt file for `device_kind`, or "" when persistence is off or no home is known.
std::string learned_costs_path(const std::string& device_kind);
// Reads the learnt file for `device_kind` made on this host. nullopt, with `warning` set, when it
// exists but is corrupt or foreign; nullopt with an empty warning when there is none.
std::optional<Calibration> load_learned_costs(const std::string& path, const std::string& device_kind,
                                              std::string& warning);
// Whether a function's figures learnt on a device that measured `learnt_on` still fit the device that
// measures `now`: X_a within a factor of 3, and D_a within a factor of 3 or 20 us (round trips correct
// D_a within a few calls anyway; the check is mainly about X_a). Learnt figures are this machine's
// corrections to the device's own; a device that measures far otherwise (another emulated speedup, a
// way of reaching memory that a GPU runs at another speed) needs new ones. The factor is wide enough
// for start-up noise (PoCL's X_a spans up to 2.45x over start-ups, one of them during a build).
bool learnt_figures_fit(const LearntOnDevice& learnt_on, const model::AccelModel& now);
// This machine's host name, as learnt files record it.
std::string learned_host_name();

}  // namespace tandem::client
