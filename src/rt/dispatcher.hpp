// The real-time driver: one dispatcher thread that owns the engine and drives the devices. It polls
// the sessions' rings, decodes packets, feeds the engine, carries out its actions (submit a job to its
// slot's device, complete records, load slots), and collects the devices' finished jobs; it never
// waits on a device. The engine sees one flat range of slots: device d's slots follow device d-1's.
// When idle for `idle_spin` it sets NEED_WAKEUP on every ring and sleeps on their doorbells and the
// devices' wake words at once (futex_waitv), io_uring-SQPOLL style.
//
// Every engine call happens on the dispatcher thread. Control operations from other threads (open
// a session, attach a ring, snapshot) are posted and run between batches; the steady path takes no
// lock.
#pragma once

#include <sched.h>

#include <array>
#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "abi/ring.hpp"
#include "rt/address_space.hpp"
#include "rt/decode.hpp"
#include "rt/mover.hpp"
#include "rt/service_channel.hpp"
#include "rt/trace.hpp"
#include "devices/copy_engines.hpp"
#include "devices/device.hpp"
#include "devices/local_memory.hpp"
#include "engine/engine.hpp"
#include "engine/monitor.hpp"
#include "model/energy_model.hpp"
#include "base/chunked_table.hpp"
#include "base/timer_wheel.hpp"

namespace tandem::rt {

// What the jobs of one function moved with one access method, and their energy estimate.
struct AccessUsage {
  uint64_t jobs = 0;
  uint64_t host_bytes = 0;
  uint64_t local_bytes = 0;
  double device_s = 0;
  double energy_j = 0;  // model::EnergyModel::job_j of each job
};

struct DispatcherOptions {
  int64_t idle_spin_ns = 100'000;  // keep polling this long after the last activity
  uint32_t batch = 64;             // packets per ring per pass
  engine::MonitorConfig monitor;   // monitoring period P and available bandwidth
  int cpu = -1;                    // pin the dispatcher thread to this CPU (-1: let the kernel place it)
  bool avoid_caller_cpus = true;   // unpinned: step off the CPUs high-level calls run on (step_off_caller_cpus)
  model::EnergyModel energy;       // per-job energy estimates
  // Eq 5.1's available bandwidth measured: this total memory bandwidth (bytes/s) less what the devices
  // moved during the last period. 0: monitor.available_bandwidth as configured (0 there: unknown).
  double measured_total_bandwidth = 0;
};

struct DispatcherStats {
  uint64_t packets = 0;            // packets consumed from rings
  uint64_t jobs_started = 0;
  uint64_t completions = 0;        // records written
  uint64_t rejected = 0;           // packets completed with an error by validation or the engine
  uint64_t dropped = 0;            // packets whose completion record was unreachable
  uint64_t translation_faults = 0;
  uint64_t sleeps = 0;             // times the dispatcher slept on the doorbells
  int64_t max_lateness_ns = 0;     // latest a completion fired after its modelled deadline
  uint64_t reconfigurations = 0;   // slots loaded with a function (begin_configure; start-up state excluded)
};

// What one session submitted (tandem status, the metrics endpoint).
struct SessionStats {
  engine::SessionId session = engine::kNone;
  uint64_t jobs = 0;       // dispatch packets the engine accepted
  uint64_t refused = 0;    // dispatch packets completed with an error without running
  uint64_t bytes_in = 0;   // host bytes its jobs read
  uint64_t bytes_out = 0;  // host bytes they wrote
  uint32_t in_flight = 0;
  uint32_t busy_callers = 0;  // its threads inside high-level calls, at the last monitoring period
};

// A device as `tandem status` shows it: its slots are [first_slot, first_slot + info.slots).
struct DeviceView {
  devices::DeviceInfo info;
  engine::SlotId first_slot = 0;
  std::vector<devices::SlotHealth> health;  // per slot
  std::string activity;                     // Device::activity()
};

// The runtime's device-local memory (the first device that offers some holds it).
struct LocalMemoryView {
  std::string device;  // "" when no device has local memory
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;  // in aligned blocks
  uint32_t buffers = 0;
};

struct Snapshot {
  int64_t now_ns = 0;
  LocalMemoryView local;
  std::vector<DeviceView> devices;
  std::vector<engine::SlotView> slots;
  std::vector<engine::QueueView> queues;
  std::vector<std::pair<uint16_t, engine::FunctionCounters>> functions;  // functions with activity
  uint32_t sessions = 0;
  uint32_t rings = 0;
  uint32_t jobs_in_flight = 0;
  DispatcherStats stats;
  // Per function with jobs, per access method (TANDEM_ACCESS_*).
  std::vector<std::pair<uint16_t, std::array<AccessUsage, TANDEM_ACCESS_COUNT_>>> usage;
  std::vector<SessionStats> session_stats;  // open sessions
  std::array<uint64_t, TANDEM_FN_MAX> refused{};  // per function: dispatch packets refused without running
  // The device TLBs' translations (PHASE/V sessions' jobs): per function and per open session.
  std::vector<std::pair<uint16_t, devices::TlbCounts>> tlb_functions;
  struct SessionTlb {
    engine::SessionId session = 0;
    uint8_t address_mode = TANDEM_ADDRESS_AISLE;
    devices::TlbCounts tlb;
  };
  std::vector<SessionTlb> tlb_sessions;
};

class Dispatcher {
 public:
  // The engine gets one slot class per device, in order (config.slot_classes is replaced). `metrics_page`
  // receives the monitor's figures every period (the daemon places it in shared memory); null: the
  // dispatcher keeps a private one.
  Dispatcher(engine::EngineConfig config, std::vector<std::unique_ptr<devices::Device>> devices,
             const DispatcherOptions& options, std::shared_ptr<tandem_metrics_page_t> metrics_page = nullptr);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  void start();
  // Stops taking packets, lets every accepted job finish (drain), closes the sessions and joins the
  // thread. Idempotent.
  void stop();

