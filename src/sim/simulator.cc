#include "sim/simulator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <deque>
#include <limits>
#include <optional>

#include "config/config.hpp"
#include "model/cost_model.hpp"
#include "model/learning.hpp"

namespace tandem::sim {

namespace {

constexpr uint32_t kNone = engine::kNone;

enum class EventKind : uint8_t {
  cpu,          // the running app's operation or the CPU's time slice ended
  dispatch,     // an idle CPU looks at the run queue (a woken app)
  job_done,     // a slot finished its job
  config_done,  // a slot finished loading
  tick,         // monitoring period boundary: monitor sample + reconfiguration policy
  wake,         // a blocked app's wait timed out
};

struct Event {
  Time t = 0;
  uint64_t seq = 0;
  EventKind kind = EventKind::cpu;
  uint32_t id = 0;
  uint32_t gen = 0;
};

// Min-heap on (t, seq): std::push_heap builds a max-heap, so the comparison is reversed.
struct Later {
  bool operator()(const Event& a, const Event& b) const { return a.t != b.t ? a.t > b.t : a.seq > b.seq; }
};

}  // namespace

engine::PartitionerConfig SimConfig::default_partitioner() {
  engine::PartitionerConfig p;
  p.jobs_per_round = 6;            // thesis n_j = 6
  p.cowork_max_seconds = 100e-6;   // C_COWORK_MAX (docs/sim.md: why 100 us)
  p.max_outstanding_jobs = 16;
  return p;
}

struct Simulator::Impl {
  enum class AppState : uint8_t { ready, running, blocked, done };
  struct App {
    AppState state = AppState::ready;
    uint32_t call = 0;
    bool in_call = false;
    Time op_left = 0;             // CPU time still needed by the current operation
    Time call_start = 0;
    Time call_ready = 0;          // when the current call could start: its arrival or the previous call's end
    engine::SessionId session = 0;
    uint32_t wake_gen = 0;
    std::optional<engine::Partitioner> part;
    std::map<engine::FunctionId, engine::Partitioner> function_parts;  // with per-function costs
    // The current call's: partitioner(a, f), or a whole-call one made for it (SimConfig::split_needs_free_core).
    engine::Partitioner* call_part = nullptr;
    std::optional<engine::Partitioner> whole_call_part;
    struct Observed {
      engine::JobId job;
      engine::JobEvent event;
      Status status;  // a failed job's status
    };
    std::vector<Observed> pending;  // observed, not yet reported
    std::vector<uint64_t> job_units;                                   // per partitioner job id
    std::vector<uint64_t> job_begin;                                   // its first unit in the call
    // Measured progress of the current call's software steps (SimConfig::measured_cpu_rate).
    Time sw_step_start = -1;
    uint64_t sw_step_units = 0;
    double call_sw_units = 0;
    double call_sw_s = 0;
    uint8_t method = TANDEM_ACCESS_ZERO_COPY;                          // the current call's access method
  };
  struct Cpu {
    uint32_t app = kNone;
    Time seg_start = 0;
    Time slice_end = 0;
    uint32_t gen = 0;
    bool kicked = false;  // a dispatch event is pending for this idle CPU
  };
  struct SlotTrace {
    Time job_start = 0;
    uint32_t job_app = 0;
    Time resident_since = -1;
    engine::FunctionId resident_function = 0;
    Time configure_start = 0;
  };

