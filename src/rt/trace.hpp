// Tracing in the real runtime (docs/tracing.md): the dispatcher's per-job records and the collector
// that gathers every ring into one bounded store.
//
// DispatchTracer lives in the dispatcher and runs on its thread. While tracing is off every record
// point is one predictable branch on a member; while it is on, a point takes one timestamp (the TSC
// where the kernel's clocksource is the TSC, else CLOCK_MONOTONIC) into the job's record, which is
// written to the dispatcher's own ring when its completion record is written: no lock, no allocation
// and no system call on the job path.
//
// TraceCollector owns the rings' reader side: a thread drains every ring (the dispatcher's, and one
// per client thread of every tandemd session) every `drain_period` into a store of at most
// `max_records` records; a full ring or a full store drops records and counts them, never blocks.
// The store's timestamps are raw ticks until a dump turns them into CLOCK_MONOTONIC nanoseconds.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "abi/status.hpp"
#include "abi/trace.hpp"
#include "devices/device.hpp"
#include "engine/types.hpp"

namespace tandem::rt {

// The clock this process's trace areas use: the TSC on x86-64 when the kernel's clocksource is the
// TSC (one counter for all CPUs, and about a third of clock_gettime's cost), else CLOCK_MONOTONIC.
abi::trace::Clock trace_clock();

// An area in this process's own memory (the dispatcher's ring; tests).
class OwnedArea {
 public:
  OwnedArea(uint32_t rings, uint32_t capacity, abi::trace::Clock clock);
  const abi::trace::AreaView& view() const { return view_; }

 private:
  std::unique_ptr<std::byte[]> memory_;
  abi::trace::AreaView view_;
};

class DispatchTracer {
 public:
  DispatchTracer() = default;
  DispatchTracer(const DispatchTracer&) = delete;
  DispatchTracer& operator=(const DispatchTracer&) = delete;

  // Dispatcher thread (control path). The first call allocates the per-job table and the ring of
  // `capacity` records (a power of two); enabling forgets jobs half-recorded by an earlier run.
  void enable(bool on, uint32_t max_jobs, uint32_t capacity);
  bool on() const { return on_; }
  // The dispatcher's ring (valid once enabled; fixed from then on: any thread).
  abi::trace::AreaView area() const { return area_ ? area_->view() : abi::trace::AreaView{}; }

  // ---- record points: dispatcher thread; each returns at once while tracing is off ----
  // A batch of packets was seen: the one ordered stamp (it must not come before the client's publish).
  void batch_seen() {
    if (on_) [[unlikely]] batch_ticks_ = last_ticks_ = abi::trace::read_ticks(clock_);
  }
  int64_t stamp() { return on_ ? tick() : 0; }
  // A dispatch packet the engine accepted as job `job`.
  void accepted(engine::JobId job, engine::SessionId session, uint16_t function, uint64_t tag,
                const devices::JobAccess& access, uint64_t workload, int64_t decoded) {
    if (on_) [[unlikely]] begin_job(job, session, function, tag, access, workload, decoded);
  }
  // A dispatch packet completed with `status` without running (validation or the engine refused it).
  void refused(engine::SessionId session, uint16_t function, uint64_t tag, Status status, int64_t decoded) {
    if (on_) [[unlikely]] write_refused(session, function, tag, status, decoded);
  }
  void started(engine::JobId job, engine::SlotId slot) {
    if (on_) [[unlikely]] {
      jobs_[job].slot = slot;
      mark_now(job, abi::trace::kStarted);
    }
  }
  void mark(engine::JobId job, abi::trace::JobPhase phase) {
    if (on_) [[unlikely]] mark_now(job, phase);
  }
  void device_done(engine::JobId job, int64_t device_ns) {
    if (on_) [[unlikely]] {
      jobs_[job].value = static_cast<uint64_t>(device_ns);
      mark_now(job, abi::trace::kDeviceDone);
    }
  }
  // The job's completion record is about to be written: stamped first (the client's "observed" stamp
  // must not come before ours)...
  void completing(engine::JobId job, Status status) {
    if (on_ && job != engine::kNone) [[unlikely]] stamp_completion(job, status);
  }
  // ... and its record goes to the ring once the completion is out, off the client's critical path.
  void completed(engine::JobId job) {
    if (on_ && job != engine::kNone) [[unlikely]] finish_job(job);
  }

 private:
  // Every stamp after a batch's first is unordered (rdtsc), kept monotone on this thread by hand: a
  // stamp may execute a few cycles before the one ahead of it.
  int64_t tick() {
    const int64_t t = abi::trace::read_ticks_unordered(clock_);
    last_ticks_ = t > last_ticks_ ? t : last_ticks_;
    return last_ticks_;
  }
  void mark_now(engine::JobId job, abi::trace::JobPhase phase);
  void begin_job(engine::JobId job, engine::SessionId session, uint16_t function, uint64_t tag,
                 const devices::JobAccess& access, uint64_t workload, int64_t decoded);
  void write_refused(engine::SessionId session, uint16_t function, uint64_t tag, Status status, int64_t decoded);
  void stamp_completion(engine::JobId job, Status status);
  void finish_job(engine::JobId job);