  // ---- control path (any thread; runs on the dispatcher thread and waits for it) ----
  // `on_drained` runs on the dispatcher thread once a closed session has nothing left in flight.
  engine::SessionId open_session(std::shared_ptr<AddressSpace> memory, std::function<void()> on_drained = {});
  void close_session(engine::SessionId session);
  // The same without waiting for it: `first` (if any) and the close run on the dispatcher thread, in
  // order with everything posted before and after. A session id is reused only once it drained.
  void close_session_later(engine::SessionId session, std::function<void()> first = {});
  // Attaches a ring (formatted by the caller with `capacity` packets) to a session. `keep_alive`
  // holds its memory until the ring is detached and the dispatcher no longer touches it.
  Result<engine::RingId> attach_ring(engine::SessionId session, void* base, uint32_t capacity,
                                     std::shared_ptr<void> keep_alive);
  void detach_ring(engine::RingId ring);
  // Attaches the session's service-request ring (formatted by the client with `slots` slots; abi/
  // service.hpp): its jobs that ask the client (service_chain) post there. One per session.
  // INVALID_ARGUMENT for an unknown session or one that has a ring; PROTOCOL_ERROR for bad memory.
  Status attach_service(engine::SessionId session, void* base, size_t bytes, uint32_t slots,
                        std::shared_ptr<void> keep_alive);
  // How the session's later jobs name memory (TANDEM_ADDRESS_*); INVALID_ARGUMENT for an unknown mode
  // or session.
  Status set_address_mode(engine::SessionId session, uint8_t mode);
  // TLB shoot-down: the session unmapped [address, address + bytes) (bytes 0: all of it). Dispatcher
  // thread only: call it inside with_engine, with the translation change it goes with.
  void shoot_down(engine::SessionId session, uint64_t address, uint64_t bytes);
  bool load(engine::SlotId slot, uint16_t function);
  // Makes `function` resident in `slot` at once, without the reconfiguration delay (start-up state).
  bool preload(engine::SlotId slot, uint16_t function);
  Snapshot snapshot();

  // Runs `fn(engine)` on the dispatcher thread (or inline when it is not running) and returns its
  // result. Never call it from the dispatcher thread itself (e.g. from an on_drained callback).
  template <class F>
  auto with_engine(F&& fn) -> std::invoke_result_t<F&, engine::Engine&> {
    using R = std::invoke_result_t<F&, engine::Engine&>;
    std::packaged_task<R()> task([&] { return fn(engine_); });
    auto result = task.get_future();
    post([&task] { task(); });
    return result.get();
  }