  Impl(const SimConfig& c, std::vector<AppSpec> a)
      : config(c),
        specs(std::move(a)),
        ec(Simulator::engine_config(c, specs)),
        eng(ec),
        monitor(ec, engine::MonitorConfig{std::max<Time>(c.period_ns, 1), 0}) {
    ns_per_unit = 1e9 / config.cpu_hz;
    // A real engine's busy cores (SimConfig::engine_cores) slow the applications' work units down.
    const double cores = std::max(1.0, static_cast<double>(config.cpus));
    run_ns_per_unit = ns_per_unit / std::clamp((cores - config.engine_cores) / cores, 0.05, 1.0);
    o0_ns = static_cast<Time>(std::llround(config.o0_s * 1e9));
    oc_ns = static_cast<Time>(std::llround(config.oc_s * 1e9));
    engine::ReconfigParams rp = config.reconfig;
    rp.period_ns = config.period_ns;
    rp.default_xc = config.cpu_hz;
    if (config.reconfig_ns >= 0) rp.reconfig_s = static_cast<double>(config.reconfig_ns) * 1e-9;
    policy = config::make_policy(config.policy, rp);
    reacts = policy && policy->reacts();
    cost.xc = config.cpu_hz;
    cost.xa = config.speedup * config.cpu_hz;
    cost.o0 = config.o0_s;
    cost.oc = config.oc_s;
    cost.da = config.da_s;
    cost.granularity = 1;
    apps.resize(specs.size());
    for (uint32_t i = 0; i < apps.size(); ++i) {
      apps[i].part.emplace(cost, config.partitioner);
      apps[i].session = eng.open_session();
      apps[i].job_units.assign(std::max<uint32_t>(config.partitioner.max_outstanding_jobs, 1), 0);
      apps[i].job_begin.assign(apps[i].job_units.size(), 0);
      apps[i].pending.reserve(64);
      result.total_units += specs[i].units();
    }
    for (const auto& [f, fc] : config.function_costs) {
      FunctionCpu& fcpu = function_cpu[f];
      fcpu.present = true;
      fcpu.o0_ns = fc.o0_s >= 0 ? static_cast<Time>(std::llround(fc.o0_s * 1e9)) : o0_ns;
      fcpu.oc_ns = fc.oc_s >= 0 ? static_cast<Time>(std::llround(fc.oc_s * 1e9)) : oc_ns;
      fcpu.cost = cost;
      if (fc.speedup >= 0) fcpu.cost.xa = fc.speedup * config.cpu_hz;
      if (fc.o0_s >= 0) fcpu.cost.o0 = fc.o0_s;
      if (fc.oc_s >= 0) fcpu.cost.oc = fc.oc_s;
      if (fc.da_s >= 0) fcpu.cost.da = fc.da_s;
    }
    result.slot_jobs.assign(ec.slots, 0);
    result.app_latency_ns.assign(specs.size(), 0);
    result.app_sw_ns.assign(specs.size(), 0);
    cpus.resize(std::max<uint32_t>(config.cpus, 1));
    slot_trace.resize(ec.slots);
    config_gen.assign(ec.slots, 0);
    actions.reserve(64);
    heap.reserve(256);
    // Static residency: loaded before the experiment starts.
    for (uint32_t s = 0; s < config.resident.size() && s < ec.slots; ++s) {
      eng.load(s, config.resident[s], 0, actions);
      eng.configure_done(s, 0, actions);
      slot_trace[s].resident_since = 0;
      slot_trace[s].resident_function = config.resident[s];
    }
    actions.clear();
  }

  // ---------------------------------------------------------------- helpers
  // The event queue is a binary heap plus one "front" slot that holds an event earlier than every
  // event in the heap. Most events (the end of an app's SW chunk) are the next to happen when they
  // are scheduled, so they skip the heap entirely; the order is exactly the heap's (time, seq).
  void push(Time t, EventKind kind, uint32_t id, uint32_t gen = 0) {
    const Event e{t, seq++, kind, id, gen};
    if (!has_front) {
      if (heap.empty() || Later{}(heap.front(), e)) {
        front = e;
        has_front = true;
        return;
      }
      heap_push(e);
      return;
    }
    if (Later{}(front, e)) {
      heap_push(front);
      front = e;
    } else {
      heap_push(e);
    }
  }
  void heap_push(const Event& e) {
    heap.push_back(e);
    std::push_heap(heap.begin(), heap.end(), Later{});
  }
  bool pop(Event& e) {
    if (has_front) {
      e = front;
      has_front = false;
      return true;
    }
    if (heap.empty()) return false;
    std::pop_heap(heap.begin(), heap.end(), Later{});
    e = heap.back();
    heap.pop_back();
    return true;
  }

  // CPU time of `units` on an idle CPU, and as the applications' software steps run it (engine_cores).
  Time units_ns(uint64_t units) const { return static_cast<Time>(std::ceil(static_cast<double>(units) * ns_per_unit)); }
  Time run_units_ns(uint64_t units) const { return static_cast<Time>(std::ceil(static_cast<double>(units) * run_ns_per_unit)); }
  double seconds(Time t) const { return static_cast<double>(t) * 1e-9; }

