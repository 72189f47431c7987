// The reconfiguration manager's policies (thesis 5.4.7): Algorithm 1 as the thesis states it, and our
// own policies that try to beat it. Each runs once per monitoring period P after the monitor sampled,
// and changes the fabric only through Engine::load(), which enforces the two prohibitions (never a
// busy slot, never the only slot of a non-empty queue). Sans-I/O: the same objects run in the
// real-time dispatcher and in the discrete-event simulator.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/monitor.hpp"

namespace tandem::engine {

struct ReconfigParams {
  Time period_ns = 1'000'000;  // P: C_REPLICATE defaults to P/2 of work
  double c_reconfig_s = 0.5e-3;  // C_RECONFIG: an idle slot may be replaced below this demand (SW time)
  double c_replicate_s = -1;     // C_REPLICATE: replicate above this demand (SW time); < 0 = P / 2
  // X_c per function (units/s), to turn the thresholds (SW time) into work units; 0 = default_xc.
  std::array<double, kMaxFunctions> xc{};
  double default_xc = 1e9;
  // ---- "sticky" (ours) ----
  double history = 0.25;         // decay of the demand estimate per period (0: no memory)
  double min_gain = 2.0;         // a busy function's slot moves only to 2x its demand per replica
  // Rank functions in use during this period before remembered ones: 1 yes, 0 no, -1 when P is at
  // most in_use_period_ns. Measured (docs/results/policies.md): no better at P = 1 ms, and at
  // P = 100 ms it only churns (the replica arrives after the call), so off by default.
  double in_use_first = 0;
  Time in_use_period_ns = 10'000'000;
  double reconfig_s = -1;        // reconfiguration delay; < 0 = P (Table 5.3)
  double min_payoff = 0.2;       // chase new demand at once while displaced slots are this busy after
  double payoff_weight = 0.2;    // weight of each new displacement's verdict in the running payoff
  double min_streak = 3;         // otherwise: periods in a row with demand before displacing a resident
  double evict = 1;              // 0: never replace a resident accelerator (static diversity, ablation)
  double request_weight_s = 100e-6;  // SW work one demand packet stands for (the clients' C_COWORK_MAX)
  // ---- "reactive" (sticky that also acts between periods; docs/results/policies.md) ----
  double react = 0;              // 1: load a function as soon as it is asked for, into a free slot
  // A resident gives its slot to a reaction only after min(react_idle_s x a learnt scale,
  // react_idle_delays x its reconfiguration delay) idle.
  double react_idle_s = 20e-3;
  double react_idle_delays = 1;
  double react_adapt = 0.1;      // step of the learnt scale (0: fixed at 1), within [scale_min, scale_max]
  double react_scale_min = 0.25;
  double react_scale_max = 16;
  double react_payoff = 1;       // 1: reactions feed sticky's payoff and displace only while it holds
  double react_period_chase = 0; // 1: the period may still displace a resident for a function with no slot
};

// Algorithm 1, line by line:
//   for each idle slot s (empty slots count as idle accelerators with no demand):
//     if demand(s) < C_RECONFIG:
//       s_h := the accelerator with the highest demand per accelerator
//       if demand(s_h) > C_REPLICATE: reconfigure s to replicate s_h (route s to s_h's queue)
//       else if requests != {} and a queue is available: load the next requested function f into s
//            (route s -> q, f -> q), clear f's request
//   clear all requests
// Demands are the monitor's figures of the period just closed (they do not change during the loop).
// "Next function request" is taken round-robin over function ids so that no id is favoured.
class Algorithm1Policy final : public ReconfigPolicy {
 public:
  explicit Algorithm1Policy(const ReconfigParams& params);
  std::string_view name() const override { return "algorithm1"; }
  void on_period(Engine& engine, const Monitor& monitor, Time now, Actions& out) override;

  // Thresholds in seconds of SW work.
  double c_reconfig_s() const { return c_reconfig_s_; }
  double c_replicate_s() const { return c_replicate_s_; }