  // The reconfiguration manager's policy, run once per monitoring period (none: static residency).
  // Set before start().
  void set_reconfig_policy(std::unique_ptr<engine::ReconfigPolicy> policy) {
    policy_ = std::move(policy);
    policy_reacts_ = policy_ && policy_->reacts();
  }

  // Device-local memory (control path): a buffer for `session`, its device address; and back.
  Result<uint64_t> alloc_local(engine::SessionId session, uint64_t bytes);
  Status free_local(engine::SessionId session, uint64_t address);
  // Per-job trace records (rt/trace.hpp): switches the dispatcher's recording; the first call makes
  // its ring of `ring_records` records. Control path; waits for the dispatcher thread.
  void set_tracing(bool on, uint32_t ring_records);
  abi::trace::AreaView trace_area() const { return trace_.area(); }

  // What the copy engines moved so far (zero without device-local memory).
  devices::CopyStats copy_stats() const { return copy_engines_ ? copy_engines_->stats() : devices::CopyStats{}; }
  // The host addresses the device-local memory's buffers translate to (fixed once built; a device that
  // keeps the data itself never touches them). Empty without local memory.
  devices::LocalWindow local_window() const {
    return local_ ? devices::LocalWindow{local_->base(), local_->capacity()} : devices::LocalWindow{};
  }

  const engine::EngineConfig& engine_config() const { return engine_.config(); }
  const tandem_metrics_page_t& metrics_page() const { return *metrics_page_; }
  // The devices' descriptions (fixed once built; safe from any thread).
  size_t device_count() const { return devices_.size(); }
  const devices::DeviceInfo& device_info(size_t d) const { return devices_[d].device->info(); }
  engine::SlotId first_slot(size_t d) const { return devices_[d].first_slot; }

 private:
  struct SessionEntry {
    std::shared_ptr<AddressSpace> memory;
    std::function<void()> on_drained;
    bool open = false;
    uint8_t address_mode = TANDEM_ADDRESS_AISLE;
    devices::TlbCounts tlb;
    SessionStats stats;
    std::shared_ptr<ServiceChannel> service;  // its service-request ring, once attached
    uint64_t busy_callers = 0;  // its rings' published threads inside calls (publish_callers' scratch)
  };
  struct RingEntry {
    abi::RingConsumer consumer;
    engine::SessionId session = engine::kNone;
    std::shared_ptr<void> keep_alive;
    bool attached = false;
  };
  void cancel_unread(RingEntry& ring);
  struct DeviceEntry {
    std::unique_ptr<devices::Device> device;
    engine::SlotId first_slot = 0;
    uint32_t in_flight = 0;       // jobs submitted and not yet returned by poll: 0 skips the poll...
    uint32_t out_of_service = 0;  // ...unless some of its slots are out of service (polled to see them back)
    bool reaches_local = false;   // its slots can use the runtime's device-local memory
  };
  struct Pending {  // per engine job id: what the device runs, and its time there once finished
    devices::DeviceJob job;
    int64_t device_ns = 0;
    engine::SlotId slot = engine::kNone;
    // Scatter-gather under tandemd: buffers gathered from the client before the job, scattered after.
    std::array<RemoteBuffer, funcs::kMaxBuffers> remote{};
    uint32_t remote_count = 0;
    std::unique_ptr<char[]> staging;
    uint64_t staging_size = 0;
    std::array<char*, funcs::kMaxBuffers> staged{};  // each remote buffer's place in `staging`
    std::shared_ptr<const ProcessMemory> process;
    Status status = Status::ok;  // the device's answer, kept while the output is scattered
    int64_t value = 0;
    engine::SessionId session = engine::kNone;
    std::unique_ptr<PagedPort> port;  // a job that follows pointers: how it reads the client's memory
    std::shared_ptr<ServiceChannel> service;  // a job that asks its client: the session's channel
  };