  model::LiveMetrics live(engine::FunctionId f) const {
    model::LiveMetrics m;
    m.n_a = eng.accelerators(f);
    if (m.n_a > 0) {
      const engine::QueueId q = eng.route(f);
      const uint64_t queued = q == kNone ? 0 : eng.queue(q).jobs;
      m.d_q = model::queue_wait(config.da_s, queued, static_cast<double>(eng.outstanding_work(f)), m.n_a,
                                ec.models[f].throughput);
    }
    return m;
  }

  engine::FunctionId function_of(uint32_t a) const { return specs[a].calls[apps[a].call].function; }

  // The partitioner of app a's calls of f: one per application, or one per function when functions
  // have costs of their own.
  engine::Partitioner& partitioner(uint32_t a, engine::FunctionId f) {
    App& app = apps[a];
    if (!function_cpu[f].present) return *app.part;
    auto it = app.function_parts.find(f);
    if (it == app.function_parts.end()) {
      it = app.function_parts.emplace(f, engine::Partitioner(function_cpu[f].cost, config.partitioner)).first;
    }
    return it->second;
  }
  // The partitioner of a call of `units` that app a starts now: partitioner(a, f), unless libtandem's
  // rule applies (SimConfig::split_needs_free_core) and the app has no core to itself. Then, as
  // client/partitioned_call.cc decides, a call above N_L goes wholly to the accelerators where that is
  // predicted faster than software at the app's share (with no replica yet: as if one were loaded
  // after the reconfiguration delay), else wholly to software.
  engine::Partitioner& call_partitioner(uint32_t a, engine::FunctionId f, uint64_t units) {
    engine::Partitioner& part = partitioner(a, f);
    if (!config.split_needs_free_core || config.partitioner.policy != engine::PartitionPolicy::automatic) return part;
    model::CpuLoad load;
    load.cores = config.cpus;
    for (const App& x : apps) load.runnable_threads += x.in_call ? 1 : 0;  // the app itself included
    load.runnable_threads -= 1;  // CpuLoad's default counted one
    load.engine_cores = config.engine_cores;
    const double share = model::cpu_share(load);
    if (share >= 1) return part;
    model::CostParams p = part.base_params();
    p.xc *= share;
    const model::LiveMetrics m = live(f);
    if (units <= model::break_even_work(p, model::effective_accel_throughput(p, m))) return part;  // software anyway
    // Every function of the simulated fabric can be loaded (the policy decides when).
    const bool hardware = model::whole_call_to_accelerators(p, m, config.partitioner.jobs_per_round, true,
                                                            ec.models[f].reconfig_s, static_cast<double>(units));
    engine::PartitionerConfig whole = config.partitioner;
    whole.policy = hardware ? engine::PartitionPolicy::hw_only : engine::PartitionPolicy::sw_only;
    // While it waits for a replica the call runs CPU chunks of C_COWORK_MAX on a whole core, as
    // libtandem's does (a chunk counts that much work at the app's share).
    whole.cowork_max_seconds = config.partitioner.cowork_max_seconds / share;
    return apps[a].whole_call_part.emplace(part.base_params(), whole);
  }
  // ---- data access ----
  // The call's method, chosen as libtandem chooses (client/partitioned_call.cc plan_access): in place
  // on session memory, otherwise the faster predicted plan of a staging copy and scatter-gather;
  // or the configured one. Its transfer costs become the partitioner's X_a and D_a for this call.
  void choose_access(App& app, engine::Partitioner& part, const LibraryCall& call) {
    const SimConfig::Access& acc = config.access;
    const model::CostParams& base = part.base_params();
    if (const std::optional<uint8_t> fixed = model::access_method_from_name(acc.method)) {
      app.method = *fixed;
    } else if (acc.registered) {
      app.method = TANDEM_ACCESS_ZERO_COPY;
    } else {
      const model::LiveMetrics m = live(call.function);
      const uint8_t candidates[] = {TANDEM_ACCESS_COPY, TANDEM_ACCESS_SCATTER_GATHER};
      app.method = model::choose_access(candidates, base, m, std::max<uint32_t>(m.n_a, 1), static_cast<double>(call.units),
                                        acc.bytes_per_unit, acc.transfer, acc.host, acc.remote);
    }
    ++result.calls_by_method[app.method];
    const model::CostParams q = model::with_access(base, app.method, acc.bytes_per_unit, acc.transfer, acc.host, acc.remote);
    part.set_access_costs(q.xa, q.da);
  }