  bool on_ = false;
  abi::trace::Clock clock_ = abi::trace::Clock::monotonic;
  int64_t batch_ticks_ = 0;
  int64_t last_ticks_ = 0;
  std::vector<abi::trace::Record> jobs_;  // per engine job id: the record being filled (kind none: not traced)
  std::unique_ptr<OwnedArea> area_;
  abi::trace::RingWriter writer_;
};

class Dispatcher;

struct TraceSettings {
  uint32_t dispatcher_records = 1u << 16;  // the dispatcher's ring, a power of two
  uint64_t max_records = 1u << 18;         // records the store keeps between dumps
  int64_t drain_period_ns = 10'000'000;    // how often the collector empties the rings
};

struct TraceCounters {
  bool enabled = false;
  uint64_t records = 0;            // in the store now
  uint64_t collected = 0;          // taken from the rings since the last start
  uint64_t dropped_full = 0;       // by writers whose ring was full
  uint64_t dropped_store = 0;      // by the collector, its store full
  uint64_t dropped_unclaimed = 0;  // by client threads that found no ring left
  uint64_t dropped_corrupt = 0;    // announced by a client ring whose head made no sense
  uint32_t sources = 0;            // areas read (the dispatcher's and one per traced session)
  int64_t started_ns = 0;
};

// A dump: the records in CLOCK_MONOTONIC ns, and what names them.
struct TraceDump {
  TraceCounters counters;
  std::vector<abi::trace::DumpSession> sessions;
  std::vector<abi::trace::Record> records;
  int64_t taken_ns = 0;
};

// A dump as `tandem trace export` receives it: what names the records, and the records in ns.
struct TraceFile {
  abi::trace::DumpHeader header;
  std::vector<abi::trace::DumpSession> sessions;
  std::vector<abi::trace::DumpSlot> slots;
  std::vector<abi::trace::Record> records;
};

// The bytes of a dump, checked (magic, version, counts against the size).
Result<TraceFile> parse_dump(std::span<const std::byte> bytes);
// The size of `file`'s bytes, and the bytes themselves written into `out` (at least that size).
size_t dump_size(const TraceFile& file);
void write_dump(const TraceFile& file, std::span<std::byte> out);

class TraceCollector {
 public:
  explicit TraceCollector(const TraceSettings& settings, abi::trace::Clock clock = trace_clock());
  ~TraceCollector();
  TraceCollector(const TraceCollector&) = delete;
  TraceCollector& operator=(const TraceCollector&) = delete;

  abi::trace::Clock clock() const { return clock_; }
  const TraceSettings& settings() const { return settings_; }

  // The dispatcher whose records are collected: start() and stop() switch its tracing.
  void attach(Dispatcher& dispatcher) { dispatcher_ = &dispatcher; }
  // A client session's area (created by the daemon, mapped by the client; `keep` holds the mapping).
  // Its records get `session`, whatever the client wrote. Switched on at once if tracing is on.
  void add_session(uint32_t session, uint32_t pid, const abi::trace::AreaView& area, std::shared_ptr<void> keep);
  // Drains the session's area one last time and lets go of it.
  void remove_session(uint32_t session);
  bool has_session(uint32_t session) const;
  // An area whose records are kept as they are (tests; the dispatcher's is added by start()).
  void add_area(const abi::trace::AreaView& area, std::shared_ptr<void> keep);

  // Empties the store, switches every writer on and starts draining. Idempotent.
  void start();
  // Switches every writer off, drains what they wrote and stops draining; the store is kept.
  void stop();
  bool enabled() const;
  TraceCounters counters();
  // Everything collected so far (the rings drained first), in ns. `clear`: the store empties.
  TraceDump dump(bool clear);
  // Drains every ring now (tests; the thread does it every drain period).
  void drain();

 private:
  struct Source {
    abi::trace::AreaView area;
    std::shared_ptr<void> keep;
    std::vector<uint64_t> tails;         // private tails, one per ring
    std::vector<uint64_t> dropped_seen;  // each ring's k_dropped already counted
    uint32_t session = UINT32_MAX;  // client areas: the session; UINT32_MAX: the records say
    bool client = false;
    uint64_t unclaimed_seen = 0;  // the area's k_unclaimed already counted
  };
  void add_source_locked(const abi::trace::AreaView& area, std::shared_ptr<void> keep, std::optional<uint32_t> session);
  void drain_locked();
  void drain_source(Source& s);
  void set_writers(bool on);
  void run();
  int64_t to_ns(int64_t ticks) const;

  TraceSettings settings_;
  abi::trace::Clock clock_;
  Dispatcher* dispatcher_ = nullptr;
  bool dispatcher_added_ = false;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Source> sources_;
  std::map<uint32_t, uint32_t> session_pids_;  // every session whose records may be in the store
  std::vector<abi::trace::Record> store_;
  std::vector<abi::trace::Record> scratch_;
  TraceCounters counters_;
  bool running_ = false;
  std::thread thread_;
  // The ticks -> ns calibration: a pair taken when the collector was made, and one per dump.
  int64_t ticks0_ = 0, ns0_ = 0;
  double ns_per_tick_ = 1.0;
};

}  // namespace tandem::rt
