#include "engine/reconfig.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "abi/status.hpp"

namespace tandem::engine {

namespace {

// Idle or empty: the slots Algorithm 1 may consider (configuring and busy slots are not idle).
bool idle_or_empty(const SlotView& v) { return v.state == SlotState::idle || v.state == SlotState::empty; }

}  // namespace

// ---------------------------------------------------------------- Algorithm 1

Algorithm1Policy::Algorithm1Policy(const ReconfigParams& params) : params_(params) {
  c_reconfig_s_ = params_.c_reconfig_s;
  c_replicate_s_ = params_.c_replicate_s >= 0 ? params_.c_replicate_s : 0.5 * static_cast<double>(params_.period_ns) * 1e-9;
}

double Algorithm1Policy::seconds(FunctionId f, double units) const {
  const double xc = params_.xc[f] > 0 ? params_.xc[f] : params_.default_xc;
  return units / xc;
}

void Algorithm1Policy::on_period(Engine& engine, const Monitor& monitor, Time now, Actions& out) {
  const EngineConfig& config = engine.config();
  // Line 4's s_h does not depend on s: the demands are the figures of the period just closed.
  FunctionId hot = 0;
  double hot_demand = -1;
  for (SlotId s = 0; s < engine.slot_count(); ++s) {
    const SlotView v = engine.slot(s);
    if (v.state != SlotState::idle && v.state != SlotState::busy) continue;
    if (engine.fixed(s) || !engine.placeable(v.function)) continue;  // copy engines are not the policy's
    const double d = seconds(v.function, monitor.metrics(v.function).demand_per_accelerator);
    if (d > hot_demand) {
      hot_demand = d;
      hot = v.function;
    }
  }
  const uint32_t n_functions = kMaxFunctions;
  for (SlotId s = 0; s < engine.slot_count(); ++s) {
    const SlotView v = engine.slot(s);
    if (!idle_or_empty(v) || engine.fixed(s)) continue;
    const double demand = v.state == SlotState::empty
                              ? 0.0
                              : seconds(v.function, monitor.metrics(v.function).demand_per_accelerator);
    if (!(demand < c_reconfig_s_)) continue;  // line 2
    if (hot_demand > c_replicate_s_) {        // lines 5-7: replicate the most demanded accelerator
      if ((v.state == SlotState::empty || v.function != hot) && engine.can_hold(s, hot)) engine.load(s, hot, now, out);
      continue;
    }
    // Lines 8-15: a new function, if one was requested and a queue is available (Engine::load finds
    // the queue, which may be the one this slot alone served).
    if (engine.requests().none()) continue;
    for (uint32_t i = 0; i < n_functions; ++i) {
      const FunctionId f = static_cast<FunctionId>((request_cursor_ + i) % n_functions);
      if (!engine.requests()[f] || !config.known[f] || !engine.can_hold(s, f)) continue;
      if (engine.route(f) != kNone) {  // routed meanwhile: the request is satisfied
        continue;
      }
      if (engine.load(s, f, now, out)) {
        request_cursor_ = (f + 1u) % n_functions;
        engine.clear_request(f);
      }
      break;  // "f := next function request": one candidate per slot
    }
  }
  engine.clear_requests();  // line 19
}

// ---------------------------------------------------------------- sticky (ours)

StickyPolicy::StickyPolicy(const ReconfigParams& params) : params_(params) {
  last_reaction_.fill(std::numeric_limits<Time>::min() / 2);  // never: the first request may react
  evictions_.reserve(kMaxEvictions);
}

double StickyPolicy::seconds(FunctionId f, double units) const {
  const double xc = params_.xc[f] > 0 ? params_.xc[f] : params_.default_xc;
  return units / xc;
}

void StickyPolicy::on_period(Engine& engine, const Monitor& monitor, Time now, Actions& out) {
  const EngineConfig& config = engine.config();
  const uint32_t n_slots = engine.slot_count();
  // 1. Demand of every function in seconds of SW work per period, decayed over periods. Routed
  //    functions: Algorithm 1's max(remaining, submitted). Unrouted ones: one C_COWORK_MAX chunk of
  //    SW work per demand packet since the last period.
  std::array<uint32_t, kMaxFunctions> current{};  // slots holding f (idle, busy or configuring)
  uint32_t policy_slots = 0;                       // slots the policy may reconfigure (not copy engines)
  for (SlotId s = 0; s < n_slots; ++s) {
    if (engine.fixed(s)) continue;
    ++policy_slots;
    const SlotView v = engine.slot(s);
    if (v.state != SlotState::empty && v.in_service) ++current[v.function];  // one out of service serves nobody
  }
  const double period_s = static_cast<double>(params_.period_ns) * 1e-9;
  std::vector<FunctionId> active;
  active.reserve(64);
  std::array<bool, kMaxFunctions> in_use{};
  const bool in_use_first = params_.in_use_first > 0 ||
                            (params_.in_use_first < 0 && params_.period_ns <= params_.in_use_period_ns);
  for (uint32_t i = 0; i < kMaxFunctions; ++i) {
    const auto f = static_cast<FunctionId>(i);
    if (!config.known[f] || !engine.placeable(f)) continue;
    const uint64_t requests = engine.counters(f).demand_requests;
    const double unrouted = static_cast<double>(requests - last_requests_[f]) * params_.request_weight_s;
    last_requests_[f] = requests;
    const double observed = seconds(f, monitor.metrics(f).demand) + unrouted;
    demand_s_[f] = std::max(observed, params_.history * demand_s_[f]);
    if (demand_s_[f] < 1e-9) demand_s_[f] = 0;
    in_use[f] = in_use_first && observed > 0;
    streak_[f] = observed > 0 ? streak_[f] + 1 : 0;
    if (demand_s_[f] > 0) active.push_back(f);
  }
  // Chasing new demand (displacing a resident for a function just asked for) pays only if the new
  // accelerator is used once it is ready; with a long reconfiguration delay the call that asked has
  // often ended by then. So the policy measures it: each displacement's slot is watched for one
  // window after it becomes ready, and the busy fraction feeds a running payoff. While the payoff is
  // low, only demand that has already lasted min_streak periods may displace a resident.
  const double reconfig_s = params_.reconfig_s >= 0 ? params_.reconfig_s : period_s;
  learn_payoff(engine, now, reconfig_s);
  const bool chase = payoff_ >= params_.min_payoff;
  const uint32_t need_streak = chase ? 0 : static_cast<uint32_t>(params_.min_streak);
  // Functions in use in this period come first: under independent calls, a function whose calls
  // ended predicts nothing, so memory only breaks ties among the idle.
  std::stable_sort(active.begin(), active.end(), [&](FunctionId a, FunctionId b) {
    if (in_use[a] != in_use[b]) return in_use[a];
    return demand_s_[a] > demand_s_[b];
  });

  // 2. Target: every function with demand gets one slot, in order of demand (diversity first); the
  //    rest go one by one to the largest demand per replica (D'Hondt), but only to a function whose
  //    demand per replica exceeds C_REPLICATE (an extra replica must have work to do).
  std::array<uint32_t, kMaxFunctions> target{};
  uint32_t left = policy_slots;
  for (FunctionId f : active) {
    if (left == 0) break;
    target[f] = 1;
    --left;
  }
  const double c_replicate = params_.c_replicate_s >= 0 ? params_.c_replicate_s
                                                        : 0.5 * static_cast<double>(params_.period_ns) * 1e-9;
  while (left > 0) {
    FunctionId best = 0;
    double best_share = c_replicate;
    bool found = false;
    for (FunctionId f : active) {
      if (target[f] == 0) continue;
      const double share = demand_s_[f] / (target[f] + 1);
      if (share > best_share) {
        best_share = share;
        best = f;
        found = true;
      }
    }
    if (!found) break;
    ++target[best];
    --left;
  }

  // 3. Move slots from functions above their target (empty slots and functions without demand
  //    first) to functions below it (highest demand first). Hysteresis: a slot that serves demand
  //    changes hands only if the taker's demand per replica beats the giver's by min_gain.
  const auto per_replica = [&](FunctionId f, uint32_t n) { return demand_s_[f] / std::max<uint32_t>(n, 1); };
  for (FunctionId f : active) {
    while (current[f] < target[f]) {
      SlotId pick = kNone;
      double pick_value = 0;
      for (SlotId s = 0; s < n_slots; ++s) {
        if (engine.fixed(s) || !engine.can_hold(s, f)) continue;
        const SlotView v = engine.slot(s);
        if (!v.in_service) continue;  // never reconfigured (Engine::can_reconfigure): not a pick
        double value = -1;  // empty
        if (v.state == SlotState::idle) {
          if (!(params_.evict > 0)) continue;  // ablation: only ever fill empty slots
          // Reacting, a function without a slot got one at its first request if any slot could be
          // spared; the period only adds replicas.
          if (current[f] == 0 && params_.react > 0 && !(params_.react_period_chase > 0)) continue;
          // Only demand that has lasted earns a resident's slot: a call that has run for k periods
          // is likely to run on past the reconfiguration delay; a new one often ends before.
          if (streak_[f] < need_streak) continue;
          if (v.function == f || current[v.function] <= target[v.function]) continue;
          value = (!in_use_first || in_use[v.function]) ? per_replica(v.function, current[v.function]) : 0;
          if (value > 0 && per_replica(f, current[f] + 1) < params_.min_gain * value) continue;
        } else if (v.state != SlotState::empty) {
          continue;
        }
        if (pick == kNone || value < pick_value) {
          pick = s;
          pick_value = value;
        }
      }
      if (pick == kNone) break;
      const SlotView v = engine.slot(pick);
      if (!engine.load(pick, f, now, out)) break;
      if (v.state != SlotState::empty) {
        --current[v.function];
        watch(pick, f, now + static_cast<Time>(reconfig_s * 1e9));
      }
      ++current[f];
    }
  }
  // 4. Diversity is free: an empty slot gets a function that has none, most demanded first.
  std::vector<FunctionId> spare;
  for (uint32_t i = 0; i < kMaxFunctions; ++i) {
    const auto f = static_cast<FunctionId>(i);
    if (config.known[f] && engine.placeable(f) && current[f] == 0 && engine.route(f) == kNone) spare.push_back(f);
  }
  std::stable_sort(spare.begin(), spare.end(), [&](FunctionId a, FunctionId b) { return demand_s_[a] > demand_s_[b]; });
  size_t next_spare = 0;
  for (SlotId s = 0; s < n_slots && next_spare < spare.size(); ++s) {
    if (engine.slot(s).state != SlotState::empty || engine.fixed(s)) continue;
    // The most demanded spare function this slot's device can hold.
    size_t k = next_spare;
    while (k < spare.size() && !engine.can_hold(s, spare[k])) ++k;
    if (k == spare.size()) continue;
    std::swap(spare[next_spare], spare[k]);
    if (engine.load(s, spare[next_spare], now, out)) ++current[spare[next_spare]];
    ++next_spare;
  }
  engine.clear_requests();
}

void StickyPolicy::on_demand(Engine& engine, const Monitor& monitor, FunctionId f, Time now, Actions& out) {
  (void)monitor;
  if (!(params_.react > 0) || engine.route(f) != kNone || !engine.config().known[f] || !engine.placeable(f)) return;
  const std::array<model::AccelModel, kMaxFunctions>& models = engine.config().models;
  judge_evictions(now, f);
  if (now - last_reaction_[f] < models[f].reconfig_ns()) return;  // one reaction per function per delay
  std::array<uint32_t, kMaxFunctions> holding{};  // slots per function, configuring ones included
  for (SlotId s = 0; s < engine.slot_count(); ++s) {
    const SlotView v = engine.slot(s);
    if (v.state != SlotState::empty && v.in_service && !engine.fixed(s)) ++holding[v.function];
  }
  // Displacing a resident must pay like the period's displacements (the payoff): with a whole CPU per
  // application, calls often end before the new accelerator is ready.
  const bool displace = !(params_.react_payoff > 0) || payoff_ >= params_.min_payoff;
  // An empty slot first; otherwise a slot nobody has used for a while: a replica before a function's
  // only slot (diversity), then the longest idle (the least likely to be wanted back soon).
  SlotId pick = kNone;
  bool pick_replica = false;
  Time pick_idle = -1;
  for (SlotId s = 0; s < engine.slot_count(); ++s) {
    if (engine.fixed(s) || !engine.can_hold(s, f)) continue;
    const SlotView v = engine.slot(s);
    if (v.state == SlotState::empty) {
      pick = s;
      break;
    }
    if (!displace || v.state != SlotState::idle || !engine.can_reconfigure(s)) continue;
    // A slot taken from a function that still needs it costs that function one reconfiguration
    // delay, so a short delay allows a short wait. Otherwise react_idle_s, scaled by how often
    // recent reactions took a slot too early: an application descheduled in the middle of a call
    // leaves its accelerator idle for a few time slices, more of them the more applications there are.
    const double delay = static_cast<double>(models[v.function].reconfig_ns());
    const Time min_idle = static_cast<Time>(std::min(params_.react_idle_s * 1e9 * idle_scale_, params_.react_idle_delays * delay));
    const Time idle = now - v.idle_since;
    if (idle < min_idle) continue;
    const bool replica = holding[v.function] > 1;
    if (pick == kNone || (replica && !pick_replica) || (replica == pick_replica && idle > pick_idle)) {
      pick = s;
      pick_replica = replica;
      pick_idle = idle;
    }
  }
  if (pick == kNone) return;
  const SlotView victim = engine.slot(pick);
  if (!engine.load(pick, f, now, out)) return;
  last_reaction_[f] = now;
  if (victim.state == SlotState::empty) return;
  if (params_.react_payoff > 0) watch(pick, f, now + models[f].reconfig_ns());
  if (params_.react_adapt > 0 && evictions_.size() < kMaxEvictions) {
    evictions_.push_back(Eviction{victim.function, now + models[victim.function].reconfig_ns()});
  }
}

void StickyPolicy::judge_evictions(Time now, FunctionId requested) {
  // A reaction's victim asked for again within its reconfiguration delay was still in use: wait
  // longer before the next ones. A victim not asked for was fair game: wait less. Equal steps up and
  // down keep about half of the evictions premature: each reaction may gamble, but not most.
  const double step = 1 + params_.react_adapt;
  for (size_t i = 0; i < evictions_.size();) {
    const Eviction& e = evictions_[i];
    if (e.function == requested && now < e.judge_by) {
      idle_scale_ = std::min(idle_scale_ * step, params_.react_scale_max);
    } else if (now >= e.judge_by) {
      idle_scale_ = std::max(idle_scale_ / step, params_.react_scale_min);
    } else {
      ++i;
      continue;
    }
    evictions_[i] = evictions_.back();
    evictions_.pop_back();
  }
}

namespace {
Time busy_now(const SlotView& v, Time now) { return v.busy_total + (v.state == SlotState::busy ? now - v.busy_since : 0); }
}  // namespace

void StickyPolicy::watch(SlotId slot, FunctionId f, Time ready_at) {
  if (watches_.size() <= slot) watches_.resize(slot + 1);
  watches_[slot] = Watch{true, false, f, ready_at, 0, 0};
}

void StickyPolicy::learn_payoff(const Engine& engine, Time now, double reconfig_s) {
  const Time window = std::max<Time>(params_.period_ns, static_cast<Time>(reconfig_s * 1e9));
  for (SlotId s = 0; s < watches_.size() && s < engine.slot_count(); ++s) {
    Watch& w = watches_[s];
    if (!w.active) continue;
    const SlotView v = engine.slot(s);
    if (v.state == SlotState::empty || v.function != w.function) {  // replaced meanwhile: no verdict
      w.active = false;
      continue;
    }
    if (!w.measuring) {
      if (now < w.ready_at || v.state == SlotState::configuring) continue;
      w.measuring = true;
      w.since = now;
      w.busy_at_start = busy_now(v, now);
      continue;
    }
    if (now - w.since < window) continue;
    const double used = static_cast<double>(busy_now(v, now) - w.busy_at_start) / static_cast<double>(now - w.since);
    payoff_ = (1 - params_.payoff_weight) * payoff_ + params_.payoff_weight * used;
    w.active = false;
  }
}

// ---------------------------------------------------------------- factory

std::unique_ptr<ReconfigPolicy> make_reconfig_policy(std::string_view name, const ReconfigParams& params) {
  if (name == "none") return nullptr;
  if (name == "algorithm1") return std::make_unique<Algorithm1Policy>(params);
  if (name == "sticky") return std::make_unique<StickyPolicy>(params);
  if (name == "reactive") {
    ReconfigParams reacting = params;
    reacting.react = 1;
    return std::make_unique<StickyPolicy>(reacting);
  }
  throw Error(Status::invalid_argument, "unknown reconfiguration policy '" + std::string(name) +
                                            "' (none, algorithm1, sticky, reactive)");
}

}  // namespace tandem::engine