  // A job's time in its slot: D_a, then its data streaming through the method's path while it computes;
  // scatter-gather under tandemd also waits for the daemon's mover to gather and scatter the pages.
  Time job_ns(engine::FunctionId f, uint64_t units, uint8_t method) const {
    const model::AccelModel& m = ec.models[f];
    const SimConfig::Access& acc = config.access;
    if (!acc.enabled()) return m.job_ns(units);
    const double bytes = static_cast<double>(units) * acc.bytes_per_unit;
    const auto pages = static_cast<uint32_t>(std::min(std::ceil(bytes / model::kPageBytes), 4e9));
    const double compute = m.throughput > 0 ? static_cast<double>(units) / m.throughput : 0;
    double s = m.latency_s + acc.transfer.job_s(method, static_cast<uint64_t>(bytes), 0, pages, compute);
    if (method == TANDEM_ACCESS_SCATTER_GATHER && acc.remote) {
      s += acc.host.handoff_s + pages * acc.host.gather_page_s + (acc.host.gather_bps > 0 ? bytes / acc.host.gather_bps : 0);
    }
    return static_cast<Time>(std::ceil(s * 1e9));
  }

  // A PHASE/V job's page walks (SimConfig::Translation): its reads, in the order they happen, through
  // the device TLB; the misses' walks in ns. Deterministic: the i-th read of an application's call
  // falls where a hash of (app, call, i) says, so a job reads the same addresses whatever the timing.
  Time translation_ns(uint32_t a, engine::JobId job, uint32_t slot, engine::FunctionId f, uint64_t units) {
    const SimConfig::Translation& tr = config.translation;
    const uint64_t call_units = specs[a].calls[apps[a].call].units;
    const auto call_bytes = static_cast<uint64_t>(std::max(1.0, static_cast<double>(call_units) * tr.bytes_per_unit));
    const uint64_t base = (uint64_t{a} + 1) << 40;  // each application's buffer in a range of its own
    const uint32_t asid = a + 1;
    const uint64_t begin = apps[a].job_begin[job];
    uint64_t misses = 0, lookups = 0;
    if (tr.random) {
      const uint64_t call_key = (uint64_t{a} << 32) ^ apps[a].call;
      for (uint64_t i = begin; i < begin + units; ++i, ++lookups) {
        const uint64_t offset = splitmix64(call_key * 0x9e3779b97f4a7c15ull ^ i) % call_bytes;
        if (!tlb->lookup(slot, asid, base + offset)) ++misses;
      }
    } else if (units > 0) {
      const uint32_t shift = tr.tlb.page_shift;
      const auto first = static_cast<uint64_t>(static_cast<double>(begin) * tr.bytes_per_unit) >> shift;
      const auto last = static_cast<uint64_t>(static_cast<double>(begin + units) * tr.bytes_per_unit - 1) >> shift;
      for (uint64_t p = first; p <= last; ++p, ++lookups) {
        if (!tlb->lookup(slot, asid, base + (p << shift))) ++misses;
      }
    }
    result.tlb_misses += misses;
    result.tlb_hits += lookups - misses;
    // As the emulated fabric: a pointer-chasing read costs the function's per-unit time, a streaming one read_s.
    const model::AccelModel& m = ec.models[f];
    const double read_s = tr.random && m.throughput > 0 ? 1.0 / m.throughput : tr.tlb.read_s;
    return static_cast<Time>(std::ceil(static_cast<double>(misses) * tr.tlb.walk_reads * read_s * 1e9));
  }

  static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }

  // The calling CPU's staging copy of a copy-method job (into staging and back out).
  Time staging_ns(uint8_t method, uint64_t units) const {
    const SimConfig::Access& acc = config.access;
    if (!acc.enabled() || method != TANDEM_ACCESS_COPY || acc.host.memcpy_bps <= 0) return 0;
    return static_cast<Time>(std::ceil(static_cast<double>(units) * acc.bytes_per_unit / acc.host.memcpy_bps * 1e9));
  }

