#include "daemon/prometheus.hpp"

#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "funcs/function.hpp"
#include "model/access_model.hpp"

namespace tandem::daemon {

const char* slot_state_name(engine::SlotState s) {
  switch (s) {
    case engine::SlotState::empty: return "empty";
    case engine::SlotState::configuring: return "configuring";
    case engine::SlotState::idle: return "idle";
    case engine::SlotState::busy: return "busy";
  }
  return "?";
}

std::string function_name(uint16_t f) {
  const funcs::FunctionInfo* fn = funcs::find_function(f);
  return fn != nullptr ? std::string(fn->name) : "fn" + std::to_string(f);
}

namespace {

// Label values escape backslash, double quote and newline; HELP text backslash and newline.
std::string escape(std::string_view s, bool quote) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quote) out += "\\\"";
    else out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  // Integers (the counters) exactly; other values with every digit a double has.
  if (v == std::floor(v) && std::fabs(v) < 9.007199254740992e15) {
    std::snprintf(buf, sizeof buf, "%" PRId64, static_cast<int64_t>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%.17g", v);
  }
  return buf;
}

}  // namespace

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += escape(help, false);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusText::sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += labels[i].first;
      out_ += "=\"";
      out_ += escape(labels[i].second, true);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += number(value);
  out_ += '\n';
}

