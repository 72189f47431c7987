// The sans-I/O engine: router, per-function job queues with per-session lanes, slots, round-robin
// scheduler, barrier-AND packets and ring ordering (thesis 5.4.4-5.4.5, seed 003's AQL barriers).
//
// Every public event method is a pure state transition (state, event) -> actions: it appends to the
// caller's Actions and never reads a clock, sleeps, allocates on the steady path, or touches client
// memory. The real-time driver (src/rt), the daemon and the simulator (src/sim) all drive this class.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <vector>

#include "base/chunked_table.hpp"
#include "model/accel_model.hpp"
#include "engine/types.hpp"

namespace tandem::engine {

// Slots that share what they can hold and how fast: one device's slots.
struct SlotClass {
  uint32_t slots = 0;
  std::bitset<kMaxFunctions> loadable;                  // functions these slots can hold
  std::array<model::AccelModel, kMaxFunctions> models{};  // their timing per function
};

struct EngineConfig {
  uint32_t slots = 8;
  uint32_t queues = 0;              // function queues; 0 = as many as slots
  uint32_t queue_capacity = 1024;   // jobs per function queue (QUEUE_FULL beyond, except for a session
                                    // below its fair share: see Engine::submit)
  uint32_t max_jobs = 1u << 16;     // jobs queued or running in the whole engine
  uint32_t max_jobs_per_session = 0;  // 0 = no per-session bound (LIMIT_EXCEEDED beyond)
  Time max_job_ns = 0;              // bound on a job's modelled time (thesis 5.4.1); 0 = none
  std::bitset<kMaxFunctions> known; // function ids that exist (others: UNKNOWN_FUNCTION)
  // Known functions the device cannot hold in a slot (the rtl device has five accelerators): load()
  // refuses them, so their jobs stay NOT_ACCELERATED whatever a reconfiguration policy asks.
  std::bitset<kMaxFunctions> no_accelerator;
  std::array<model::AccelModel, kMaxFunctions> models{};  // per-function accelerator model
  // Several devices: their slots in slot order, each class with its own functions and timing. When
  // given, the engine derives `slots` (their sum), `no_accelerator` (known functions no class holds)
  // and `models` (per function, the first class that holds it: the job-size bound and the monitor's
  // figures before any replica is usable). Empty: one class of `slots` slots timed by `models`.
  std::vector<SlotClass> slot_classes;
};

enum class SlotState : uint8_t { empty, configuring, idle, busy };

struct SlotView {
  SlotState state = SlotState::empty;
  FunctionId function = 0;
  QueueId queue = kNone;
  JobId job = kNone;
  Time until = 0;          // configuring: ready time
  Time busy_since = 0;     // busy: start of the current job
  Time busy_total = 0;     // accumulated busy time (for utilisation)
  uint64_t jobs_done = 0;
  Time idle_since = 0;     // idle: end of its last job or of its configuration (how long unused)
  bool in_service = true;  // false: its device took it out of service after a fault (set_in_service)
};

// Per-function counters the monitor turns into period figures (thesis 5.4.6).
struct FunctionCounters {
  uint64_t submitted_jobs = 0;
  uint64_t submitted_work = 0;   // monotonic: the monitor differences it per period
  uint64_t completed_jobs = 0;
  uint64_t rejected_not_accelerated = 0;
  uint64_t demand_requests = 0;  // NOT_ACCELERATED or demand-only packets while unrouted
};

struct QueueView {
  FunctionId function = 0;
  bool routed = false;
  uint32_t jobs = 0;
  uint64_t work = 0;       // sum of queued jobs' workloads
};

class Engine {
 public:
  explicit Engine(const EngineConfig& config);

  // ---- sessions and rings (control path; may allocate) ----
  SessionId open_session();
  // Cancels the session's queued jobs and barriers; its running jobs finish. Emits session_drained
  // once nothing of the session remains (possibly immediately).
  void close_session(SessionId session, Time now, Actions& out);
  bool session_open(SessionId session) const;
  uint32_t session_jobs(SessionId session) const;
  RingId open_ring(SessionId session);
  void close_ring(RingId ring);
  // The driver must not consume packets from a blocked ring (a barrier is outstanding).
  bool ring_blocked(RingId ring) const { return rings_[ring].blocked != 0; }