  Time o0_of(engine::FunctionId f) const { return function_cpu[f].present ? function_cpu[f].o0_ns : o0_ns; }
  Time oc_of(engine::FunctionId f) const { return function_cpu[f].present ? function_cpu[f].oc_ns : oc_ns; }

  // ---------------------------------------------------------------- engine actions
  void apply_actions() {
    for (size_t i = 0; i < actions.size(); ++i) {
      const engine::Action act = actions[i];  // a copy: an event-driven policy may append while we work
      switch (act.kind) {
        case engine::ActionKind::start_job: {
          const uint32_t a = static_cast<uint32_t>(act.tag);
          const Time walks = tlb ? translation_ns(a, static_cast<engine::JobId>(act.completion - 1), act.slot,
                                                  act.function, act.workload)
                                 : 0;
          push(now + job_ns(act.function, act.workload, apps[a].method) + walks, EventKind::job_done, act.slot);
          apps[a].pending.push_back({static_cast<engine::JobId>(act.completion - 1), engine::JobEvent::started, Status::ok});
          slot_trace[act.slot].job_start = now;
          slot_trace[act.slot].job_app = a;
          break;
        }
        case engine::ActionKind::complete: {
          if (act.status == Status::not_accelerated && reacts) policy->on_demand(eng, monitor, act.function, now, actions);
          if (act.completion == 0) break;  // demand packet
          const uint32_t a = static_cast<uint32_t>(act.tag);
          const auto job = static_cast<engine::JobId>(act.completion - 1);
          engine::JobEvent ev = engine::JobEvent::failed;
          if (act.status == Status::ok) {
            ev = engine::JobEvent::completed;
            result.hw_units += apps[a].job_units[job];
            if (config.access.enabled()) {
              result.bytes_moved += static_cast<uint64_t>(static_cast<double>(apps[a].job_units[job]) * config.access.bytes_per_unit);
            }
            ++result.jobs_completed;
            ++result.slot_jobs[act.slot];
            if (config.trace) {
              result.trace.push_back(TraceSpan{TraceSpan::job, act.slot, act.function,
                                               slot_trace[act.slot].job_start, now, 0, a});
            }
          } else if (act.status == Status::cancelled) {
            ev = engine::JobEvent::cancelled;
            ++result.jobs_cancelled;
          }
          apps[a].pending.push_back({job, ev, act.status});
          if (apps[a].state == AppState::blocked) make_ready(a);
          break;
        }
        case engine::ActionKind::begin_configure: {
          ++config_gen[act.slot];
          push(act.until, EventKind::config_done, act.slot, config_gen[act.slot]);
          ++result.reconfigurations;
          SlotTrace& st = slot_trace[act.slot];
          if (config.trace && st.resident_since >= 0) {
            result.trace.push_back(TraceSpan{TraceSpan::resident, act.slot, st.resident_function, st.resident_since, now, 0, 0});
          }
          st.resident_since = -1;
          st.configure_start = now;
          break;
        }
        case engine::ActionKind::session_drained:
          break;
      }
    }
    actions.clear();
  }

  // ---------------------------------------------------------------- CPUs
  void make_ready(uint32_t a) {
    apps[a].state = AppState::ready;
    ++apps[a].wake_gen;  // a pending timeout is stale now
    ready.push_back(a);
    for (uint32_t c = 0; c < cpus.size(); ++c) {
      if (cpus[c].app == kNone && !cpus[c].kicked) {
        cpus[c].kicked = true;
        push(now, EventKind::dispatch, c);
        break;
      }
    }
  }

  void dispatch(uint32_t c) {
    Cpu& cpu = cpus[c];
    ++cpu.gen;
    if (ready.empty()) {
      cpu.app = kNone;
      return;
    }
    const uint32_t a = ready.front();
    ready.pop_front();
    cpu.app = a;
    apps[a].state = AppState::running;
    cpu.slice_end = now + config.time_slice_ns;
    ++result.context_switches;
    run_app(c);
  }

  void schedule_cpu(uint32_t c) {
    Cpu& cpu = cpus[c];
    if (cpu.slice_end <= now) cpu.slice_end = now + config.time_slice_ns;
    const Time t = now + std::min(apps[cpu.app].op_left, cpu.slice_end - now);
    cpu.seg_start = now;
    push(t, EventKind::cpu, c, ++cpu.gen);
  }

