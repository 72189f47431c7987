#include "rt/dispatcher.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>

#include "abi/atomics.hpp"
#include "abi/futex.hpp"
#include "base/clock.hpp"
#include "rt/completion.hpp"

namespace tandem::rt {

using engine::Action;
using engine::ActionKind;

namespace {

// Scatter-gather staging the dispatcher holds at once; a job beyond it completes with NO_MEMORY.
constexpr uint64_t kMaxStagingBytes = uint64_t{1} << 30;

// The engine's slots are the devices' slots, in device order.
engine::EngineConfig with_slot_classes(engine::EngineConfig config,
                                       const std::vector<std::unique_ptr<devices::Device>>& devices) {
  config.slot_classes.clear();
  for (const auto& d : devices) {
    const devices::DeviceInfo& info = d->info();
    engine::SlotClass c;
    c.slots = info.slots;
    c.loadable = info.loadable & config.known;
    c.models = info.models;
    config.slot_classes.push_back(c);
  }
  return config;
}

}  // namespace

Dispatcher::Dispatcher(engine::EngineConfig config, std::vector<std::unique_ptr<devices::Device>> devices,
                       const DispatcherOptions& options, std::shared_ptr<tandem_metrics_page_t> metrics_page)
    : engine_(with_slot_classes(std::move(config), devices)),
      options_(options),
      monitor_(engine_.config(), options.monitor),
      metrics_page_(std::move(metrics_page)),
      timers_(engine_.slot_count()),
      pending_(engine_.config().max_jobs) {
  engine::SlotId first = 0;
  for (auto& d : devices) {
    const uint32_t slots = d->info().slots;
    slot_device_.insert(slot_device_.end(), slots, static_cast<uint32_t>(devices_.size()));
    devices_.push_back(DeviceEntry{std::move(d), first, 0, false});
    first += slots;
  }
  // Device-local memory: the first device that offers some, reached by its own slots and its copy
  // engines (a device of kind "copy" among the devices).
  for (DeviceEntry& d : devices_) {
    const devices::DeviceInfo& info = d.device->info();
    if (info.memory.local_bytes > 0 && !local_) {
      local_ = std::make_unique<devices::LocalMemory>(info.memory.local_bytes, info.memory.local_alignment);
      d.device->attach_local_memory(local_->base(), local_->capacity());
      d.reaches_local = true;
    }
    if (info.kind == "copy" && !copy_engines_) {
      copy_engines_ = static_cast<devices::CopyEngines*>(d.device.get());
      copy_entry_ = &d;
      d.reaches_local = true;
    }
  }
  actions_.reserve(256);
  finished_.reserve(64);
  if (!metrics_page_) metrics_page_ = std::make_shared<tandem_metrics_page_t>();
  abi::init_metrics_page(*metrics_page_, engine_.slot_count(), static_cast<uint64_t>(monitor_.config().period_ns));
}

Dispatcher::~Dispatcher() {
  stop();
  // Last to first: a device's copy engines (after it in the list) call into it until they are gone.
  while (!devices_.empty()) devices_.pop_back();
}

void Dispatcher::start() {
  std::lock_guard lock(control_mutex_);
  if (running_) return;
  running_ = true;
  stopping_ = false;
  thread_ = std::thread([this] { loop(); });
}

void Dispatcher::stop() {
  {
    std::lock_guard lock(control_mutex_);
    if (!running_) return;
    control_.push_back([this] {
      stopping_ = true;
      // Jobs waiting for a client's answer would hold the drain up to their timeout: end them now.
      for (SessionEntry& s : sessions_) {
        if (s.service) s.service->close();
      }
    });
    control_pending_.store(true, std::memory_order_release);
  }
  abi::fetch_add_acq_rel(control_word_, 1u);
  abi::futex_wake(&control_word_);
  thread_.join();
  std::lock_guard lock(control_mutex_);
  running_ = false;
  // Whatever was posted after the thread left runs inline now (nobody else touches the engine).
  for (auto& fn : control_) fn();
  control_.clear();
}

void Dispatcher::post(std::function<void()> fn) {
  {
    std::unique_lock lock(control_mutex_);
    if (!running_) {  // no thread: the caller owns the engine for the moment
      fn();
      return;
    }
    control_.push_back(std::move(fn));
    control_pending_.store(true, std::memory_order_release);  // pairs with the loop's acquire
  }
  abi::fetch_add_acq_rel(control_word_, 1u);
  abi::futex_wake(&control_word_);
}

void Dispatcher::run_control() {
  std::vector<std::function<void()>> work;
  {
    std::lock_guard lock(control_mutex_);
    work.swap(control_);
    control_pending_.store(false, std::memory_order_relaxed);
  }
  for (auto& fn : work) fn();
  apply(now_ns());
}

// ---------------------------------------------------------------- control operations

engine::SessionId Dispatcher::open_session(std::shared_ptr<AddressSpace> memory, std::function<void()> on_drained) {
  return with_engine([&](engine::Engine& e) {
    const engine::SessionId s = e.open_session();
    if (s >= sessions_.size()) sessions_.resize(s + 1);
    sessions_[s] = SessionEntry{std::move(memory), std::move(on_drained), true, TANDEM_ADDRESS_AISLE, {}, SessionStats{s}, nullptr};
    return s;
  });
}

void Dispatcher::close_session(engine::SessionId s) {
  with_engine([&](engine::Engine&) {
    close_session_here(s);
    return 0;
  });
}

void Dispatcher::close_session_later(engine::SessionId s, std::function<void()> first) {
  post([this, s, first = std::move(first)] {
    if (first) first();
    close_session_here(s);
  });
}

void Dispatcher::close_session_here(engine::SessionId s) {
  if (s >= sessions_.size() || !sessions_[s].open) return;
  sessions_[s].open = false;
  // Its jobs waiting for an answer fail at the device's next poll, not at their timeout.
  if (sessions_[s].service) sessions_[s].service->close();
  for (engine::RingId r = 0; r < rings_.size(); ++r) {
    if (rings_[r].attached && rings_[r].session == s) {
      cancel_unread(rings_[r]);
      rings_[r] = RingEntry{};
      engine_.close_ring(r);
      std::erase(active_rings_, r);
    }
  }
  engine_.close_session(s, now_ns(), actions_);
  shoot_down(s, 0, 0);  // its ASID may be handed to the next session
  apply(now_ns());
}

Result<engine::RingId> Dispatcher::attach_ring(engine::SessionId s, void* base, uint32_t capacity,
                                               std::shared_ptr<void> keep_alive) {
  if (abi::validate_ring(base, TANDEM_RING_BYTES(capacity)) != Status::ok) {
    return Result<engine::RingId>(Status::invalid_argument, "ring memory is not a formatted ring");
  }
  return with_engine([&](engine::Engine& e) -> Result<engine::RingId> {
    if (!e.session_open(s)) return Result<engine::RingId>(Status::invalid_argument, "no such session");
    const engine::RingId r = e.open_ring(s);
    if (r >= rings_.size()) rings_.resize(r + 1);
    rings_[r] = RingEntry{abi::RingConsumer(base, capacity), s, std::move(keep_alive), true};
    active_rings_.push_back(r);
    return r;
  });
}

// Packets published on a ring that goes away before they were read: each one's record completes with
// CANCELLED, so that nobody waits for ever on a job that will never run.
void Dispatcher::cancel_unread(RingEntry& ring) {
  if (ring.session >= sessions_.size() || !sessions_[ring.session].memory) return;
  AddressSpace& memory = *sessions_[ring.session].memory;
  tandem_packet_t packet;
  bool any = false;
  while (ring.consumer.peek(packet)) {
    ring.consumer.pop();
    any = true;
    if (tandem_completion_t* record = packet_record(packet, memory)) {
      engine_.reject(ring.session, reinterpret_cast<uintptr_t>(record), packet.user_data, Status::cancelled, actions_);
    }
  }
  if (any) {
    apply(now_ns());
    ring.consumer.commit();
  }
}

void Dispatcher::detach_ring(engine::RingId r) {
  with_engine([&](engine::Engine& e) {
    if (r < rings_.size() && rings_[r].attached) {
      cancel_unread(rings_[r]);
      rings_[r] = RingEntry{};
      e.close_ring(r);
      std::erase(active_rings_, r);
    }
    return 0;
  });
}

Status Dispatcher::attach_service(engine::SessionId s, void* base, size_t bytes, uint32_t slots,
                                  std::shared_ptr<void> keep_alive) {
  if (Status v = abi::validate_service_ring(base, bytes, slots); v != Status::ok) return v;
  return with_engine([&](engine::Engine&) {
    if (s >= sessions_.size() || !sessions_[s].open || sessions_[s].service) return Status::invalid_argument;
    sessions_[s].service = std::make_shared<ServiceChannel>(base, slots, std::move(keep_alive));
    any_service_ = true;
    return Status::ok;
  });
}

Status Dispatcher::set_address_mode(engine::SessionId s, uint8_t mode) {
  if (mode >= TANDEM_ADDRESS_MODE_COUNT_) return Status::invalid_argument;
  return with_engine([&](engine::Engine&) {
    if (s >= sessions_.size() || !sessions_[s].open) return Status::invalid_argument;
    sessions_[s].address_mode = mode;
    return Status::ok;
  });
}

void Dispatcher::shoot_down(engine::SessionId session, uint64_t address, uint64_t bytes) {
  for (DeviceEntry& d : devices_) d.device->shoot_down(session, address, bytes);
}

bool Dispatcher::load(engine::SlotId slot, uint16_t function) {
  return with_engine([&](engine::Engine& e) {
    const bool ok = e.load(slot, function, now_ns(), actions_);
    apply(now_ns());
    return ok;
  });
}

bool Dispatcher::preload(engine::SlotId slot, uint16_t function) {
  return with_engine([&](engine::Engine& e) {
    const int64_t now = now_ns();
    if (!e.load(slot, function, now, actions_)) return false;
    actions_.clear();  // the begin_configure we carry out here, without its delay
    const DeviceEntry& d = devices_[slot_device_[slot]];
    d.device->configure(slot - d.first_slot, function);
    e.configure_done(slot, now, actions_);
    apply(now);
    refresh_metrics(function);
    return true;
  });
}

void Dispatcher::set_tracing(bool on, uint32_t ring_records) {
  with_engine([&](engine::Engine& e) {
    trace_.enable(on, e.config().max_jobs, ring_records);
    return 0;
  });
}

Snapshot Dispatcher::snapshot() {
  return with_engine([&](engine::Engine& e) {
    Snapshot s;
    s.now_ns = now_ns();
    for (const DeviceEntry& d : devices_) {
      DeviceView v{d.device->info(), d.first_slot, {}, d.device->activity()};
      for (uint32_t i = 0; i < v.info.slots; ++i) v.health.push_back(d.device->slot_health(i));
      s.devices.push_back(std::move(v));
    }
    if (local_) {
      for (const DeviceEntry& d : devices_) {
        if (d.reaches_local && &d != copy_entry_) s.local.device = d.device->info().name;
      }
      s.local.capacity_bytes = local_->capacity();
      s.local.used_bytes = local_->used();
      s.local.buffers = local_->buffers();
    }
    for (engine::SlotId i = 0; i < e.slot_count(); ++i) s.slots.push_back(e.slot(i));
    for (engine::QueueId q = 0; q < e.queue_count(); ++q) s.queues.push_back(e.queue(q));
    for (uint16_t f = 0; f < engine::kMaxFunctions; ++f) {
      const auto& c = e.counters(f);
      if (c.submitted_jobs || c.demand_requests || refused_[f]) s.functions.emplace_back(f, c);
    }
    for (engine::SessionId i = 0; i < sessions_.size(); ++i) {
      if (!sessions_[i].open) continue;
      ++s.sessions;
      s.session_stats.push_back(sessions_[i].stats);
      s.session_stats.back().in_flight = e.session_jobs(i);
      s.session_stats.back().busy_callers = static_cast<uint32_t>(sessions_[i].busy_callers);
    }
    s.refused = refused_;
    s.rings = static_cast<uint32_t>(active_rings_.size());
    s.jobs_in_flight = e.jobs_in_flight();
    s.stats = stats_;
    for (uint16_t f = 0; f < TANDEM_FN_MAX; ++f) {
      const devices::TlbCounts& t = tlb_[f];
      if (t.hits + t.misses + t.faults > 0) s.tlb_functions.emplace_back(f, t);
    }
    for (engine::SessionId id = 0; id < sessions_.size(); ++id) {
      if (sessions_[id].open) s.tlb_sessions.push_back({id, sessions_[id].address_mode, sessions_[id].tlb});
    }
    for (uint16_t f = 0; f < TANDEM_FN_MAX; ++f) {
      bool any = false;
      for (const AccessUsage& u : usage_[f]) any = any || u.jobs > 0;
      if (any) s.usage.emplace_back(f, usage_[f]);
    }
    return s;
  });
}

// ---------------------------------------------------------------- the loop

void Dispatcher::loop() {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // sub-50us sleeps must not be rounded up
  pthread_setname_np(pthread_self(), "tandem-dispatch");
  if (options_.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(options_.cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // best effort: benchmarks pin both sides
  } else if (pthread_getaffinity_np(pthread_self(), sizeof allowed_cpus_, &allowed_cpus_) != 0) {
    CPU_ZERO(&allowed_cpus_);  // unknown: never step aside
  }
  int64_t last_activity = now_ns();
  monitor_tick(last_activity);
  for (;;) {
    if (control_pending_.load(std::memory_order_acquire)) run_control();  // pairs with post()
    int64_t now = now_ns();
    bool worked = false;
    if (now >= next_tick_) monitor_tick(now);
    if (timers_.size() > 0) {
      timers_.expire(now, [&](uint32_t id) {
        on_timer(id, now);
        worked = true;
      });
      if (worked) apply(now);
    }
    // An answer to a service request is progress even when no job finished: keep spinning while a
    // chain of requests goes on, rather than sleep between its steps.
    const bool answered = any_service_ && service_answers();
    if (collect_devices(now) || answered) {
      apply(now);
      worked = true;
    }
    if (stopping_) {
      if (engine_.jobs_in_flight() == 0) break;  // drained: every accepted job has completed
    } else if (poll_rings()) {
      worked = true;
    }
    if (worked) {
      last_activity = now;
      continue;
    }
    const int64_t next = next_deadline();
    // Spin while recently busy or a job deadline is near; sleeping costs a wake-up of several us.
    // The monitor's tick needs no such precision.
    if (now - last_activity < options_.idle_spin_ns || next - now < 50'000) {
      // Watch only the rings for a few rounds before the next round of housekeeping: a packet is
      // noticed within a few ns instead of a whole loop iteration (clock, timers, monitor).
      // Within 2 us of a deadline look at the clock after every other pause (a pause costs about
      // 10-40 ns), so that a job completes close to its modelled time instead of up to 32 pauses late.
      const int pauses = next - now < 2'000 ? 2 : 32;
      for (int i = 0; i < pauses; ++i) {
        if (any_ring_ready()) {
          // Straight to the rings: the packet's round trip must not wait for the housekeeping.
          if (poll_rings()) last_activity = now;
          break;
        }
        abi::cpu_relax();
      }
      continue;
    }
    sleep_until(std::min(next, next_tick_));
    last_activity = now_ns() - options_.idle_spin_ns + 2'000;  // after a wake-up, spin a little only
  }
  // Drained: close every session so that nothing is left referenced. Packets still unread (behind a
  // barrier that closing cancels) never run: their records are told first, while the sessions'
  // memory is still there.
  for (engine::RingId id : active_rings_) cancel_unread(rings_[id]);
  for (engine::SessionId s = 0; s < sessions_.size(); ++s) {
    if (sessions_[s].open) {
      sessions_[s].open = false;
      if (sessions_[s].service) sessions_[s].service->close();
      engine_.close_session(s, now_ns(), actions_);
    }
  }
  apply(now_ns());
}

bool Dispatcher::poll_rings() {
  bool worked = false;
  const size_t n = active_rings_.size();
  for (size_t k = 0; k < n; ++k) {
    const engine::RingId id = active_rings_[(ring_cursor_ + k) % n];
    RingEntry& ring = rings_[id];
    if (engine_.ring_blocked(id) || !ring.consumer.has_packet()) continue;
    // The clock is read after the packet is seen, so a job never starts before it was submitted
    // (its modelled completion is measured from here).
    const int64_t now = now_ns();
    trace_.batch_seen();
    uint32_t taken = 0;
    tandem_packet_t packet;
    while (taken < options_.batch && !engine_.ring_blocked(id) && ring.consumer.peek(packet)) {
      ring.consumer.pop();
      ++taken;
      handle_packet(ring, id, packet, now);
    }
    if (taken > 0) {
      apply(now);              // completions first: their stores must not queue behind the ring's
      ring.consumer.commit();  // then free the slots, one release of the read index per batch
      worked = true;
    }
  }
  if (n > 0) ring_cursor_ = (ring_cursor_ + 1) % static_cast<uint32_t>(n);
  return worked;
}

bool Dispatcher::any_ring_ready() const {
  for (engine::RingId id : active_rings_) {
    if (rings_[id].consumer.has_packet()) return true;
  }
  if (any_service_ && service_answers()) return true;
  return control_pending_.load(std::memory_order_relaxed);
}

bool Dispatcher::service_answers() const {
  for (const SessionEntry& s : sessions_) {
    if (s.service && s.service->producer().has_answers()) return true;
  }
  return false;
}

void Dispatcher::handle_packet(RingEntry& ring, engine::RingId id, const tandem_packet_t& packet, int64_t now) {
  ++stats_.packets;
  Decoded& d = decoded_;
  SessionEntry& session = sessions_[ring.session];
  decode_packet(packet, *session.memory, local_.get(), ring.session, id, d, session.address_mode);
  const int64_t decoded = trace_.stamp();
  switch (d.kind) {
    case Decoded::Kind::drop:
      ++stats_.dropped;
      return;
    case Decoded::Kind::reject:
      if (d.status == Status::translation_fault) ++stats_.translation_faults;
      engine_.reject(ring.session, reinterpret_cast<uintptr_t>(d.record), d.job.tag, d.status, actions_);
      if (abi::header_type(packet.header) == TANDEM_PACKET_DISPATCH) {
        const uint16_t f = abi::header_function(packet.header);
        if (f < TANDEM_FN_MAX) ++refused_[f];
        ++sessions_[ring.session].stats.refused;
        trace_.refused(ring.session, f, d.job.tag, d.status, decoded);
      }
      return;
    case Decoded::Kind::barrier:
      engine_.submit_barrier(d.barrier, now, actions_);
      return;
    case Decoded::Kind::cancel:
      engine_.cancel(ring.session, d.cancel_target, reinterpret_cast<uintptr_t>(d.record), d.job.tag, actions_);
      return;
    case Decoded::Kind::dispatch: {
      // Store the call before any action runs: submit() may already have started the job.
      const size_t before = actions_.size();
      const engine::JobId j = engine_.submit(d.job, now, actions_);
      SessionStats& counted = sessions_[ring.session].stats;
      // Refused (a demand-only packet is no job): its completion is the last action.
      if (j == engine::kNone && actions_.size() > before && (d.job.flags & TANDEM_FLAG_DEMAND_ONLY) == 0) {
        ++refused_[d.job.function];
        ++counted.refused;
        trace_.refused(ring.session, d.job.function, d.job.tag, actions_.back().status, decoded);
      }
      if (j != engine::kNone) {
        ++counted.jobs;
        counted.bytes_in += d.access.bytes_in;
        counted.bytes_out += d.access.bytes_out;
        trace_.accepted(j, ring.session, d.job.function, d.job.tag, d.access, d.job.workload, decoded);
        Pending& p = pending_[j];
        p.job.call.copy_from(d.call);
        p.job.access = d.access;
        p.job.asid = ring.session;
        p.job.address_mode = session.address_mode;
        p.job.faulted_pages = d.faulted_pages;
        p.job.args_address = d.args_address;
        p.job.args_bytes = d.args_bytes;
        p.session = ring.session;
        const funcs::FunctionInfo* fn = funcs::find_function(d.call.function);
        if (fn != nullptr && fn->follows_pointers) {
          p.port = session.memory->open_port(session.address_mode);
          p.job.call.memory = p.port.get();
        }
        p.service = fn != nullptr && fn->uses_service ? session.service : nullptr;
        p.job.service = p.service.get();
        p.remote_count = d.remote_count;
        if (d.remote_count > 0) {
          p.remote = d.remote;
          p.process = sessions_[ring.session].memory->remote();
        }
      }
      return;
    }
  }
}

void Dispatcher::apply(int64_t now) {
  // Jobs a device finishes at once (a no-op on the emulated fabric) complete in this same pass: the
  // actions of their completions are appended and carried out below.
  for (size_t i = 0; i < actions_.size() || (collect_devices(now) && i < actions_.size()); ++i) {
    const Action a = actions_[i];  // a copy: the engine may append while we work
    switch (a.kind) {
      case ActionKind::start_job: {
        Pending& p = pending_[a.job];
        p.job.token = a.job;
        p.job.start_ns = now;
        p.slot = a.slot;
        ++stats_.jobs_started;
        trace_.started(a.job, a.slot);
        if (p.remote_count == 0) {
          submit_to_device(a.job, now);
          break;
        }
        start_gather(a.job, now);  // scatter-gather from the client's process: stage its buffers first
        break;
      }
      case ActionKind::complete: {
        if (a.status != Status::ok) ++stats_.rejected;
        // Stamped before the record is written: a client may see the completion at once, and its own
        // "observed" stamp must not come before ours.
        trace_.completing(a.job, a.status);
        if (a.completion != 0) {
          const bool ran = a.job != engine::kNone && a.slot != engine::kNone;
          complete_record(reinterpret_cast<tandem_completion_t*>(static_cast<uintptr_t>(a.completion)), a.status,
                          a.value, ran ? pending_[a.job].device_ns : 0, ran ? a.slot : UINT32_MAX, now);
          ++stats_.completions;
          if (a.job != engine::kNone) note_drained(a.function);
        }
        trace_.completed(a.job);
        // An event-driven policy loads what was just asked for, once the client has its answer (the
        // begin_configure it appends is carried out further down this loop).
        if (a.status == Status::not_accelerated && policy_reacts_) {
          policy_->on_demand(engine_, monitor_, a.function, now, actions_);
        }
        break;
      }
      case ActionKind::begin_configure: {
        ++stats_.reconfigurations;
        const DeviceEntry& d = devices_[slot_device_[a.slot]];
        d.device->configure(a.slot - d.first_slot, a.function);
        if (a.until <= now) {
          engine_.configure_done(a.slot, now, actions_);
        } else {
          timers_.schedule(a.slot, a.until);
        }
        refresh_metrics(a.function);
        break;
      }
      case ActionKind::session_drained:
        if (local_) local_->release_session(a.session);
        if (a.session < sessions_.size()) {
          auto done = std::move(sessions_[a.session].on_drained);
          sessions_[a.session] = SessionEntry{};
          if (done) done();
        }
        break;
    }
  }
  actions_.clear();
  refresh_drained();
}

// A function whose queue and slots just emptied shows it in the metrics page at once rather than at
// the next period: otherwise a partitioner reads the D_q of a job that finished long ago.
void Dispatcher::note_drained(engine::FunctionId f) {
  for (uint32_t i = 0; i < drained_count_; ++i) {
    if (drained_[i] == f) return;
  }
  if (drained_count_ < drained_.size()) drained_[drained_count_++] = f;  // overflow: the period catches it
}

void Dispatcher::refresh_drained() {
  for (uint32_t i = 0; i < drained_count_; ++i) {
    const engine::FunctionId f = drained_[i];
    const engine::QueueId q = engine_.route(f);
    if (engine_.running_jobs(f) != 0 || (q != engine::kNone && engine_.queue(q).jobs != 0)) continue;
    const abi::FunctionMetrics before = monitor_.metrics(f);
    monitor_.refresh(engine_, f);
    // Rewrite the entry only if a figure changed: every write costs each reader a cache miss.
    if (monitor_.metrics(f) != before) publish(f);
  }
  drained_count_ = 0;
}

// Tells the engine which of d's slots are in service (Device::slot_in_service), so that no job starts on
// one out of service while another slot serves its function. True if any changed.
bool Dispatcher::follow_slot_health(DeviceEntry& d, int64_t now) {
  bool changed = false;
  uint32_t out = 0;
  for (uint32_t i = 0; i < d.device->info().slots; ++i) {
    const engine::SlotId slot = d.first_slot + i;
    const bool in_service = d.device->slot_in_service(i);
    out += in_service ? 0 : 1;
    if (engine_.in_service(slot) == in_service) continue;
    engine_.set_in_service(slot, in_service, now, actions_);
    if (engine_.slot(slot).state != engine::SlotState::empty) refresh_metrics(engine_.slot(slot).function);
    changed = true;
  }
  d.out_of_service = out;
  return changed;
}

void Dispatcher::on_timer(uint32_t slot, int64_t now) {
  engine_.configure_done(slot, now, actions_);
  refresh_metrics(engine_.slot(slot).function);  // a new replica is visible at once, not after P
}

// Hands the engine every job the devices finished by `now`. True if there was any.
bool Dispatcher::collect_devices(int64_t now) {
  bool any = collect_moves(now);
  for (DeviceEntry& d : devices_) {
    if (d.in_flight == 0 && d.out_of_service == 0) continue;  // the idle loop costs one compare per device
    finished_.clear();
    d.device->poll(now, finished_);
    d.in_flight -= static_cast<uint32_t>(std::min<size_t>(finished_.size(), d.in_flight));
    // A failed job may have taken its slot out of service; a slot out of service may be back.
    const bool failures = std::any_of(finished_.begin(), finished_.end(), [](const auto& c) { return c.status != Status::ok; });
    if ((failures || d.out_of_service > 0) && follow_slot_health(d, now)) any = true;
    for (const devices::DeviceCompletion& c : finished_) {
      const engine::SlotId slot = d.first_slot + c.slot;
      const engine::JobId j = static_cast<engine::JobId>(c.token);
      if (engine_.slot_job(slot) != j) continue;  // not the slot's job: a device bug, ignored
      Pending& p = pending_[j];
      p.device_ns = c.device_ns;
      trace_.device_done(j, c.device_ns);
      if (c.not_before > 0 && now - c.not_before > stats_.max_lateness_ns) stats_.max_lateness_ns = now - c.not_before;
      // What the job moved, by method, and its energy on the device.
      const devices::JobAccess& a = p.job.access;
      AccessUsage& u = usage_[p.job.call.function][a.method < TANDEM_ACCESS_COUNT_ ? a.method : 0];
      const double device_s = static_cast<double>(c.device_ns) * 1e-9;
      ++u.jobs;
      u.host_bytes += a.host_bytes();
      u.local_bytes += a.local_bytes;
      u.device_s += device_s;
      u.energy_j += options_.energy.job_j(device_s, a.host_bytes(), a.local_bytes, &d == copy_entry_);
      period_bytes_ += a.host_bytes() + a.local_bytes;
      tlb_[p.job.call.function] += c.tlb;
      if (p.session < sessions_.size()) sessions_[p.session].tlb += c.tlb;
      device_finished(j, c.status, c.value, now);
      any = true;
    }
  }
  return any;
}

// Stages a scatter-gather job's client buffers on the mover's thread; the device gets it once gathered.
void Dispatcher::start_gather(engine::JobId j, int64_t now) {
  Pending& p = pending_[j];
  std::array<uint64_t, funcs::kMaxBuffers> offsets{};
  // The block, and room to start it on a line: the layout's offsets count from a line-aligned base.
  const uint64_t bytes = staging_layout({p.remote.data(), p.remote_count}, offsets) + kStagingLine - 1;
  if (staging_bytes_ + bytes > kMaxStagingBytes) return device_finished(j, Status::no_memory, 0, now);
  p.staging.reset(new (std::nothrow) char[bytes]);
  if (!p.staging) return device_finished(j, Status::no_memory, 0, now);
  staging_bytes_ += bytes;
  p.staging_size = bytes;
  const uintptr_t raw = reinterpret_cast<uintptr_t>(p.staging.get());
  char* base = p.staging.get() + (kStagingLine - raw % kStagingLine) % kStagingLine;
  MoveTask task;
  task.job = j;
  task.gather = true;
  task.process = p.process;
  task.count = p.remote_count;
  for (uint32_t i = 0; i < p.remote_count; ++i) {
    p.staged[i] = base + offsets[i];
    task.buffers[i] = p.remote[i];
    task.staging[i] = p.staged[i];
    p.job.call.buffers[p.remote[i].index] = p.staged[i];
  }
  mover_.post(task);
}

void Dispatcher::submit_to_device(engine::JobId j, int64_t now) {
  Pending& p = pending_[j];
  DeviceEntry& d = devices_[slot_device_[p.slot]];
  // Device-local buffers live in one device's memory: its slots and its copy engines reach them.
  if (p.job.access.local_bytes > 0 && !d.reaches_local) {
    device_finished(j, Status::access_unsupported, 0, now);
    return;
  }
  ++d.in_flight;
  d.device->submit(p.slot - d.first_slot, p.job);
}

// The device is done with job j: scatter its output back to the client first if it was gathered.
void Dispatcher::device_finished(engine::JobId j, Status status, int64_t value, int64_t now) {
  Pending& p = pending_[j];
  bool scatter = false;
  for (uint32_t i = 0; i < p.remote_count; ++i) scatter = scatter || p.remote[i].write;
  const funcs::FunctionInfo* fn = funcs::find_function(p.job.call.function);
  if (fn != nullptr && !funcs::wrote_outputs(*fn, value)) scatter = false;  // nothing to scatter: it wrote nothing
  if (status == Status::ok && scatter && p.staging) {
    p.status = status;
    p.value = value;
    MoveTask task;
    task.job = j;
    task.gather = false;
    task.process = p.process;
    task.count = p.remote_count;
    for (uint32_t i = 0; i < p.remote_count; ++i) {
      task.buffers[i] = p.remote[i];
      task.staging[i] = p.staged[i];  // where the gather put it and the device wrote it
    }
    mover_.post(task);
    return;
  }
  if (p.staging) {
    staging_bytes_ -= p.staging_size;
    p.staging_size = 0;
    p.staging.reset();
  }
  p.remote_count = 0;
  p.process.reset();
  p.port.reset();
  p.job.call.memory = nullptr;
  p.service.reset();
  p.job.service = nullptr;
  engine_.job_finished(p.slot, status, value, now, actions_);
}

// Hands on the data moves that finished: a gathered job goes to its device, a scattered one completes.
bool Dispatcher::collect_moves(int64_t now) {
  if (!mover_.busy()) return false;
  moved_.clear();
  mover_.take(moved_);
  for (const MoveResult& m : moved_) {
    Pending& p = pending_[m.job];
    if (m.gather) {
      if (m.status == Status::ok) {
        trace_.mark(m.job, abi::trace::kTransferIn);
        submit_to_device(m.job, now);
      } else {
        // A page PHASE/V could not fault in is not the session's memory.
        const bool faulted = p.job.faulted_pages > 0 && m.status == Status::buffer_unmapped;
        device_finished(m.job, faulted ? Status::translation_fault : m.status, 0, now);
      }
    } else {
      trace_.mark(m.job, abi::trace::kTransferOut);
      const Status s = m.status == Status::ok ? p.status : m.status;
      const int64_t v = p.value;
      p.remote_count = 0;  // scattered: nothing more to move
      device_finished(m.job, s, v, now);
    }
  }
  return !moved_.empty();
}

Result<uint64_t> Dispatcher::alloc_local(engine::SessionId session, uint64_t bytes) {
  return with_engine([&](engine::Engine&) -> Result<uint64_t> {
    if (!local_) return Result<uint64_t>(Status::access_unsupported, "no device of this runtime has local memory");
    return local_->alloc(session, bytes);
  });
}

Status Dispatcher::free_local(engine::SessionId session, uint64_t address) {
  return with_engine([&](engine::Engine&) { return local_ ? local_->free(session, address) : Status::invalid_argument; });
}

int64_t Dispatcher::next_deadline() const {
  int64_t next = timers_.next_deadline();
  for (const DeviceEntry& d : devices_) {
    if (d.in_flight > 0 || d.out_of_service > 0) next = std::min(next, d.device->next_deadline());
  }
  return next;
}

void Dispatcher::refresh_metrics(engine::FunctionId f) {
  monitor_.refresh(engine_, f);
  publish(f);
}

void Dispatcher::publish(engine::FunctionId f) { abi::write_metrics(*metrics_page_, f, monitor_.metrics(f)); }

void Dispatcher::monitor_tick(int64_t now) {
  if (options_.measured_total_bandwidth > 0) {  // Eq 5.1's BW: what the devices left of the memory bandwidth
    const double period_s = std::max(1e-9, static_cast<double>(now - monitor_.period_start()) * 1e-9);
    const double used = static_cast<double>(period_bytes_) / period_s;
    monitor_.set_available_bandwidth(std::max(0.0, options_.measured_total_bandwidth - used));
  }
  period_bytes_ = 0;
  monitor_.sample(engine_, now);
  // Publish the sample before the policy acts: its actions refresh (and so overwrite changed()) the
  // functions they touch.
  for (engine::FunctionId f : monitor_.changed()) publish(f);
  if (policy_) {
    policy_->on_period(engine_, monitor_, now, actions_);
    apply(now);
  }
  for (engine::SessionId s = 0; s < sessions_.size(); ++s) {
    if (sessions_[s].open && sessions_[s].memory && engine_.session_jobs(s) == 0) sessions_[s].memory->quiescent();
  }
  publish_callers();
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  const int64_t cpu_ns = static_cast<int64_t>(cpu.tv_sec) * 1'000'000'000 + cpu.tv_nsec;
  const double engine_cores = tick_wall_ns_ > 0 && now > tick_wall_ns_
                                  ? std::min(1.0, static_cast<double>(cpu_ns - tick_cpu_ns_) / static_cast<double>(now - tick_wall_ns_))
                                  : 0.0;
  tick_cpu_ns_ = cpu_ns;
  tick_wall_ns_ = now;
  abi::write_page_header(*metrics_page_, static_cast<uint64_t>(now), monitor_.config().available_bandwidth, engine_cores);
  next_tick_ = now + monitor_.config().period_ns;
}

void Dispatcher::publish_callers() {
  // A client's words are its own to scribble on. Each session's sum is bounded at 4 callers per core:
  // beyond that a call has no core to spare at any count, so an honest count loses nothing, and a
  // scribbled one makes the others' CPU share look at most that crowded (their calls lean to the
  // accelerators), never breaks the sum.
  static const uint64_t max_per_session = 4 * uint64_t{std::max(1u, std::thread::hardware_concurrency())};
  for (SessionEntry& s : sessions_) s.busy_callers = 0;
  for (engine::RingId id : active_rings_) {
    SessionEntry& s = sessions_[rings_[id].session];
    s.busy_callers = std::min<uint64_t>(s.busy_callers + rings_[id].consumer.published_callers(), max_per_session);
  }
  uint64_t caller_cpus = 0;
  for (engine::RingId id : active_rings_) caller_cpus |= rings_[id].consumer.take_caller_cpus();
  step_off_caller_cpus(caller_cpus);
  uint64_t total = 0;
  for (const SessionEntry& s : sessions_) total += s.busy_callers;
  for (engine::RingId id : active_rings_) {
    const uint64_t others = total - sessions_[rings_[id].session].busy_callers;
    rings_[id].consumer.set_other_callers(static_cast<uint32_t>(std::min<uint64_t>(others, UINT32_MAX)));
  }
}

// A KVM guest's scheduler wakes a thread on its waker's vCPU rather than on an idle one (a halted
// vCPU looks preempted), so the dispatcher and a caller that wake each other settle on one vCPU while
// another idles: at 1 thread on 2 vCPUs, 60 hw calls of 1 MiB accumulate took 8-20 ms there against
// 2.7 ms apart. Once a period in which calls began, the dispatcher moves off the CPUs they began on,
// where it may use another; with callers on every CPU it takes them all back, and so it does after
// kCallerlessPeriods without a call (a client of the low-level API marks nothing). (Yielding the CPU
// while idle on a caller's CPU was tried: the caller it yielded to was often spinning for the very job
// the dispatcher had to complete, and auto's `work` calls at one thread went to software.)
// A pinned dispatcher ([dispatcher] cpu), or one told not to ([dispatcher] avoid_caller_cpus), stays.
void Dispatcher::step_off_caller_cpus(uint64_t caller_cpus) {
  constexpr uint32_t kCallerlessPeriods = 100;
  if (options_.cpu >= 0 || !options_.avoid_caller_cpus || CPU_COUNT(&allowed_cpus_) == 0) return;
  if (caller_cpus == 0) {
    if (avoided_cpus_ == 0 || ++periods_without_callers_ < kCallerlessPeriods) return;
  } else {
    periods_without_callers_ = 0;
  }
  const auto is_caller_cpu = [&](int cpu) { return ((caller_cpus >> (static_cast<unsigned>(cpu) % 64)) & 1) != 0; };
  cpu_set_t elsewhere;
  CPU_ZERO(&elsewhere);
  uint64_t avoid = 0;  // the bits of the CPUs left out, so that bits of CPUs it may not use change nothing
  const int allowed = CPU_COUNT(&allowed_cpus_);
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE && seen < allowed; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed_cpus_)) continue;
    ++seen;
    if (is_caller_cpu(cpu)) {
      avoid |= uint64_t{1} << (static_cast<unsigned>(cpu) % 64);
    } else {
      CPU_SET(cpu, &elsewhere);
    }
  }
  if (CPU_COUNT(&elsewhere) == 0) avoid = 0;  // callers everywhere: all of them
  if (avoid == avoided_cpus_) return;
  if (pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t), avoid != 0 ? &elsewhere : &allowed_cpus_) == 0) {
    avoided_cpus_ = avoid;
  }
}

