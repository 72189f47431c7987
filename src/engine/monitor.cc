#include "engine/monitor.hpp"

#include <algorithm>
#include <cmath>

#include "model/cost_model.hpp"

namespace tandem::engine {

Monitor::Monitor(const EngineConfig& engine_config, const MonitorConfig& config)
    : engine_config_(engine_config), config_(config), last_busy_(engine_config.slots == 0 ? 1 : engine_config.slots, 0) {
  if (config_.period_ns <= 0) config_.period_ns = 1'000'000;
  changed_.reserve(kMaxFunctions);
}

void Monitor::instantaneous(const Engine& engine, FunctionId f, abi::FunctionMetrics& m) const {
  const model::AccelModel& am = engine_config_.models[f];
  const QueueId q = engine.route(f);
  m.accelerators = static_cast<uint16_t>(engine.accelerators(f));
  m.configuring = static_cast<uint16_t>(engine.configuring(f));
  m.queued_jobs = q == kNone ? 0 : engine.queue(q).jobs;
  m.queued_work = q == kNone ? 0 : engine.queue(q).work;
  m.running_jobs = engine.running_jobs(f);
  m.outstanding_work = engine.outstanding_work(f);
  m.requests = engine.counters(f).demand_requests;
  // Replicas may sit on devices of different speeds: their mean X_a stands for one accelerator.
  const double xa = m.accelerators > 0 ? engine.usable_throughput(f) / m.accelerators : am.throughput;
  m.effective_throughput = model::effective_accel_throughput(xa, am.bandwidth_bps, config_.available_bandwidth,
                                                             std::max<uint32_t>(m.accelerators, 1));
  // Eq 5.2 (worst case: running jobs count with their whole workload). No accelerator: infinite.
  m.queue_wait_s = model::queue_wait(am.latency_s, m.queued_jobs, static_cast<double>(m.outstanding_work),
                                     m.accelerators, m.effective_throughput);
}

void Monitor::refresh(const Engine& engine, FunctionId f) {
  instantaneous(engine, f, metrics_[f]);
  metrics_[f].demand_per_accelerator =
      metrics_[f].accelerators > 0 ? metrics_[f].demand / metrics_[f].accelerators : metrics_[f].demand;
  changed_.assign(1, f);
}

void Monitor::sample(const Engine& engine, Time now) {
  const Time period = std::max<Time>(now - period_start_, 1);
  // Busy time of each slot during the period, including the part of a job still running.
  std::array<double, kMaxFunctions> busy{};
  std::array<uint32_t, kMaxFunctions> serving{};
  for (SlotId s = 0; s < engine.slot_count() && s < last_busy_.size(); ++s) {
    const SlotView v = engine.slot(s);
    const Time busy_now = v.busy_total + (v.state == SlotState::busy ? now - v.busy_since : 0);
    if ((v.state == SlotState::idle || v.state == SlotState::busy) && v.in_service) {
      busy[v.function] += static_cast<double>(busy_now - last_busy_[s]);
      ++serving[v.function];
    }
    last_busy_[s] = busy_now;
  }
  changed_.clear();
  for (FunctionId f = 0; f < kMaxFunctions; ++f) {
    if (!engine_config_.known[f]) continue;
    abi::FunctionMetrics& m = metrics_[f];
    instantaneous(engine, f, m);
    const uint64_t submitted_total = engine.counters(f).submitted_work;
    m.submitted_work = submitted_total - last_submitted_[f];
    last_submitted_[f] = submitted_total;
    m.utilization = serving[f] > 0 ? std::min(1.0, busy[f] / (static_cast<double>(serving[f]) * static_cast<double>(period))) : 0;
    // Algorithm 1's demand: the larger of the work still to do and the work submitted in the period
    // (either alone misleads when jobs are shorter or longer than P; thesis 5.4.7).
    m.demand = static_cast<double>(std::max(m.outstanding_work, m.submitted_work));
    m.demand_per_accelerator = m.accelerators > 0 ? m.demand / m.accelerators : m.demand;
    changed_.push_back(f);
  }
  period_start_ = now;
  ++periods_;
}

}  // namespace tandem::engine