  void on_cpu_event(uint32_t c) {
    Cpu& cpu = cpus[c];
    const uint32_t a = cpu.app;
    App& app = apps[a];
    const Time elapsed = now - cpu.seg_start;
    app.op_left -= elapsed;
    result.cpu_busy_ns += elapsed;
    if (now >= cpu.slice_end) {
      if (!ready.empty()) {  // preempted, mid-operation or between steps
        app.state = AppState::ready;
        ready.push_back(a);
        dispatch(c);
        return;
      }
      cpu.slice_end = now + config.time_slice_ns;
    }
    run_app(c);
  }

  // Runs app steps on CPU c until one takes CPU time (a CPU event is scheduled), the app blocks, or
  // it has finished its call list (the CPU takes the next ready app).
  void run_app(uint32_t c) {
    const uint32_t a = cpus[c].app;
    App& app = apps[a];
    const std::vector<LibraryCall>& calls = specs[a].calls;
    while (true) {
      if (app.op_left > 0) {
        schedule_cpu(c);
        return;
      }
      const double now_s = seconds(now);
      if (!app.pending.empty()) {
        engine::Partitioner& current = *app.call_part;
        for (const auto& [job, ev, status] : app.pending) current.report(job, ev, now_s, status);
        app.pending.clear();
      }
      if (!app.in_call) {
        if (app.call == calls.size()) {
          app.state = AppState::done;
          result.app_finish[a] = now;
          --unfinished;
          dispatch(c);
          return;
        }
        const LibraryCall& next = calls[app.call];
        if (next.arrival_ns > now) {  // open arrivals: idle until the call arrives
          app.state = AppState::blocked;
          ++app.wake_gen;
          push(next.arrival_ns, EventKind::wake, a, app.wake_gen);
          dispatch(c);
          return;
        }
        app.in_call = true;
        app.call_start = now;
        app.call_ready = std::max(app.call_ready, static_cast<Time>(next.arrival_ns));
        app.call_part = &call_partitioner(a, next.function, next.units);
        engine::Partitioner& part = *app.call_part;
        if (config.access.enabled() && config.partitioner.policy != engine::PartitionPolicy::sw_only) {
          choose_access(app, part, next);
        }
        part.start(next.units, now_s, live(next.function));
        app.call_sw_units = 0;
        app.call_sw_s = 0;
        app.op_left = o0_of(next.function);
        continue;
      }
      const engine::FunctionId f = calls[app.call].function;
      engine::Partitioner& part = *app.call_part;
      if (app.sw_step_start >= 0) {  // a software step just ended: its wall time, slices included
        app.call_sw_units += static_cast<double>(app.sw_step_units);
        app.call_sw_s += seconds(now - app.sw_step_start);
        app.sw_step_start = -1;
        if (config.measured_cpu_rate && app.call_sw_s >= 8e-6) part.observe_cpu_rate(app.call_sw_units / app.call_sw_s);
      }
      const engine::Step step = part.next(now_s, live(f));
      ++result.events;  // a partitioner step is a state transition of the app
      switch (step.kind) {
        case engine::StepKind::run_sw:
          result.sw_units += step.range.size();
          if (eng.accelerators(f) == 0) result.sw_units_unaccelerated += step.range.size();
          app.op_left = run_units_ns(step.range.size());
          app.sw_step_start = now;
          app.sw_step_units = step.range.size();
          break;
        case engine::StepKind::submit_job: {
          engine::JobSpec js;
          js.function = f;
          js.workload = step.range.size();
          js.session = app.session;
          js.completion = static_cast<uint64_t>(step.job) + 1;
          js.tag = a;
          app.job_units[step.job] = step.range.size();
          app.job_begin[step.job] = step.range.begin;
          eng.submit(js, now, actions);
          apply_actions();
          app.op_left = oc_of(f) + staging_ns(app.method, step.range.size());
          break;
        }
        case engine::StepKind::submit_demand: {
          engine::JobSpec js;
          js.function = f;
          js.flags = TANDEM_FLAG_DEMAND_ONLY;
          js.session = app.session;
          js.tag = a;
          eng.submit(js, now, actions);
          apply_actions();
          ++result.demand_packets;
          app.op_left = oc_of(f);
          break;
        }
        case engine::StepKind::cancel_job: {
          if (!eng.cancel_queued(app.session, static_cast<uint64_t>(step.job) + 1, actions)) {
            app.pending.push_back({step.job, engine::JobEvent::cancel_refused, Status::ok});
          }
          apply_actions();
          app.op_left = oc_of(f);
          break;
        }
        case engine::StepKind::wait: {
          app.state = AppState::blocked;
          ++app.wake_gen;
          if (std::isfinite(step.wake_at)) {
            // A futex wait with a timeout: no shorter than 1 us, like a real timer.
            const Time t = std::max(static_cast<Time>(std::ceil(step.wake_at * 1e9)), now + 1000);
            push(t, EventKind::wake, a, app.wake_gen);
          }
          dispatch(c);
          return;
        }
        case engine::StepKind::done: {
          if (config.trace) {
            result.trace.push_back(TraceSpan{TraceSpan::call, a, f, app.call_start, now,
                                             static_cast<double>(calls[app.call].units) / config.cpu_hz, a});
          }
          const Time latency = now - app.call_ready;
          const Time sw = o0_of(f) + units_ns(calls[app.call].units);
          result.call_latency.push_back(latency);
          result.call_sw_ns.push_back(sw);
          result.app_latency_ns[a] += latency;
          result.app_sw_ns[a] += sw;
          app.call_ready = now;
          ++result.calls;
          app.in_call = false;
          ++app.call;
          break;
        }
      }
    }
  }

