#include "reconfig.hpp"

#include <algorithm>
#include <cmath>

#include "status.hpp"

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
    const double d = seconds(v.function, monitor.metrics(v.function).demand_per_accelerator);
    if (d > hot_demand) {
      hot_demand = d;
      hot = v.function;
    }
  }
  const uint32_t n_functions = kMaxFunctions;
  for (SlotId s = 0; s < engine.slot_count(); ++s) {
    const SlotView v = engine.slot(s);
    if (!idle_or_empty(v)) continue;
    const double demand = v.state == SlotState::empty
                              ? 0.0
                              : seconds(v.function, monitor.metrics(v.function).demand_per_accelerator);
    if (!(demand < c_reconfig_s_)) continue;  // line 2
    if (hot_demand > c_replicate_s_) {        // lines 5-7: replicate the most demanded accelerator
      if (v.state == SlotState::empty || v.function != hot) engine.load(s, hot, now, out);
      continue;
    }
    // Lines 8-15: a new function, if one was requested and a queue is available (Engine::load finds
    // the queue, which may be the one this slot alone served).
    if (engine.requests().none()) continue;
    for (uint32_t i = 0; i < n_functions; ++i) {
      const FunctionId f = static_cast<FunctionId>((request_cursor_ + i) % n_functions);
      if (!engine.requests()[f] || !config.known[f]) continue;
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

StickyPolicy::StickyPolicy(const ReconfigParams& params) : params_(params) {}

double StickyPolicy::seconds(FunctionId f, double units) const {
  const double xc = params_.xc[f] > 0 ? params_.xc[f] : params_.default_xc;
  return units / xc;
}

void StickyPolicy::on_period(Engine& engine, const Monitor& monitor, Time now, Actions& out) {
  (void)engine;
  (void)monitor;
  (void)now;
  (void)out;
}

// ---------------------------------------------------------------- factory

std::vector<std::string> reconfig_policy_names() { return {"none", "algorithm1", "sticky"}; }

std::unique_ptr<ReconfigPolicy> make_reconfig_policy(std::string_view name, const ReconfigParams& params) {
  if (name == "none") return nullptr;
  if (name == "algorithm1") return std::make_unique<Algorithm1Policy>(params);
  if (name == "sticky") return std::make_unique<StickyPolicy>(params);
  throw Error(Status::invalid_argument, "unknown reconfiguration policy '" + std::string(name) +
                                            "' (none, algorithm1, sticky)");
}

}  // namespace tandem::engine