  void post(std::function<void()> fn);
  void close_session_here(engine::SessionId session);  // on the dispatcher thread
  void run_control();
  void loop();
  bool poll_rings();
  bool any_ring_ready() const;
  // A client answered a service request since the device last looked (its jobs are progressing).
  bool service_answers() const;
  void handle_packet(RingEntry& ring, engine::RingId id, const tandem_packet_t& packet, int64_t now);
  void apply(int64_t now);
  bool collect_devices(int64_t now);
  bool follow_slot_health(DeviceEntry& d, int64_t now);
  void start_gather(engine::JobId j, int64_t now);
  void submit_to_device(engine::JobId j, int64_t now);
  void device_finished(engine::JobId j, Status status, int64_t value, int64_t now);
  bool collect_moves(int64_t now);
  int64_t next_deadline() const;
  void on_timer(uint32_t id, int64_t now);
  void sleep_until(int64_t deadline);
  void monitor_tick(int64_t now);
  // Tells every ring the other sessions' threads inside calls (abi: k_busy_callers, k_other_callers).
  void publish_callers();
  void step_off_caller_cpus(uint64_t caller_cpus);
  void publish(engine::FunctionId f);
  void refresh_metrics(engine::FunctionId f);
  void note_drained(engine::FunctionId f);
  void refresh_drained();
  engine::Engine engine_;
  std::vector<DeviceEntry> devices_;
  std::vector<uint32_t> slot_device_;  // engine slot -> index in devices_
  std::vector<devices::DeviceCompletion> finished_;  // reused by collect_devices
  std::unique_ptr<devices::LocalMemory> local_;       // the first device's that offers local memory
  devices::CopyEngines* copy_engines_ = nullptr;      // its copy engines (one of devices_), if any
  const DeviceEntry* copy_entry_ = nullptr;            // and their entry
  Mover mover_;
  std::vector<MoveResult> moved_;                     // reused by collect_moves
  uint64_t staging_bytes_ = 0;                        // scatter-gather staging held now
  std::array<std::array<AccessUsage, TANDEM_ACCESS_COUNT_>, TANDEM_FN_MAX> usage_{};
  std::array<devices::TlbCounts, TANDEM_FN_MAX> tlb_{};  // per function
  uint64_t period_bytes_ = 0;  // bytes the devices' jobs moved since the last monitoring tick
  DispatcherOptions options_;
  engine::Monitor monitor_;
  std::unique_ptr<engine::ReconfigPolicy> policy_;
  bool policy_reacts_ = false;  // the policy wants on_demand between periods
  std::shared_ptr<tandem_metrics_page_t> metrics_page_;
  int64_t next_tick_ = 0;  // the monitor's period boundary (not in the wheel: it needs no precision)
  // This thread's CPU time and the clock at the last tick: the engine's share of the cores that
  // clients' partitioners must leave to it (the metrics page's k_engine_cores).
  int64_t tick_cpu_ns_ = 0;
  int64_t tick_wall_ns_ = 0;
  // Where this thread may run (its affinity when the loop began), the callers' CPUs it currently
  // stays off (0: none), and the periods in a row in which no call began.
  cpu_set_t allowed_cpus_{};
  uint64_t avoided_cpus_ = 0;
  uint32_t periods_without_callers_ = 0;
  TimerWheel timers_;  // reconfigurations, one timer per slot
  engine::Actions actions_;
  ChunkedTable<Pending, 8> pending_;  // per engine job id (680 bytes each), chunks on first use
  std::vector<SessionEntry> sessions_;
  std::vector<RingEntry> rings_;            // indexed by engine RingId
  std::vector<engine::RingId> active_rings_;
  uint32_t ring_cursor_ = 0;
  bool any_service_ = false;  // some session attached a service ring
  Decoded decoded_;
  std::array<engine::FunctionId, 8> drained_{};  // functions whose jobs completed in this apply()
  uint32_t drained_count_ = 0;
  DispatcherStats stats_;
  std::array<uint64_t, TANDEM_FN_MAX> refused_{};  // per function
  DispatchTracer trace_;

  std::thread thread_;
  std::mutex control_mutex_;
  std::vector<std::function<void()>> control_;
  std::atomic<bool> control_pending_{false};
  uint32_t control_word_ = 0;  // futex word: bumped to wake the dispatcher for control work
  bool running_ = false;       // guarded by control_mutex_
  bool stopping_ = false;      // dispatcher thread only
};

}  // namespace tandem::rt