  // ---------------------------------------------------------------- main loop
  SimResult run() {
    if (config.translation.enabled()) tlb.emplace(config.translation.tlb, ec.slots);
    result.app_finish.assign(apps.size(), 0);
    unfinished = static_cast<uint32_t>(apps.size());
    std::vector<uint32_t> order(apps.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    Rng jitter(config.jitter_seed);
    if (config.jitter_seed != 0) {
      for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[jitter.below(i)]);
    }
    for (uint32_t a : order) ready.push_back(a);
    for (uint32_t c = 0; c < cpus.size(); ++c) {
      cpus[c].kicked = true;
      push(0, EventKind::dispatch, c);
    }
    if (policy) push(0, EventKind::tick, 0);  // like the real dispatcher, which samples as it starts
    bool first_dispatch_jitter = config.jitter_seed != 0;

    Event ev;
    while (unfinished > 0 && pop(ev)) {
      now = ev.t;
      switch (ev.kind) {
        case EventKind::cpu:
          if (ev.gen != cpus[ev.id].gen) continue;
          ++result.events;
          on_cpu_event(ev.id);
          break;
        case EventKind::dispatch:
          cpus[ev.id].kicked = false;
          if (cpus[ev.id].app != kNone) continue;
          ++result.events;
          dispatch(ev.id);
          if (first_dispatch_jitter && cpus[ev.id].app != kNone) {
            // The timer tick's phase: the first slice of each CPU is cut short at random.
            Cpu& cpu = cpus[ev.id];
            cpu.slice_end = now + 1 + static_cast<Time>(jitter.below(static_cast<uint64_t>(config.time_slice_ns)));
            if (cpu.app != kNone && apps[cpu.app].op_left > 0) schedule_cpu(ev.id);
            if (ev.id + 1 == cpus.size()) first_dispatch_jitter = false;
          }
          break;
        case EventKind::job_done:
          ++result.events;
          eng.job_finished(ev.id, Status::ok, 0, now, actions);
          apply_actions();
          break;
        case EventKind::config_done: {
          if (ev.gen != config_gen[ev.id]) continue;
          ++result.events;
          eng.configure_done(ev.id, now, actions);
          SlotTrace& st = slot_trace[ev.id];
          st.resident_since = now;
          st.resident_function = eng.slot(ev.id).function;
          if (config.trace) {
            result.trace.push_back(TraceSpan{TraceSpan::configure, ev.id, st.resident_function, st.configure_start, now, 0, 0});
          }
          apply_actions();
          break;
        }
        case EventKind::tick:
          ++result.events;
          monitor.sample(eng, now);
          policy->on_period(eng, monitor, now, actions);
          apply_actions();
          push(now + config.period_ns, EventKind::tick, 0);
          break;
        case EventKind::wake:
          if (apps[ev.id].state != AppState::blocked || ev.gen != apps[ev.id].wake_gen) continue;
          ++result.events;
          make_ready(ev.id);
          break;
      }
    }
    result.makespan = now;
    for (uint32_t s = 0; s < ec.slots; ++s) {
      const engine::SlotView v = eng.slot(s);
      result.slot_busy_ns += v.busy_total + (v.state == engine::SlotState::busy ? now - v.busy_since : 0);
      if (config.trace && slot_trace[s].resident_since >= 0) {
        result.trace.push_back(TraceSpan{TraceSpan::resident, s, slot_trace[s].resident_function,
                                         slot_trace[s].resident_since, now, 0, 0});
      }
    }
    return std::move(result);
  }