  // ---- events ----
  // Returns the job's id if it was queued (its start_job may already be in `out`), or kNone if it was
  // completed at once (rejected, or demand-only). Admission to a function queue is fair: a job is
  // admitted while the queue holds fewer than queue_capacity jobs, or while its session's lane holds
  // fewer than its share, ceil(capacity / sessions with jobs queued there, counting this one). So a
  // session below its share never meets QUEUE_FULL because of another, and a queue holds at most
  // about twice its capacity (and never more than the job pool, max_jobs).
  JobId submit(const JobSpec& job, Time now, Actions& out);
  void submit_barrier(const BarrierSpec& barrier, Time now, Actions& out);
  // A rejected packet (failed validation in the driver) still completes, and still unblocks order.
  void reject(SessionId session, uint64_t completion, uint64_t tag, Status status, Actions& out);
  void job_finished(SlotId slot, Status status, int64_t value, Time now, Actions& out);
  void configure_done(SlotId slot, Time now, Actions& out);
  // Withdraws a queued (not yet started) job of `session` whose completion key is `completion`;
  // completes it with CANCELLED. False if no such queued job (already running or finished).
  bool cancel_queued(SessionId session, uint64_t completion, Actions& out);
  // A cancel packet: cancel_queued(session, target), then completes the packet's own record
  // `completion` with OK and value 1 (withdrawn) or 0 (running, finished or unknown). Returns which.
  bool cancel(SessionId session, uint64_t target, uint64_t completion, uint64_t tag, Actions& out);

  // ---- reconfiguration (used by the configuration loader and the reconfiguration manager) ----
  // Starts loading `function` into `slot`. Refused (false) if the slot is busy, if it is the only
  // slot serving a non-empty queue of another function, or if no queue is available.
  bool load(SlotId slot, FunctionId function, Time now, Actions& out);
  bool can_reconfigure(SlotId slot) const;
  // The device's word on a slot's health (devices::SlotHealth). A slot out of service (a job past its
  // time limit still on the device, a fault) is no usable accelerator: no job starts there while
  // another slot in service serves its function (where none does, jobs still start there and fail
  // fast with the device's status, so that nothing waits for a device that may never return), and it
  // is not reconfigured. Back in service, it serves its queue again.
  void set_in_service(SlotId slot, bool in_service, Time now, Actions& out);
  bool in_service(SlotId slot) const { return slot < slots_.size() && !slots_[slot].out_of_service; }
  // Empties a slot (retire an accelerator); same prohibitions as load().
  bool unload(SlotId slot, Actions& out);

  // ---- introspection for the monitor, the reconfiguration manager and `tandem status` ----
  const EngineConfig& config() const { return config_; }
  uint32_t slot_count() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t queue_count() const { return static_cast<uint32_t>(queues_.size()); }
  SlotView slot(SlotId s) const;
  // The job running on slot s (kNone when none): the driver checks a device's completion against it.
  JobId slot_job(SlotId s) const { return s < slots_.size() ? slots_[s].job : kNone; }
  QueueView queue(QueueId q) const;
  QueueId route(FunctionId f) const { return route_[f]; }
  // Usable accelerators (idle or busy) serving f; configuring slots are not counted.
  uint32_t accelerators(FunctionId f) const;
  uint32_t configuring(FunctionId f) const;
  // Sum of the usable accelerators' throughputs X_a for f (they may sit on different devices).
  double usable_throughput(FunctionId f) const { return usable_xa_[f]; }
  // The timing of f on slot s's device.
  const model::AccelModel& slot_model(SlotId s, FunctionId f) const {
    return config_.slot_classes[slot_class_[s]].models[f];
  }
  // The device class (index into config().slot_classes) of slot s.
  uint32_t slot_class(SlotId s) const { return slot_class_[s]; }
  // Whether slot s's device can hold f.
  bool can_hold(SlotId s, FunctionId f) const { return config_.slot_classes[slot_class_[s]].loadable[f]; }
  // A slot that can hold one function only (a copy engine): reconfiguration policies leave it alone.
  bool fixed(SlotId s) const { return config_.slot_classes[slot_class_[s]].loadable.count() <= 1; }
  // Whether some slot that is not fixed can hold f: what a reconfiguration policy may place.
  bool placeable(FunctionId f) const { return placeable_[f]; }
  const FunctionCounters& counters(FunctionId f) const { return counters_[f]; }
  // Functions requested while not accelerated since the last clear (Algorithm 1's request bitmap).
  const std::bitset<kMaxFunctions>& requests() const { return requests_; }
  void clear_requests() { requests_.reset(); }
  void clear_request(FunctionId f) { requests_.reset(f); }
  uint32_t jobs_in_flight() const { return jobs_in_flight_; }
  // Workload still to run for f: queued jobs plus the running jobs' full workloads (Eq 5.2's sum).
  uint64_t outstanding_work(FunctionId f) const;
  uint32_t running_jobs(FunctionId f) const;