std::string prometheus_text(const Figures& f) {
  PrometheusText p;
  const rt::Snapshot& s = f.snapshot;
  const auto d = [](auto v) { return static_cast<double>(v); };

  p.family("tandem_uptime_seconds", "gauge", "Seconds since tandemd started.");
  p.sample("tandem_uptime_seconds", f.uptime_s);
  p.family("tandem_sessions", "gauge", "Client sessions open now.");
  p.sample("tandem_sessions", d(s.sessions));
  p.family("tandem_rings", "gauge", "Submission rings attached now.");
  p.sample("tandem_rings", d(s.rings));

  // ---- slots, by device ----
  p.family("tandem_slot_state", "gauge", "1 for the state each slot is in (empty, configuring, idle, busy).");
  for (const rt::DeviceView& dv : s.devices) {
    for (uint32_t i = 0; i < dv.info.slots; ++i) {
      const engine::SlotView& v = s.slots[dv.first_slot + i];
      for (engine::SlotState st : {engine::SlotState::empty, engine::SlotState::configuring, engine::SlotState::idle,
                                   engine::SlotState::busy}) {
        p.sample("tandem_slot_state",
                 {{"slot", std::to_string(dv.first_slot + i)}, {"device", dv.info.name}, {"state", slot_state_name(st)}},
                 v.state == st ? 1 : 0);
      }
    }
  }
  const auto per_slot = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    p.family(name, type, help);
    for (const rt::DeviceView& dv : s.devices) {
      for (uint32_t i = 0; i < dv.info.slots; ++i) {
        const size_t slot = dv.first_slot + i;
        p.sample(name, {{"slot", std::to_string(slot)}, {"device", dv.info.name}}, value(dv, i, s.slots[slot]));
      }
    }
  };
  const auto busy_ns = [&](const engine::SlotView& v) {
    return d(v.busy_total + (v.state == engine::SlotState::busy ? s.now_ns - v.busy_since : 0));
  };
  p.family("tandem_slot_function", "gauge", "1 for the function each loaded slot holds.");
  for (const rt::DeviceView& dv : s.devices) {
    for (uint32_t i = 0; i < dv.info.slots; ++i) {
      const engine::SlotView& v = s.slots[dv.first_slot + i];
      if (v.state == engine::SlotState::empty) continue;
      p.sample("tandem_slot_function",
               {{"slot", std::to_string(dv.first_slot + i)}, {"device", dv.info.name}, {"function", function_name(v.function)}},
               1);
    }
  }
  per_slot("tandem_slot_busy_seconds_total", "counter", "Time each slot spent running jobs.",
           [&](const rt::DeviceView&, uint32_t, const engine::SlotView& v) { return busy_ns(v) / 1e9; });
  per_slot("tandem_slot_utilization_ratio", "gauge", "Busy time over uptime, per slot (as tandem status shows it).",
           [&](const rt::DeviceView&, uint32_t, const engine::SlotView& v) {
             return f.uptime_s > 0 ? busy_ns(v) / 1e9 / f.uptime_s : 0.0;
           });
  per_slot("tandem_slot_jobs_completed_total", "counter", "Jobs each slot finished.",
           [&](const rt::DeviceView&, uint32_t, const engine::SlotView& v) { return d(v.jobs_done); });
  per_slot("tandem_slot_in_service", "gauge", "1 while the device keeps the slot in service.",
           [&](const rt::DeviceView& dv, uint32_t i, const engine::SlotView&) { return dv.health[i].in_service ? 1.0 : 0.0; });

  // ---- functions ----
  const auto per_function = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    p.family(name, type, help);
    for (size_t i = 0; i < s.functions.size(); ++i) {
      const auto& [fn, counters] = s.functions[i];
      p.sample(name, {{"function", function_name(fn)}}, value(fn, counters, f.functions[i].second));
    }
  };
  using C = engine::FunctionCounters;
  using M = abi::FunctionMetrics;
  per_function("tandem_jobs_submitted_total", "counter", "Jobs the engine accepted, per function.",
               [&](uint16_t, const C& c, const M&) { return d(c.submitted_jobs); });
  per_function("tandem_jobs_completed_total", "counter", "Jobs that finished on a slot, per function.",
               [&](uint16_t, const C& c, const M&) { return d(c.completed_jobs); });
  per_function("tandem_jobs_rejected_total", "counter",
               "Dispatch packets completed with an error without running (validation or the engine refused them).",
               [&](uint16_t fn, const C&, const M&) { return d(s.refused[fn]); });
  per_function("tandem_demand_requests_total", "counter",
               "NOT_ACCELERATED answers and demand-only packets while no slot held the function.",
               [&](uint16_t, const C& c, const M&) { return d(c.demand_requests); });
  per_function("tandem_jobs_queued", "gauge", "Jobs waiting in the function's queue.",
               [&](uint16_t, const C&, const M& m) { return d(m.queued_jobs); });
  per_function("tandem_jobs_running", "gauge", "Jobs of the function on slots now.",
               [&](uint16_t, const C&, const M& m) { return d(m.running_jobs); });
  per_function("tandem_function_accelerators", "gauge", "Slots that hold the function (n_a).",
               [&](uint16_t, const C&, const M& m) { return d(m.accelerators); });
  per_function("tandem_function_demand", "gauge", "Demand in the last monitoring period, work units (Algorithm 1).",
               [&](uint16_t, const C&, const M& m) { return m.demand; });
  per_function("tandem_queue_wait_seconds", "gauge", "D_q (Eq 5.2): worst-case wait of a job submitted now.",
               [&](uint16_t, const C&, const M& m) { return m.queue_wait_s; });
  per_function("tandem_effective_throughput", "gauge", "X'_a (Eq 5.1): work units per second one accelerator delivers now.",
               [&](uint16_t, const C&, const M& m) { return m.effective_throughput; });
  per_function("tandem_function_utilization_ratio", "gauge", "Busy fraction of the function's slots in the last period.",
               [&](uint16_t, const C&, const M& m) { return m.utilization; });

  // ---- data moved and energy, per function and access method (docs/access.md) ----
  const auto per_usage = [&](std::string_view name, std::string_view help, auto value) {
    p.family(name, "counter", help);
    for (const auto& [fn, by_method] : s.usage) {
      for (size_t m = 0; m < by_method.size(); ++m) {
        if (by_method[m].jobs == 0) continue;
        p.sample(name, {{"function", function_name(fn)}, {"method", std::string(model::access_method_name(static_cast<uint8_t>(m)))}}, value(by_method[m]));
      }
    }
  };
  per_usage("tandem_access_jobs_total", "Jobs finished on a device, per function and access method.",
            [&](const rt::AccessUsage& u) { return d(u.jobs); });
  per_usage("tandem_access_host_bytes_total", "Host memory bytes the jobs moved, per function and access method.",
            [&](const rt::AccessUsage& u) { return d(u.host_bytes); });
  per_usage("tandem_access_local_bytes_total", "Device-local bytes the jobs moved, per function and access method.",
            [&](const rt::AccessUsage& u) { return d(u.local_bytes); });
  per_usage("tandem_device_seconds_total", "Device time of the jobs, per function and access method.",
            [&](const rt::AccessUsage& u) { return u.device_s; });
  per_usage("tandem_energy_joules_total", "Estimated energy of the jobs ([energy] model), per function and access method.",
            [&](const rt::AccessUsage& u) { return u.energy_j; });

  // ---- sessions ----
  const auto per_session = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    p.family(name, type, help);
    for (const rt::SessionStats& ss : s.session_stats) p.sample(name, {{"session", std::to_string(ss.session)}}, value(ss));
  };
  per_session("tandem_session_jobs_total", "counter", "Jobs the engine accepted from each open session.",
              [&](const rt::SessionStats& ss) { return d(ss.jobs); });
  per_session("tandem_session_rejected_total", "counter", "Dispatch packets of each session refused without running.",
              [&](const rt::SessionStats& ss) { return d(ss.refused); });
  per_session("tandem_session_jobs_in_flight", "gauge", "Jobs of each session queued or running.",
              [&](const rt::SessionStats& ss) { return d(ss.in_flight); });
  per_session("tandem_session_busy_callers", "gauge",
              "Threads of each session inside high-level calls at the last monitoring period (the CPU share's crowd).",
              [&](const rt::SessionStats& ss) { return d(ss.busy_callers); });
  p.family("tandem_session_bytes_total", "counter", "Host bytes the jobs of each session read (in) and wrote (out).");
  for (const rt::SessionStats& ss : s.session_stats) {
    p.sample("tandem_session_bytes_total", {{"session", std::to_string(ss.session)}, {"direction", "in"}}, d(ss.bytes_in));
    p.sample("tandem_session_bytes_total", {{"session", std::to_string(ss.session)}, {"direction", "out"}}, d(ss.bytes_out));
  }

  // ---- translation, reconfiguration, the dispatcher ----
  const auto single = [&](std::string_view name, std::string_view type, std::string_view help, double value) {
    p.family(name, type, help);
    p.sample(name, value);
  };
  single("tandem_tlb_hits_total", "counter", "Address translations the TLB answered.", d(f.tlb.hits));
  single("tandem_tlb_misses_total", "counter", "Address translations that walked the region table.", d(f.tlb.misses));
  single("tandem_tlb_faults_total", "counter", "Address translations refused.", d(f.tlb.faults));
  single("tandem_tlb_flushes_total", "counter", "TLB flushes (regions unregistered, sessions closed).", d(f.tlb.flushes));
  const rt::DispatcherStats& x = s.stats;
  single("tandem_reconfigurations_total", "counter", "Slots loaded with a function since start-up (the start-up state excluded).",
         d(x.reconfigurations));
  single("tandem_dispatcher_packets_total", "counter", "Packets consumed from the rings.", d(x.packets));
  single("tandem_dispatcher_jobs_started_total", "counter", "Jobs started on a slot.", d(x.jobs_started));
  single("tandem_dispatcher_completions_total", "counter", "Completion records written.", d(x.completions));
  single("tandem_dispatcher_rejected_total", "counter", "Packets completed with an error.", d(x.rejected));
  single("tandem_dispatcher_dropped_total", "counter", "Packets whose completion record was unreachable.", d(x.dropped));
  single("tandem_dispatcher_translation_faults_total", "counter", "Packets refused with TRANSLATION_FAULT.",
         d(x.translation_faults));
  single("tandem_dispatcher_sleeps_total", "counter", "Times the dispatcher slept on the doorbells.", d(x.sleeps));
  single("tandem_dispatcher_jobs_in_flight", "gauge", "Jobs queued or running.", d(s.jobs_in_flight));
  single("tandem_dispatcher_max_lateness_seconds", "gauge", "Latest a completion fired after its modelled end.",
         d(x.max_lateness_ns) / 1e9);

  // ---- tracing ----
  const rt::TraceCounters& t = f.trace;
  single("tandem_trace_enabled", "gauge", "1 while per-job trace records are being taken.", t.enabled ? 1 : 0);
  single("tandem_trace_records", "gauge", "Trace records tandemd holds for the next export.", d(t.records));
  single("tandem_trace_collected_total", "counter", "Trace records taken from the rings since tracing last started.",
         d(t.collected));
  p.family("tandem_trace_dropped_total", "counter", "Trace records dropped since tracing last started, by reason.");
  p.sample("tandem_trace_dropped_total", {{"reason", "ring_full"}}, d(t.dropped_full));
  p.sample("tandem_trace_dropped_total", {{"reason", "store_full"}}, d(t.dropped_store));
  p.sample("tandem_trace_dropped_total", {{"reason", "no_ring"}}, d(t.dropped_unclaimed));
  p.sample("tandem_trace_dropped_total", {{"reason", "corrupt"}}, d(t.dropped_corrupt));
  return p.text();
}

}  // namespace tandem::daemon
