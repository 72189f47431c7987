#include "rt/trace.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

#include "base/clock.hpp"
#include "rt/dispatcher.hpp"

namespace tandem::rt {

using abi::trace::Record;

abi::trace::Clock trace_clock() {
  static const abi::trace::Clock clock = [] {
#if defined(__x86_64__)
    std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string source;
    if (in >> source && source == "tsc") return abi::trace::Clock::tsc;
#endif
    return abi::trace::Clock::monotonic;
  }();
  return clock;
}

OwnedArea::OwnedArea(uint32_t rings, uint32_t capacity, abi::trace::Clock clock)
    : memory_(std::make_unique_for_overwrite<std::byte[]>(abi::trace::area_bytes(rings, capacity))),
      view_(abi::trace::format_area(memory_.get(), rings, capacity, clock)) {}

// ---------------------------------------------------------------- the dispatcher's records

void DispatchTracer::enable(bool on, uint32_t max_jobs, uint32_t capacity) {
  if (!area_) {
    clock_ = trace_clock();
    area_ = std::make_unique<OwnedArea>(1, capacity, clock_);
    writer_ = abi::trace::RingWriter(area_->view(), 0);
    jobs_.resize(max_jobs);
  }
  if (on && !on_) {
    for (Record& r : jobs_) r.kind = 0;  // jobs begun under an earlier run are not this run's
  }
  on_ = on;
  if (area_) abi::store_release(area_->view().header->k_enabled, on ? 1u : 0u);
}

void DispatchTracer::mark_now(engine::JobId job, abi::trace::JobPhase phase) { jobs_[job].t[phase] = tick(); }

void DispatchTracer::begin_job(engine::JobId job, engine::SessionId session, uint16_t function, uint64_t tag,
                               const devices::JobAccess& access, uint64_t workload, int64_t decoded) {
  Record& r = jobs_[job];
  r = Record{};
  r.kind = static_cast<uint16_t>(abi::trace::Kind::job);
  r.function = function;
  r.method = access.method;
  r.session = session;
  r.id = tag;
  r.bytes_in = access.bytes_in;
  r.bytes_out = access.bytes_out;
  r.count = static_cast<uint32_t>(std::min<uint64_t>(workload, UINT32_MAX));
  r.t[abi::trace::kVisible] = batch_ticks_;
  r.t[abi::trace::kDecoded] = decoded;
  r.t[abi::trace::kQueued] = tick();
}

void DispatchTracer::write_refused(engine::SessionId session, uint16_t function, uint64_t tag, Status status,
                                   int64_t decoded) {
  Record r;
  r.kind = static_cast<uint16_t>(abi::trace::Kind::refused);
  r.function = function;
  r.status = static_cast<uint8_t>(to_wire(status));
  r.session = session;
  r.id = tag;
  r.t[abi::trace::kVisible] = batch_ticks_;
  r.t[abi::trace::kDecoded] = decoded;
  (void)writer_.write(r);
}

void DispatchTracer::stamp_completion(engine::JobId job, Status status) {
  Record& r = jobs_[job];
  if (r.kind == 0) return;  // accepted before tracing was switched on
  r.t[abi::trace::kCompleted] = tick();
  r.status = static_cast<uint8_t>(to_wire(status));
}

void DispatchTracer::finish_job(engine::JobId job) {
  Record& r = jobs_[job];
  if (r.kind == 0 || r.t[abi::trace::kCompleted] == 0) return;  // not traced, or not stamped
  (void)writer_.write(r);
  r.kind = 0;
}

// ---------------------------------------------------------------- the collector

TraceCollector::TraceCollector(const TraceSettings& settings, abi::trace::Clock clock)
    : settings_(settings), clock_(clock) {
  ticks0_ = abi::trace::read_ticks(clock_);
  ns0_ = now_ns();
}

TraceCollector::~TraceCollector() { stop(); }

void TraceCollector::add_session(uint32_t session, uint32_t pid, const abi::trace::AreaView& area,
                                 std::shared_ptr<void> keep) {
  std::lock_guard lock(mutex_);
  add_source_locked(area, std::move(keep), session);
  session_pids_[session] = pid;
}

void TraceCollector::add_area(const abi::trace::AreaView& area, std::shared_ptr<void> keep) {
  std::lock_guard lock(mutex_);
  add_source_locked(area, std::move(keep), std::nullopt);
}

void TraceCollector::add_source_locked(const abi::trace::AreaView& area, std::shared_ptr<void> keep,
                                       std::optional<uint32_t> session) {
  Source s;
  s.area = area;
  s.keep = std::move(keep);
  s.tails.assign(area.rings, 0);
  s.dropped_seen.assign(area.rings, 0);
  if (session) {
    s.session = *session;
    s.client = true;
  }
  sources_.push_back(std::move(s));
  if (running_) abi::store_release(area.header->k_enabled, 1u);
}

void TraceCollector::remove_session(uint32_t session) {
  std::lock_guard lock(mutex_);
  for (auto it = sources_.begin(); it != sources_.end(); ++it) {
    if (it->client && it->session == session) {
      abi::store_release(it->area.header->k_enabled, 0u);
      drain_source(*it);
      sources_.erase(it);
      return;
    }
  }
}

bool TraceCollector::has_session(uint32_t session) const {
  std::lock_guard lock(mutex_);
  return std::any_of(sources_.begin(), sources_.end(),
                     [&](const Source& s) { return s.client && s.session == session; });
}

void TraceCollector::set_writers(bool on) {
  for (Source& s : sources_) abi::store_release(s.area.header->k_enabled, on ? 1u : 0u);
}

void TraceCollector::start() {
  // The dispatcher's ring exists (switched off) before anything is drained or switched on. Outside
  // our lock: the dispatcher waits for nothing but its own loop.
  if (dispatcher_ != nullptr) dispatcher_->set_tracing(false, settings_.dispatcher_records);
  {
    std::lock_guard lock(mutex_);
    if (running_) return;
    if (dispatcher_ != nullptr && !dispatcher_added_) {
      add_source_locked(dispatcher_->trace_area(), nullptr, std::nullopt);  // switched on with the rest below
      dispatcher_added_ = true;
    }
    // A new trace: whatever the rings still hold from before is not part of it.
    counters_.enabled = false;
    drain_locked();
    store_.clear();
    store_.reserve(static_cast<size_t>(settings_.max_records));
    counters_ = TraceCounters{};
    counters_.enabled = true;
    counters_.started_ns = now_ns();
    for (auto it = session_pids_.begin(); it != session_pids_.end();) {  // forget sessions that are gone
      const bool live = std::any_of(sources_.begin(), sources_.end(),
                                    [&](const Source& s) { return s.client && s.session == it->first; });
      it = live ? std::next(it) : session_pids_.erase(it);
    }
    set_writers(true);
    running_ = true;
    thread_ = std::thread([this] { run(); });
  }
  if (dispatcher_ != nullptr) dispatcher_->set_tracing(true, settings_.dispatcher_records);
}

void TraceCollector::stop() {
  std::thread joining;
  {
    std::lock_guard lock(mutex_);
    if (!running_) return;
    running_ = false;
    set_writers(false);
    joining = std::move(thread_);
  }
  wake_.notify_all();
  joining.join();
  if (dispatcher_ != nullptr) dispatcher_->set_tracing(false, settings_.dispatcher_records);
  std::lock_guard lock(mutex_);
  drain_locked();  // what the writers wrote before they saw the switch
  counters_.enabled = false;
}

bool TraceCollector::enabled() const {
  std::lock_guard lock(mutex_);
  return running_;
}

void TraceCollector::run() {
  pthread_setname_np(pthread_self(), "tandem-trace");
  std::unique_lock lock(mutex_);
  while (running_) {
    wake_.wait_for(lock, std::chrono::nanoseconds(settings_.drain_period_ns), [this] { return !running_; });
    drain_locked();
  }
}

void TraceCollector::drain() {
  std::lock_guard lock(mutex_);
  drain_locked();
}

void TraceCollector::drain_locked() {
  for (Source& s : sources_) drain_source(s);
}

void TraceCollector::drain_source(Source& s) {
  if (scratch_.size() < s.area.capacity) scratch_.resize(s.area.capacity);
  for (uint32_t r = 0; r < s.area.rings; ++r) {
    abi::trace::DrainLoss loss;
    const uint64_t n = abi::trace::drain_ring(s.area, r, s.tails[r], scratch_.data(), scratch_.size(), loss);
    counters_.dropped_corrupt += loss.corrupt;
    counters_.dropped_store += loss.no_room;
    const uint64_t dropped = abi::load_relaxed(s.area.ring(r).k_dropped);
    counters_.dropped_full += dropped - s.dropped_seen[r];
    s.dropped_seen[r] = dropped;
    for (uint64_t i = 0; i < n; ++i) {
      Record& rec = scratch_[i];
      if (s.client) {
        // Only what a client may say: its calls and its jobs; the session is its connection's.
        const auto kind = static_cast<abi::trace::Kind>(rec.kind);
        if (kind != abi::trace::Kind::call && kind != abi::trace::Kind::client_job) {
          ++counters_.dropped_corrupt;
          continue;
        }
        rec.session = s.session;
        rec.slot = r;
      }
      if (!counters_.enabled) continue;  // drained before a start: not this trace's
      ++counters_.collected;
      if (store_.size() >= settings_.max_records) {
        ++counters_.dropped_store;
        continue;
      }
      store_.push_back(rec);
    }
  }
  const uint64_t unclaimed = abi::load_relaxed(s.area.header->k_unclaimed);
  counters_.dropped_unclaimed += unclaimed - s.unclaimed_seen;
  s.unclaimed_seen = unclaimed;
}

int64_t TraceCollector::to_ns(int64_t ticks) const {
  if (ticks == 0 || clock_ == abi::trace::Clock::monotonic) return ticks;
  return ns0_ + static_cast<int64_t>(static_cast<double>(ticks - ticks0_) * ns_per_tick_);
}

TraceCounters TraceCollector::counters() {
  std::lock_guard lock(mutex_);
  drain_locked();
  TraceCounters c = counters_;
  c.enabled = running_;
  c.records = store_.size();
  c.sources = static_cast<uint32_t>(sources_.size());
  return c;
}

TraceDump TraceCollector::dump(bool clear) {
  std::lock_guard lock(mutex_);
  drain_locked();
  TraceDump d;
  d.taken_ns = now_ns();
  // The ticks -> ns rate over everything since the collector was made: the longer the baseline, the
  // better (the TSC and CLOCK_MONOTONIC differ by a rate only).
  if (clock_ == abi::trace::Clock::tsc) {
    const int64_t ticks1 = abi::trace::read_ticks(clock_);
    const int64_t ns1 = now_ns();
    if (ticks1 > ticks0_ && ns1 > ns0_) ns_per_tick_ = static_cast<double>(ns1 - ns0_) / static_cast<double>(ticks1 - ticks0_);
  }
  d.counters = counters_;
  d.counters.enabled = running_;
  d.counters.records = store_.size();
  d.counters.sources = static_cast<uint32_t>(sources_.size());
  for (const auto& [session, pid] : session_pids_) d.sessions.push_back({session, pid});
  d.records = store_;
  for (Record& r : d.records) {
    size_t phases = abi::trace::kJobPhases;
    if (r.kind == static_cast<uint16_t>(abi::trace::Kind::call)) phases = abi::trace::kCallPhases;
    if (r.kind == static_cast<uint16_t>(abi::trace::Kind::client_job)) phases = abi::trace::kClientJobPhases;
    for (size_t p = 0; p < phases; ++p) r.t[p] = to_ns(r.t[p]);
  }
  if (clear) store_.clear();
  return d;
}

// ---------------------------------------------------------------- the dump's bytes

Result<TraceFile> parse_dump(std::span<const std::byte> bytes) {
  namespace tr = abi::trace;
  using R = Result<TraceFile>;
  TraceFile f;
  if (bytes.size() < sizeof f.header) return R(Status::protocol_error, "trace dump: shorter than its header");
  std::memcpy(&f.header, bytes.data(), sizeof f.header);
  const tr::DumpHeader& h = f.header;
  if (h.magic != tr::kDumpMagic || h.version != tr::kVersion) {
    return R(Status::protocol_error, "trace dump: wrong magic or version");
  }
  if (h.session_count > (1u << 20) || h.slot_count > (1u << 16) || h.record_count > (uint64_t{1} << 32) ||
      tr::dump_bytes(h.record_count, h.session_count, h.slot_count) > bytes.size()) {
    return R(Status::protocol_error, "trace dump: its counts do not fit its size");
  }
  const std::byte* p = bytes.data() + sizeof h;
  const auto take = [&p](void* out, size_t n) {
    if (n > 0) std::memcpy(out, p, n);
    p += n;
  };
  f.sessions.resize(h.session_count);
  take(f.sessions.data(), f.sessions.size() * sizeof(tr::DumpSession));
  f.slots.resize(h.slot_count);
  take(f.slots.data(), f.slots.size() * sizeof(tr::DumpSlot));
  f.records.resize(static_cast<size_t>(h.record_count));
  take(f.records.data(), f.records.size() * sizeof(Record));
  return f;
}

size_t dump_size(const TraceFile& file) {
  return abi::trace::dump_bytes(file.records.size(), static_cast<uint32_t>(file.sessions.size()),
                                static_cast<uint32_t>(file.slots.size()));
}

void write_dump(const TraceFile& file, std::span<std::byte> out) {
  namespace tr = abi::trace;
  tr::DumpHeader h = file.header;
  h.magic = tr::kDumpMagic;
  h.version = tr::kVersion;
  h.session_count = static_cast<uint32_t>(file.sessions.size());
  h.slot_count = static_cast<uint32_t>(file.slots.size());
  h.record_count = file.records.size();
  if (out.size() < dump_size(file)) return;
  std::byte* p = out.data();
  const auto put = [&p](const void* data, size_t n) {
    if (n > 0) std::memcpy(p, data, n);
    p += n;
  };
  put(&h, sizeof h);
  put(file.sessions.data(), file.sessions.size() * sizeof(tr::DumpSession));
  put(file.slots.data(), file.slots.size() * sizeof(tr::DumpSlot));
  put(file.records.data(), file.records.size() * sizeof(Record));
}

}  // namespace tandem::rt
