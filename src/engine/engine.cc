#include "engine/engine.hpp"

#include <algorithm>
#include <cassert>

namespace tandem::engine {

namespace {

Action completion_action(const JobSpec& spec, Status status) {
  Action a;
  a.kind = ActionKind::complete;
  a.status = status;
  a.function = spec.function;
  a.session = spec.session;
  a.completion = spec.completion;
  a.tag = spec.tag;
  return a;
}

}  // namespace

Engine::Engine(const EngineConfig& config) : config_(config) {
  if (config_.slot_classes.empty()) {
    SlotClass all;
    all.slots = config_.slots == 0 ? 1 : config_.slots;
    all.loadable = config_.known & ~config_.no_accelerator;
    all.models = config_.models;
    config_.slot_classes.push_back(all);
  } else {
    std::bitset<kMaxFunctions> held;
    config_.slots = 0;
    for (const SlotClass& c : config_.slot_classes) {
      config_.slots += c.slots;
      held |= c.loadable;
    }
    config_.no_accelerator = config_.known & ~held;
    for (size_t f = 0; f < kMaxFunctions; ++f) {
      for (const SlotClass& c : config_.slot_classes) {
        if (c.loadable[f]) {
          config_.models[f] = c.models[f];
          break;
        }
      }
    }
  }
  if (config_.slots == 0) config_.slots = 1;
  if (config_.queues == 0) config_.queues = config_.slots;
  if (config_.queue_capacity == 0) config_.queue_capacity = 1;
  if (config_.max_jobs == 0) config_.max_jobs = 1;
  slots_.resize(config_.slots);
  for (uint32_t c = 0; c < config_.slot_classes.size(); ++c) {
    for (uint32_t i = 0; i < config_.slot_classes[c].slots && slot_class_.size() < config_.slots; ++i) {
      slot_class_.push_back(c);
    }
  }
  slot_class_.resize(config_.slots, 0);  // slots beyond the classes' sum (slots = 0 given): the first class
  for (const SlotClass& c : config_.slot_classes) {
    if (c.loadable.count() > 1) placeable_ |= c.loadable;
  }
  queues_.resize(config_.queues);
  route_.fill(kNone);
  usable_.fill(0);
  running_work_.fill(0);
  running_jobs_.fill(0);
  for (size_t f = 0; f < kMaxFunctions; ++f) {
    // Unknown functions never reach the check (submit refuses them first); their 0 means "always
    // check", and skipping their bisections makes an engine cheap to build (the packet fuzzer builds
    // one per input).
    if (!config_.known[f]) continue;
    // UINT64_MAX when no workload is too large (UINT64_MAX itself is still checked).
    check_job_ns_from_[f] = config_.models[f].first_workload_over(config_.max_job_ns);
  }
  jobs_ = ChunkedTable<Job>(config_.max_jobs);
}

// ---------------------------------------------------------------- sessions and rings

SessionId Engine::open_session() {
  for (SessionId s = 0; s < sessions_.size(); ++s) {
    Session& ss = sessions_[s];
    if (!ss.open && !ss.closing) {
      ss = Session{};
      ss.open = true;
      return s;
    }
  }
  sessions_.push_back(Session{});
  sessions_.back().open = true;
  lanes_.resize(sessions_.size() * queues_.size());
  return static_cast<SessionId>(sessions_.size() - 1);
}

bool Engine::session_open(SessionId s) const { return s < sessions_.size() && sessions_[s].open; }

uint32_t Engine::session_jobs(SessionId s) const { return s < sessions_.size() ? sessions_[s].jobs : 0; }

void Engine::close_session(SessionId s, Time now, Actions& out) {
  (void)now;
  if (s >= sessions_.size() || !sessions_[s].open) return;
  Session& ss = sessions_[s];
  ss.open = false;
  ss.closing = true;
  // Queued jobs never start.
  for (QueueId q = 0; q < queues_.size(); ++q) {
    while (lane(s, q).count > 0) {
      JobId j = lane(s, q).head;
      unlink_from_lane(j);
      finish_job(j, Status::cancelled, 0, 0, out);
    }
  }
  // Running jobs finish on their own; barriers of this session can no longer be waited on.
  for (Slot& slot : slots_) {
    if (slot.state != SlotState::busy || jobs_[slot.job].spec.session != s) continue;
    for (uint32_t l = jobs_[slot.job].waiters; l != kNone;) {
      uint32_t next = links_[l].next;
      links_[l].next = free_links_;
      free_links_ = l;
      l = next;
    }
    jobs_[slot.job].waiters = kNone;
  }
  std::erase_if(awaited_, [s](const Awaited& a) { return a.session == s; });
  for (uint32_t b = 0; b < barriers_.size(); ++b) {
    if (!barriers_[b].active || barriers_[b].session != s) continue;
    barriers_[b].failed = false;
    Action a;
    a.kind = ActionKind::complete;
    a.status = Status::cancelled;
    a.session = s;
    a.completion = barriers_[b].completion;
    a.tag = barriers_[b].tag;
    out.push_back(a);
    if (barriers_[b].ring != kNone) --rings_[barriers_[b].ring].blocked;
    barriers_[b].active = false;
    free_barriers_.push_back(b);
    --ss.barriers;
  }
  for (Ring& r : rings_) {
    if (r.session == s) r.open = false;
  }
  if (ss.jobs == 0 && ss.barriers == 0) {
    ss.closing = false;
    Action a;
    a.kind = ActionKind::session_drained;
    a.session = s;
    out.push_back(a);
  }
}

RingId Engine::open_ring(SessionId s) {
  for (RingId r = 0; r < rings_.size(); ++r) {
    if (!rings_[r].open && rings_[r].blocked == 0) {
      rings_[r] = Ring{s, true, 0};
      return r;
    }
  }
  rings_.push_back(Ring{s, true, 0});
  return static_cast<RingId>(rings_.size() - 1);
}

void Engine::close_ring(RingId r) {
  if (r < rings_.size()) rings_[r].open = false;  // id reused once nothing blocks it any more
}

// ---------------------------------------------------------------- job pool and lanes

JobId Engine::alloc_job() {
  JobId j = free_jobs_;
  if (j != kNone) {
    free_jobs_ = jobs_[j].next;
  } else if (unused_jobs_ < config_.max_jobs) {
    j = unused_jobs_++;
  } else {
    return kNone;
  }
  jobs_[j] = Job{};
  ++jobs_in_flight_;
  return j;
}

void Engine::free_job(JobId j) {
  jobs_[j].queued = jobs_[j].running = false;
  jobs_[j].next = free_jobs_;
  free_jobs_ = j;
  --jobs_in_flight_;
}

void Engine::enqueue(JobId j, QueueId q) {
  Job& job = jobs_[j];
  Queue& queue = queues_[q];
  uint32_t li = lane_index(job.spec.session, q);
  Lane& l = lanes_[li];
  job.queue = q;
  job.queued = true;
  job.next = kNone;
  if (l.tail == kNone) {
    l.head = l.tail = j;
  } else {
    jobs_[l.tail].next = j;
    l.tail = j;
  }
  if (l.count++ == 0) {  // lane becomes active: insert just before the cursor (last in RR order)
    ++queue.active_lanes;
    if (queue.cursor == kNone) {
      l.next_active = l.prev_active = li;
      queue.cursor = li;
    } else {
      uint32_t prev = lanes_[queue.cursor].prev_active;
      l.next_active = queue.cursor;
      l.prev_active = prev;
      lanes_[prev].next_active = li;
      lanes_[queue.cursor].prev_active = li;
    }
  }
  ++queue.jobs;
  ++queued_jobs_;
  queue.work += job.spec.workload;
}

// Removes a lane from its queue's active ring once it has no jobs.
void Engine::deactivate_lane(Queue& queue, uint32_t li) {
  Lane& l = lanes_[li];
  --queue.active_lanes;
  if (l.next_active == li) {
    queue.cursor = kNone;
  } else {
    lanes_[l.prev_active].next_active = l.next_active;
    lanes_[l.next_active].prev_active = l.prev_active;
    if (queue.cursor == li) queue.cursor = l.next_active;
  }
  l.next_active = l.prev_active = kNone;
}

JobId Engine::dequeue(QueueId q) {
  Queue& queue = queues_[q];
  if (queue.cursor == kNone) return kNone;
  uint32_t li = queue.cursor;
  Lane& l = lanes_[li];
  JobId j = l.head;
  l.head = jobs_[j].next;
  if (l.head == kNone) l.tail = kNone;
  if (--l.count == 0) {
    deactivate_lane(queue, li);
  } else {
    queue.cursor = l.next_active;  // next session's turn
  }
  jobs_[j].queued = false;
  jobs_[j].next = kNone;
  --queue.jobs;
  --queued_jobs_;
  queue.work -= jobs_[j].spec.workload;
  return j;
}

bool Engine::below_fair_share(SessionId s, QueueId q) const {
  const uint32_t mine = lanes_[lane_index(s, q)].count;
  const uint32_t sessions = queues_[q].active_lanes + (mine == 0 ? 1 : 0);
  const uint32_t share = (config_.queue_capacity + sessions - 1) / sessions;
  return mine < share;
}

void Engine::unlink_from_lane(JobId j) {
  Job& job = jobs_[j];
  Queue& queue = queues_[job.queue];
  uint32_t li = lane_index(job.spec.session, job.queue);
  Lane& l = lanes_[li];
  JobId prev = kNone;
  for (JobId k = l.head; k != j; k = jobs_[k].next) prev = k;  // cancellation is rare: O(lane)
  if (prev == kNone) {
    l.head = job.next;
  } else {
    jobs_[prev].next = job.next;
  }
  if (l.tail == j) l.tail = prev;
  if (--l.count == 0) deactivate_lane(queue, li);
  job.queued = false;
  job.next = kNone;
  --queue.jobs;
  --queued_jobs_;
  queue.work -= job.spec.workload;
}

// ---------------------------------------------------------------- events

void Engine::reject(SessionId session, uint64_t completion, uint64_t tag, Status status, Actions& out) {
  Action a;
  a.kind = ActionKind::complete;
  a.status = status;
  a.session = session;
  a.completion = completion;
  a.tag = tag;
  out.push_back(a);
}

JobId Engine::submit(const JobSpec& spec, Time now, Actions& out) {
  const FunctionId f = spec.function;
  if (f >= kMaxFunctions || !config_.known[f]) {
    out.push_back(completion_action(spec, Status::unknown_function));
    return kNone;
  }
  if (spec.session >= sessions_.size() || !sessions_[spec.session].open) {
    out.push_back(completion_action(spec, Status::cancelled));
    return kNone;
  }
  FunctionCounters& fc = counters_[f];
  const QueueId q = route_[f];
  if (spec.flags & TANDEM_FLAG_DEMAND_ONLY) {  // Algorithm 2 line 8: register demand, never queue
    if (q == kNone) {
      requests_.set(f);
      ++fc.demand_requests;
    }
    out.push_back(completion_action(spec, q == kNone ? Status::not_accelerated : Status::ok));
    return kNone;
  }
  if (q == kNone) {  // thesis 5.4.4: reject, and remember the demand
    requests_.set(f);
    ++fc.demand_requests;
    ++fc.rejected_not_accelerated;
    out.push_back(completion_action(spec, Status::not_accelerated));
    return kNone;
  }
  if (spec.workload >= check_job_ns_from_[f] && config_.max_job_ns > 0 &&
      config_.models[f].job_ns(spec.workload) > config_.max_job_ns) {
    out.push_back(completion_action(spec, Status::job_too_large));
    return kNone;
  }
  Session& ss = sessions_[spec.session];
  if (config_.max_jobs_per_session > 0 && ss.jobs >= config_.max_jobs_per_session) {
    out.push_back(completion_action(spec, Status::limit_exceeded));
    return kNone;
  }
  if (queues_[q].jobs >= config_.queue_capacity && !below_fair_share(spec.session, q)) {
    out.push_back(completion_action(spec, Status::queue_full));
    return kNone;
  }
  JobId j = alloc_job();
  if (j == kNone) {
    out.push_back(completion_action(spec, Status::queue_full));
    return kNone;
  }
  jobs_[j].spec = spec;
  ++ss.jobs;
  ++fc.submitted_jobs;
  fc.submitted_work += spec.workload;
  if (spec.barrier_bit && spec.ring != kNone) ++rings_[spec.ring].blocked;
  if (!awaited_.empty() && spec.completion != 0) {  // a barrier was waiting for this very record
    for (size_t i = 0; i < awaited_.size();) {
      if (awaited_[i].session == spec.session && awaited_[i].key == spec.completion) {
        jobs_[j].waiters = alloc_link(awaited_[i].barrier, jobs_[j].waiters);
        awaited_[i] = awaited_.back();
        awaited_.pop_back();
      } else {
        ++i;
      }
    }
  }
  enqueue(j, q);
  schedule(now, out);
  return j;
}

void Engine::schedule(Time now, Actions& out) {
  // Called after every event: most find nothing queued (a job that started at once, a completion
  // with empty queues), so that case costs one compare.
  const uint32_t n = static_cast<uint32_t>(slots_.size());
  SlotId s = slot_cursor_;
  for (uint32_t i = 0; i < n && queued_jobs_ > 0; ++i, s = s + 1 == n ? 0 : s + 1) {
    Slot& slot = slots_[s];
    if (slot.state != SlotState::idle || queues_[slot.queue].jobs == 0) continue;
    if (slot.out_of_service && queues_[slot.queue].in_service > 0) continue;  // a healthy slot takes them
    const JobId j = dequeue(slot.queue);
    Job& job = jobs_[j];
    job.running = true;
    job.slot = s;
    job.start = now;
    slot.state = SlotState::busy;
    slot.job = j;
    slot.busy_since = now;
    running_work_[job.spec.function] += job.spec.workload;
    ++running_jobs_[job.spec.function];
    Action a;
    a.kind = ActionKind::start_job;
    a.function = job.spec.function;
    a.slot = s;
    a.job = j;
    a.session = job.spec.session;
    a.completion = job.spec.completion;
    a.tag = job.spec.tag;
    a.workload = job.spec.workload;
    out.push_back(a);
    slot_cursor_ = s + 1 == n ? 0 : s + 1;  // round-robin: the next search starts after the slot just served
  }
}

void Engine::finish_job(JobId j, Status status, int64_t value, Time device_ns, Actions& out) {
  Job& job = jobs_[j];
  Action a = completion_action(job.spec, status);
  a.job = j;
  a.slot = job.slot;
  a.value = value;
  a.device_ns = device_ns;
  out.push_back(a);
  if (job.spec.barrier_bit && job.spec.ring != kNone) --rings_[job.spec.ring].blocked;
  resolve_waiters(j, status != Status::ok, out);
  SessionId s = job.spec.session;
  free_job(j);
  release_session_job(s, out);
}

void Engine::release_session_job(SessionId s, Actions& out) {
  Session& ss = sessions_[s];
  --ss.jobs;
  if (ss.closing && ss.jobs == 0 && ss.barriers == 0) {
    ss.closing = false;
    Action a;
    a.kind = ActionKind::session_drained;
    a.session = s;
    out.push_back(a);
  }
}

void Engine::job_finished(SlotId s, Status status, int64_t value, Time now, Actions& out) {
  if (s >= slots_.size() || slots_[s].state != SlotState::busy) return;  // stale timer: ignore
  Slot& slot = slots_[s];
  const JobId j = slot.job;
  const Job& job = jobs_[j];
  slot.state = SlotState::idle;
  slot.job = kNone;
  slot.busy_total += now - slot.busy_since;
  slot.idle_since = now;
  ++slot.jobs_done;
  running_work_[job.spec.function] -= job.spec.workload;
  --running_jobs_[job.spec.function];
  ++counters_[job.spec.function].completed_jobs;
  finish_job(j, status, value, now - job.start, out);
  schedule(now, out);
}

void Engine::configure_done(SlotId s, Time now, Actions& out) {
  if (s >= slots_.size() || slots_[s].state != SlotState::configuring) return;
  slots_[s].state = SlotState::idle;
  slots_[s].idle_since = now;
  if (!slots_[s].out_of_service) count_usable(s, +1);
  schedule(now, out);
}

// One more (+1) or one fewer (-1) usable accelerator: slot s with its function.
void Engine::count_usable(SlotId s, int delta) {
  const FunctionId f = slots_[s].function;
  if (delta > 0) {
    ++usable_[f];
    usable_xa_[f] += slot_model(s, f).throughput;
  } else {
    --usable_[f];
    usable_xa_[f] = usable_[f] == 0 ? 0 : usable_xa_[f] - slot_model(s, f).throughput;
  }
}

void Engine::set_in_service(SlotId s, bool in_service, Time now, Actions& out) {
  if (s >= slots_.size() || slots_[s].out_of_service == !in_service) return;
  Slot& slot = slots_[s];
  slot.out_of_service = !in_service;
  const int delta = in_service ? +1 : -1;
  if (slot.state == SlotState::idle || slot.state == SlotState::busy) count_usable(s, delta);
  if (slot.state != SlotState::empty) queues_[slot.queue].in_service += delta;
  if (in_service) schedule(now, out);
}

bool Engine::cancel_queued(SessionId session, uint64_t completion, Actions& out) {
  if (session >= sessions_.size()) return false;
  for (QueueId q = 0; q < queues_.size(); ++q) {
    for (JobId j = lane(session, q).head; j != kNone; j = jobs_[j].next) {
      if (jobs_[j].spec.completion != completion) continue;
      unlink_from_lane(j);
      finish_job(j, Status::cancelled, 0, 0, out);
      return true;
    }
  }
  return false;
}

bool Engine::cancel(SessionId session, uint64_t target, uint64_t completion, uint64_t tag, Actions& out) {
  const bool withdrawn = cancel_queued(session, target, out);  // the target's CANCELLED comes first
  Action a;
  a.kind = ActionKind::complete;
  a.status = Status::ok;
  a.session = session;
  a.completion = completion;
  a.tag = tag;
  a.value = withdrawn ? 1 : 0;
  out.push_back(a);
  return withdrawn;
}

// ---------------------------------------------------------------- barriers

uint32_t Engine::alloc_barrier() {
  if (!free_barriers_.empty()) {
    uint32_t b = free_barriers_.back();
    free_barriers_.pop_back();
    return b;
  }
  barriers_.push_back(Barrier{});
  return static_cast<uint32_t>(barriers_.size() - 1);
}

uint32_t Engine::alloc_link(uint32_t barrier, uint32_t next) {
  uint32_t l;
  if (free_links_ != kNone) {
    l = free_links_;
    free_links_ = links_[l].next;
  } else {
    links_.push_back(WaitLink{});
    l = static_cast<uint32_t>(links_.size() - 1);
  }
  links_[l] = WaitLink{barrier, next};
  return l;
}

bool Engine::find_live_job(SessionId s, uint64_t key, JobId& found) const {
  for (QueueId q = 0; q < queues_.size(); ++q) {
    for (JobId j = lanes_[lane_index(s, q)].head; j != kNone; j = jobs_[j].next) {
      if (jobs_[j].spec.completion == key) {
        found = j;
        return true;
      }
    }
  }
  for (const Slot& slot : slots_) {
    if (slot.state == SlotState::busy && jobs_[slot.job].spec.session == s &&
        jobs_[slot.job].spec.completion == key) {
      found = slot.job;
      return true;
    }
  }
  return false;
}

void Engine::submit_barrier(const BarrierSpec& spec, Time now, Actions& out) {
  (void)now;
  if (spec.session >= sessions_.size() || !sessions_[spec.session].open) {
    reject(spec.session, spec.completion, spec.tag, Status::cancelled, out);
    return;
  }
  const uint32_t b = alloc_barrier();
  barriers_[b] = Barrier{spec.session, spec.ring, spec.completion, spec.tag, 0, false, true};
  ++sessions_[spec.session].barriers;
  if (spec.ring != kNone) ++rings_[spec.ring].blocked;  // AQL: later packets of the ring wait
  for (size_t i = 0; i < spec.deps.size(); ++i) {
    switch (spec.dep_state[i]) {
      case DepState::unused:
      case DepState::done_ok:
        break;
      case DepState::done_failed:
        barriers_[b].failed = true;
        break;
      case DepState::pending: {
        JobId j;
        if (find_live_job(spec.session, spec.deps[i], j)) {
          jobs_[j].waiters = alloc_link(b, jobs_[j].waiters);
        } else {
          awaited_.push_back(Awaited{spec.session, spec.deps[i], b});
        }
        ++barriers_[b].remaining;
        break;
      }
    }
  }
  if (barriers_[b].remaining == 0) complete_barrier(b, out);
}

void Engine::resolve_waiters(JobId j, bool failed, Actions& out) {
  for (uint32_t l = jobs_[j].waiters; l != kNone;) {
    const uint32_t next = links_[l].next;
    const uint32_t b = links_[l].barrier;
    links_[l].next = free_links_;
    free_links_ = l;
    barrier_dep_done(b, failed, out);
    l = next;
  }
  jobs_[j].waiters = kNone;
}

void Engine::barrier_dep_done(uint32_t b, bool failed, Actions& out) {
  Barrier& bar = barriers_[b];
  if (!bar.active) return;
  if (failed) bar.failed = true;
  if (--bar.remaining == 0) complete_barrier(b, out);
}

void Engine::complete_barrier(uint32_t b, Actions& out) {
  Barrier& bar = barriers_[b];
  reject(bar.session, bar.completion, bar.tag, bar.failed ? Status::dependency_failed : Status::ok, out);
  if (bar.ring != kNone) --rings_[bar.ring].blocked;
  bar.active = false;
  free_barriers_.push_back(b);
  Session& ss = sessions_[bar.session];
  --ss.barriers;
  if (ss.closing && ss.jobs == 0 && ss.barriers == 0) {
    ss.closing = false;
    Action a;
    a.kind = ActionKind::session_drained;
    a.session = bar.session;
    out.push_back(a);
  }
}

// ---------------------------------------------------------------- reconfiguration

bool Engine::can_reconfigure(SlotId s) const {
  if (s >= slots_.size()) return false;
  const Slot& slot = slots_[s];
  if (slot.state == SlotState::busy || slot.out_of_service) return false;
  if (slot.state == SlotState::empty) return true;
  const Queue& q = queues_[slot.queue];
  if (q.in_service == 1 && q.serving > 1) return false;  // its function's last slot in service: the rest fail
  return !(q.jobs > 0 && q.serving == 1);  // never strand a non-empty queue (thesis 5.4.4)
}

QueueId Engine::find_free_queue() const {
  for (QueueId q = 0; q < queues_.size(); ++q) {
    if (!queues_[q].routed) return q;
  }
  return kNone;
}

void Engine::detach_slot(Slot& slot) {
  if (slot.state == SlotState::empty) return;
  if (slot.state == SlotState::idle && !slot.out_of_service) count_usable(static_cast<SlotId>(&slot - slots_.data()), -1);
  Queue& q = queues_[slot.queue];
  if (!slot.out_of_service) --q.in_service;
  if (--q.serving == 0) {  // last slot of this function: the queue becomes available
    route_[q.function] = kNone;
    q.routed = false;
    q.cursor = kNone;
  }
  slot.state = SlotState::empty;
  slot.queue = kNone;
}

bool Engine::load(SlotId s, FunctionId f, Time now, Actions& out) {
  if (s >= slots_.size() || f >= kMaxFunctions || !config_.known[f] || !config_.slot_classes[slot_class_[s]].loadable[f]) {
    return false;
  }
  Slot& slot = slots_[s];
  if (slot.state != SlotState::empty && slot.function == f) return true;  // already there
  if (!can_reconfigure(s)) return false;
  if (route_[f] == kNone && find_free_queue() == kNone &&
      !(slot.state != SlotState::empty && queues_[slot.queue].serving == 1)) {
    return false;  // nowhere to queue f's jobs
  }
  detach_slot(slot);
  QueueId q = route_[f];
  if (q == kNone) {
    q = find_free_queue();
    Queue& queue = queues_[q];
    queue = Queue{};
    queue.function = f;
    queue.routed = true;
    route_[f] = q;
  }
  ++queues_[q].serving;
  if (!slot.out_of_service) ++queues_[q].in_service;
  slot.state = SlotState::configuring;
  slot.function = f;
  slot.queue = q;
  slot.until = now + slot_model(s, f).reconfig_ns();
  Action a;
  a.kind = ActionKind::begin_configure;
  a.slot = s;
  a.function = f;
  a.until = slot.until;
  out.push_back(a);
  return true;
}

bool Engine::unload(SlotId s, Actions& out) {
  (void)out;
  if (!can_reconfigure(s)) return false;
  detach_slot(slots_[s]);
  return true;
}

// ---------------------------------------------------------------- introspection

SlotView Engine::slot(SlotId s) const {
  const Slot& x = slots_[s];
  return SlotView{x.state, x.function, x.queue, x.job, x.until, x.busy_since, x.busy_total, x.jobs_done, x.idle_since,
                  !x.out_of_service};
}

QueueView Engine::queue(QueueId q) const {
  const Queue& x = queues_[q];
  return QueueView{x.function, x.routed, x.jobs, x.work};
}

uint32_t Engine::accelerators(FunctionId f) const { return usable_[f]; }

uint32_t Engine::configuring(FunctionId f) const {
  uint32_t n = 0;
  for (const Slot& s : slots_) n += (s.state == SlotState::configuring && s.function == f) ? 1 : 0;
  return n;
}

uint64_t Engine::outstanding_work(FunctionId f) const {
  const QueueId q = route_[f];
  return (q == kNone ? 0 : queues_[q].work) + running_work_[f];
}

uint32_t Engine::running_jobs(FunctionId f) const { return running_jobs_[f]; }

}  // namespace tandem::engine