 private:
  double seconds(FunctionId f, double units) const;
  ReconfigParams params_;
  double c_reconfig_s_ = 0;
  double c_replicate_s_ = 0;
  uint32_t request_cursor_ = 0;
};

// Ours: "sticky" demand-proportional allocation. Differences from Algorithm 1, each aimed at a
// weakness the thesis's traces show (Fig 5.13/5.14) and our own (docs/results/policies.md):
//  1. Unrouted functions get a demand magnitude, not a bit: every demand packet stands for one
//     C_COWORK_MAX chunk that ran in SW for want of an accelerator (engine counter demand_requests).
//  2. Demand is decayed over periods (history), so a burst does not grab every slot at once and an
//     accelerator used a moment ago is not the first to go.
//  3. Slots are shared out by demand: first one slot for each function with demand (diversity), then
//     replicas by largest demand per replica (D'Hondt), only while that exceeds C_REPLICATE. A slot in
//     use moves only to a function with min_gain times its demand per replica (hysteresis).
//  4. It learns whether chasing new demand pays: each displacement's slot is watched for a window
//     after it is ready; while those slots stay mostly idle (the calls that asked ended during the
//     reconfiguration delay, as at P = 100 ms), only demand that has lasted min_streak periods may
//     displace a resident.
//  5. Empty slots are never left empty while some function has none: diversity is free.
//  6. With react = 1 ("reactive"), it does not wait for the period to serve a request: the moment the
//     engine turns a packet away for want of an accelerator, the function is loaded into an empty
//     slot or into one idle long enough (replicas first, then the longest idle). At P = 100 ms the
//     wait for the period is a third of a call's response time. "Long enough" is min(one
//     reconfiguration delay, react_idle_s x a scale learnt from the reactions' victims: asked for
//     again within their delay, the scale grows; not, it shrinks). Displacing a resident also needs
//     the payoff of 4. At most one reaction per function per delay (once loaded it is routed, so the
//     engine stops turning its packets away anyway). The period then only replicates and fills
//     empty slots: chasing new demand is left to the reactions.
class StickyPolicy final : public ReconfigPolicy {
 public:
  explicit StickyPolicy(const ReconfigParams& params);
  std::string_view name() const override { return params_.react > 0 ? "reactive" : "sticky"; }
  void on_period(Engine& engine, const Monitor& monitor, Time now, Actions& out) override;
  bool reacts() const override { return params_.react > 0; }
  void on_demand(Engine& engine, const Monitor& monitor, FunctionId function, Time now, Actions& out) override;

 private:
  double seconds(FunctionId f, double units) const;
  ReconfigParams params_;
  std::array<double, kMaxFunctions> demand_s_{};        // decayed demand, seconds of SW work per period
  std::array<uint64_t, kMaxFunctions> last_requests_{};  // engine demand_requests at the last period
  std::array<uint32_t, kMaxFunctions> streak_{};         // periods in a row with demand
  struct Watch {                                         // a displacement whose payoff is measured
    bool active = false;
    bool measuring = false;
    FunctionId function = 0;
    Time ready_at = 0;
    Time since = 0;
    Time busy_at_start = 0;
  };
  void watch(SlotId slot, FunctionId f, Time ready_at);
  void learn_payoff(const Engine& engine, Time now, double reconfig_s);
  std::vector<Watch> watches_;
  double payoff_ = 1;                                    // optimistic until measured
  std::array<Time, kMaxFunctions> last_reaction_{};      // when on_demand last loaded f
  struct Eviction {                                      // a reaction's victim, until judged
    FunctionId function = 0;
    Time judge_by = 0;                                   // eviction + its reconfiguration delay
  };
  static constexpr size_t kMaxEvictions = 64;
  void judge_evictions(Time now, FunctionId requested);
  std::vector<Eviction> evictions_;
  double idle_scale_ = 1;                                // learnt: how long an idle slot is still in use
};

// A policy by plain name: "none" (nullptr: static residency), "algorithm1", "sticky", "reactive"
// (sticky with react = 1). Throws tandem::Error (invalid_argument) for other names. Set-up code only;
// specs with parameters ("sticky:history=0") are parsed by the configuration layer (config::make_policy).
std::unique_ptr<ReconfigPolicy> make_reconfig_policy(std::string_view name, const ReconfigParams& params);

}  // namespace tandem::engine