 private:
  struct Job {
    JobSpec spec;
    QueueId queue = kNone;
    SlotId slot = kNone;
    Time start = 0;
    JobId next = kNone;       // lane FIFO / free list
    uint32_t waiters = kNone; // head of barrier wait links
    bool queued = false;
    bool running = false;
  };
  struct Lane {              // one session's FIFO within one queue
    JobId head = kNone;
    JobId tail = kNone;
    uint32_t count = 0;
    uint32_t next_active = kNone;  // circular list of non-empty lanes of the queue
    uint32_t prev_active = kNone;
  };
  struct Queue {
    FunctionId function = 0;
    bool routed = false;
    uint32_t jobs = 0;
    uint64_t work = 0;
    uint32_t cursor = kNone;  // lane served next (round-robin across sessions)
    uint32_t active_lanes = 0;  // sessions with jobs queued here
    uint32_t serving = 0;     // slots routed to this queue (any state but empty)
    uint32_t in_service = 0;  // of those, the ones in service
  };
  struct Slot {
    SlotState state = SlotState::empty;
    FunctionId function = 0;
    QueueId queue = kNone;
    JobId job = kNone;
    Time until = 0;
    Time busy_since = 0;
    Time busy_total = 0;
    uint64_t jobs_done = 0;
    Time idle_since = 0;
    bool out_of_service = false;
  };
  struct Session {
    bool open = false;
    bool closing = false;
    uint32_t jobs = 0;        // queued + running
    uint32_t barriers = 0;    // outstanding barriers
  };
  struct Ring {
    SessionId session = kNone;
    bool open = false;
    uint32_t blocked = 0;     // outstanding barrier or barrier-bit jobs
  };
  struct Barrier {
    SessionId session = kNone;
    RingId ring = kNone;
    uint64_t completion = 0;
    uint64_t tag = 0;
    uint32_t remaining = 0;
    bool failed = false;
    bool active = false;
  };
  struct WaitLink {          // "barrier b waits on this job" / "on this unknown key"
    uint32_t barrier = kNone;
    uint32_t next = kNone;
  };
  struct Awaited {           // a pending dependency no engine job carries yet
    SessionId session;
    uint64_t key;
    uint32_t barrier;
  };

  Lane& lane(SessionId s, QueueId q) { return lanes_[static_cast<size_t>(s) * queues_.size() + q]; }
  uint32_t lane_index(SessionId s, QueueId q) const {
    return static_cast<uint32_t>(static_cast<size_t>(s) * queues_.size() + q);
  }
  JobId alloc_job();
  void free_job(JobId j);
  void enqueue(JobId j, QueueId q);
  JobId dequeue(QueueId q);
  void unlink_from_lane(JobId j);
  void deactivate_lane(Queue& queue, uint32_t li);
  bool below_fair_share(SessionId s, QueueId q) const;
  void schedule(Time now, Actions& out);
  void finish_job(JobId j, Status status, int64_t value, Time device_ns, Actions& out);
  void release_session_job(SessionId s, Actions& out);
  void resolve_waiters(JobId j, bool failed, Actions& out);
  void barrier_dep_done(uint32_t b, bool failed, Actions& out);
  uint32_t alloc_barrier();
  uint32_t alloc_link(uint32_t barrier, uint32_t next);
  void complete_barrier(uint32_t b, Actions& out);
  bool find_live_job(SessionId s, uint64_t key, JobId& found) const;
  QueueId find_free_queue() const;
  void detach_slot(Slot& s);
  void count_usable(SlotId s, int delta);

  EngineConfig config_;
  ChunkedTable<Job> jobs_;   // max_jobs ids; a chunk is allocated when its first id is
  JobId free_jobs_ = kNone;  // ids freed since (LIFO: the low ids are reused first)
  JobId unused_jobs_ = 0;    // ids from here on never used yet
  uint32_t jobs_in_flight_ = 0;
  std::vector<Queue> queues_;
  std::vector<Lane> lanes_;  // sessions x queues
  std::vector<Slot> slots_;
  uint32_t slot_cursor_ = 0;
  uint32_t queued_jobs_ = 0;  // jobs waiting in all queues: schedule() has nothing to do at 0
  // Per function, the smallest workload whose modelled time may exceed max_job_ns: submit() checks
  // the model (double math) only from there on (the hot path of small jobs skips it).
  std::array<uint64_t, kMaxFunctions> check_job_ns_from_{};
  std::array<QueueId, kMaxFunctions> route_{};
  std::array<FunctionCounters, kMaxFunctions> counters_{};
  std::array<uint32_t, kMaxFunctions> usable_{};        // idle or busy slots per function
  std::array<double, kMaxFunctions> usable_xa_{};       // their throughputs summed
  std::vector<uint32_t> slot_class_;                    // per slot: its index in config_.slot_classes
  std::bitset<kMaxFunctions> placeable_;
  std::array<uint32_t, kMaxFunctions> running_jobs_{};
  std::array<uint64_t, kMaxFunctions> running_work_{};
  std::bitset<kMaxFunctions> requests_;
  std::vector<Session> sessions_;
  std::vector<Ring> rings_;
  std::vector<Barrier> barriers_;
  std::vector<uint32_t> free_barriers_;
  std::vector<WaitLink> links_;
  uint32_t free_links_ = kNone;
  std::vector<Awaited> awaited_;
};

}  // namespace tandem::engine