void Dispatcher::sleep_until(int64_t deadline) {
  abi::FutexWaitTarget targets[FUTEX_WAITV_MAX];
  size_t n = 0;
  targets[n++] = {&control_word_, abi::load_acquire(control_word_)};
  // The devices' words are loaded before their inboxes are looked at again below: a completion
  // posted after this load changes its word, and futex_waitv returns at once.
  for (const DeviceEntry& d : devices_) {
    if (const uint32_t* word = d.device->wake_word()) targets[n++] = {word, abi::load_acquire(*word)};
  }
  targets[n++] = {mover_.wake_word(), abi::load_acquire(*mover_.wake_word())};
  // Service rings with requests out: a client's answer wakes us (its k_answered) like a doorbell.
  for (SessionEntry& s : sessions_) {
    if (s.service && !s.service->closed() && s.service->producer().outstanding() > 0 && n < FUTEX_WAITV_MAX - 1) {
      const uint32_t bell = s.service->producer().prepare_sleep();
      targets[n++] = {s.service->producer().answer_word(), bell};
    }
  }
  const bool all_rings_fit = active_rings_.size() + n < FUTEX_WAITV_MAX;
  for (engine::RingId id : active_rings_) {
    uint32_t bell = rings_[id].consumer.prepare_sleep();
    if (n < FUTEX_WAITV_MAX) targets[n++] = {rings_[id].consumer.doorbell_word(), bell};
  }
  // Look again after announcing the sleep: a producer that published before seeing NEED_WAKEUP
  // is caught here; one that publishes after will ring the doorbell.
  bool ready = control_pending_.load(std::memory_order_acquire);
  for (engine::RingId id : active_rings_) {
    ready = ready || (!engine_.ring_blocked(id) && rings_[id].consumer.has_packet());
  }
  if (!ready && collect_devices(now_ns())) {  // a device finished since the loop last looked
    apply(now_ns());
    ready = true;
  }
  if (!ready) {
    ++stats_.sleeps;
    // More rings than futex_waitv takes: sleep briefly and poll, rather than miss a doorbell.
    if (!all_rings_fit) deadline = std::min(deadline, now_ns() + 200'000);
    abi::futex_waitv({targets, n}, deadline == INT64_MAX ? -1 : deadline);
  }
  for (engine::RingId id : active_rings_) rings_[id].consumer.wake_up();
  for (SessionEntry& s : sessions_) {
    if (s.service) s.service->producer().wake_up();
  }
}

}  // namespace tandem::rt