  SimConfig config;
  std::vector<AppSpec> specs;
  engine::EngineConfig ec;
  engine::Engine eng;
  engine::Monitor monitor;
  std::unique_ptr<engine::ReconfigPolicy> policy;
  bool reacts = false;  // the policy wants on_demand between periods
  model::CostParams cost;
  double ns_per_unit = 1;
  double run_ns_per_unit = 1;
  Time o0_ns = 0;
  Time oc_ns = 0;
  struct FunctionCpu {   // a function's own costs (SimConfig::function_costs)
    bool present = false;
    Time o0_ns = 0;
    Time oc_ns = 0;
    model::CostParams cost;
  };
  std::array<FunctionCpu, engine::kMaxFunctions> function_cpu{};
  std::vector<App> apps;
  std::vector<Cpu> cpus;
  std::deque<uint32_t> ready;
  std::vector<Event> heap;
  Event front;
  bool has_front = false;
  uint64_t seq = 0;
  Time now = 0;
  uint32_t unfinished = 0;
  engine::Actions actions;
  std::vector<SlotTrace> slot_trace;
  std::vector<uint32_t> config_gen;
  std::optional<devices::DeviceTlb> tlb;  // translation phasev: the device's TLB
  SimResult result;
};

engine::EngineConfig Simulator::engine_config(const SimConfig& c, const std::vector<AppSpec>& apps) {
  engine::EngineConfig ec;
  ec.slots = std::max<uint32_t>(c.slots, 1);
  ec.queues = ec.slots;
  ec.queue_capacity = 4096;
  ec.max_jobs = static_cast<uint32_t>(apps.size()) * std::max<uint32_t>(c.partitioner.max_outstanding_jobs, 1) + 64;
  ec.max_job_ns = 0;
  const Time reconfig = c.reconfig_ns >= 0 ? c.reconfig_ns : c.period_ns;
  for (const AppSpec& a : apps) {
    for (const LibraryCall& call : a.calls) ec.known.set(call.function);
  }
  for (engine::FunctionId f : c.resident) ec.known.set(f);
  for (uint32_t f = 0; f < engine::kMaxFunctions; ++f) {
    if (!ec.known[f]) continue;
    model::AccelModel& m = ec.models[f];
    const auto own = c.function_costs.find(static_cast<engine::FunctionId>(f));
    const SimConfig::FunctionCosts fc = own == c.function_costs.end() ? SimConfig::FunctionCosts{} : own->second;
    const double speedup = fc.speedup >= 0 ? fc.speedup : c.speedup;
    m.throughput = speedup > 0 ? speedup * c.cpu_hz : 0;
    m.latency_s = fc.da_s >= 0 ? fc.da_s : c.da_s;
    m.reconfig_s = fc.reconfig_s >= 0 ? fc.reconfig_s : static_cast<double>(reconfig) * 1e-9;
  }
  return ec;
}

Simulator::Simulator(const SimConfig& config, std::vector<AppSpec> apps)
    : impl_(std::make_unique<Impl>(config, std::move(apps))) {}
Simulator::~Simulator() = default;
SimResult Simulator::run() { return impl_->run(); }

SimResult simulate(const SimConfig& config, const std::vector<AppSpec>& apps) {
  Simulator s(config, apps);
  return s.run();
}

SimResult simulate_sw_baseline(SimConfig config, const std::vector<AppSpec>& apps) {
  config.partitioner.policy = engine::PartitionPolicy::sw_only;
  config.engine_cores = 0;  // every call in software: the engine has nothing to do
  config.policy = "none";
  config.resident.clear();
  config.trace = false;
  return simulate(config, apps);
}

}  // namespace tandem::sim
