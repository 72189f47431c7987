// libtandem's C++ core behind the C API: a runtime (embedded, or a tandemd session), its queues, and
// the high-level calls. The embedded runtime runs the real-time driver (src/rt) in this process.
#pragma once

#include <sched.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cstddef>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "abi/ring.hpp"
#include "abi/trace.hpp"
#include "client/access.hpp"
#include "client/calibration.hpp"
#include "client/learned_costs.hpp"
#include "client/service.hpp"
#include "rt/host_access.hpp"
#include "devices/device.hpp"
#include "engine/partitioner.hpp"
#include "funcs/function.hpp"
#include "model/accel_model.hpp"
#include "model/cost_model.hpp"
#include "rt/completion.hpp"
#include "abi/status.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::client {

// Where high-level calls run; every call goes through the partitioner (thesis Algorithm 2).
enum class Mode : uint8_t {
  auto_mode,  // the cost model decides the split and rebalances (Eq 5.4, 5.6)
  sw,         // software only
  hw,         // everything on the accelerators (software only while none is resident)
  alpha,      // a fixed share `alpha` for the accelerators, one split (experiments)
};

// "auto", "sw", "hw" or "alpha=<x>" with 0 <= x <= 1. False (outputs untouched) if not one of these.
bool parse_mode(std::string_view text, Mode& mode, double& alpha);
std::string mode_name(Mode mode, double alpha);

// Partitioner settings beyond the mode (docs/model.md, "Policies and configuration").
struct PartitionTuning {
  uint32_t jobs_per_round = 6;       // n_j; 0 = one per resident replica
  double cowork_max_seconds = 20e-6; // C_COWORK_MAX as CPU time
  bool rebalance = true;             // auto: new rounds, top-ups and withdrawals while a call runs
  // auto: split only when predicted to beat offloading everything by this much. The split's own costs
  // (the CPU share's steps and checks, a second side to wait for) are not in Eq 5.6, and its gain over
  // offloading is at most X_c / (n_a X'_a): 12.5% for `work` on the default fabric.
  double min_split_gain = 0.15;
  // A job is predicted done no earlier than its own replica finishes it (PartitionerConfig).
  bool replica_predictions = true;
};

struct RuntimeOptions {
  std::string config_path;  // embedded: configuration file ("" = $TANDEM_CONFIG or built-in default)
  std::string config_text;  // embedded: configuration as TOML text (wins over config_path)
  std::string config_source;  // the name config_text's errors give ("" = "<options.config_text>")
  std::string socket_path;  // daemon socket ("" = $TANDEM_SOCKET or default socket if present)
  bool embedded = false;    // never use a daemon
  Mode mode = Mode::auto_mode;  // auto: $TANDEM_MODE may override it
  double alpha = 0;             // Mode::alpha's share
  PartitionTuning partition;
  // Calibration (see calibration.hpp): in memory, else this file, else the usual places.
  std::optional<Calibration> calibration;
  std::string calibration_path;
  rt::WaitPolicy wait;
  // How high-level calls' data reaches the accelerators (access.hpp); automatic: $TANDEM_ACCESS may
  // force one method (experiments).
  AccessChoice access = AccessChoice::automatic;
};

// Counters of the high-level calls (for demos, tests and experiments).
struct CallStats {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> sw_calls{0};           // ran wholly in software by the policy's choice
  std::atomic<uint64_t> accelerated_calls{0};  // some of the work ran on an accelerator
  std::atomic<uint64_t> hw_jobs{0};            // accelerator jobs submitted
  std::atomic<uint64_t> hw_units{0};           // work units completed by accelerators
  std::atomic<uint64_t> sw_units{0};           // work units run in software
  std::atomic<uint64_t> demand_jobs{0};        // empty jobs that asked for an accelerator (none resident)
  std::atomic<uint64_t> cancels{0};            // withdrawal requests sent
  std::atomic<uint64_t> jobs_cancelled{0};     // jobs withdrawn before they started (work went to SW)
  std::atomic<uint64_t> jobs_failed{0};        // jobs that ended with an error (their work went to SW)
  std::atomic<uint64_t> fallbacks{0};          // calls that wanted the hardware but ran (partly) in SW:
                                               // no accelerator resident, or a job was refused
};

// What one high-level call did (Runtime::run's optional report).
struct CallReport {
  bool partitioned = false;     // the partitioner planned with the hardware (else a software call)
  bool through_partitioner = false;  // the call took the partitioner's path (its plan, steps and clock
                                     // readings), whatever it decided; false: the software call's path
  double predicted_s = 0;       // the model's predicted completion time of the call
  double alpha = 0;             // the hardware share of the initial plan
  // N_L (Eq 5.4) with the live figures (a software call: the cheaper way in of a device measured with
  // copies as well, as its shortcut judged; a partitioned call: the partitioner's)
  uint64_t break_even_units = 0;
  engine::PartitionerCounters counters;
  // Partitioned calls, in seconds from the start of the partitioner's work: when the last job's
  // completion was seen, and when the call was done (calibration separates D_a from the CPU's
  // collecting with these).
  double hw_done_s = 0;
  double driver_s = 0;
  uint8_t access_method = TANDEM_ACCESS_ZERO_COPY;  // how its jobs' data reached the device (TANDEM_ACCESS_*)
  // Times the calling thread slept on its jobs' records: futex waits, each 50 ms liveness slice
  // counted, and each 50 us poll where the kernel lacks futex_waitv.
  uint32_t sleeps = 0;
};

// A device of the runtime as the client's cost model sees it (embedded: the dispatcher's devices;
// daemon: the list in HelloOk).
struct DeviceSummary {
  std::string kind;  // "emu", "rtl", ...
  std::string name;
  uint32_t first_slot = 0;
  uint32_t slots = 0;
  std::bitset<TANDEM_FN_MAX> loadable;
  std::array<model::AccelModel, TANDEM_FN_MAX> models{};
  devices::DeviceMemoryInfo memory;  // local memory, copy engines and transfer costs
  std::array<model::AccelModel, TANDEM_FN_MAX> copy_models{};  // devices::DeviceInfo::copy_models
};

class Runtime;

// Session memory is handed out in multiples of a cache line. `bytes` (0 counts as 1) rounded up into
// `rounded`; false for sizes no object can have (over PTRDIFF_MAX), which also keeps the rounding from
// overflowing (tandem_alloc(SIZE_MAX) used to round to 0) and the allocator from being asked at all.
inline constexpr size_t kAllocAlign = 64;
inline bool round_allocation(size_t bytes, size_t& rounded) {
  if (bytes > static_cast<size_t>(PTRDIFF_MAX) - (kAllocAlign - 1)) return false;
  rounded = (std::max<size_t>(bytes, 1) + kAllocAlign - 1) / kAllocAlign * kAllocAlign;
  return true;
}

// Lets a queue outlive its runtime safely: the runtime clears `runtime` when it goes away, and a queue
// destroyed later only releases its memory.
struct RuntimeLink {
  std::mutex mutex;
  Runtime* runtime = nullptr;
  std::atomic<bool> open{true};  // false once the runtime closed: its queues may only be destroyed
};

// A multi-producer submission ring of this runtime.
class Queue {
 public:
  Queue(Runtime& runtime, abi::RingProducer producer, std::shared_ptr<void> memory, uint32_t ring_id);
  ~Queue();
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  Runtime& runtime() { return runtime_; }
  uint32_t capacity() const { return producer_.capacity(); }

  // Reserves `count` consecutive indices (the first in `index`), waiting while the ring is full
  // (DISCONNECTED if the engine went away). count <= capacity.
  Status reserve(uint64_t& index, uint32_t count = 1);
  bool try_reserve(uint64_t& index) { return producer_.try_reserve(index); }
  tandem_packet_t& packet(uint64_t index) { return producer_.packet(index); }
  void publish(uint64_t index, uint32_t header) { producer_.publish(index, header); }
  void notify() { producer_.notify(); }
  void submit(uint64_t index, uint32_t header) { producer_.submit(index, header); }
  // True while the dispatcher announces that it sleeps (the next publish rings the doorbell).
  bool consumer_sleeping() const {
    return (abi::load_relaxed(producer_.header()->k_flags) & TANDEM_RING_NEED_WAKEUP) != 0;
  }
  // The runtime's threads inside high-level calls live in its default ring's header, where the
  // engine's monitor reads them; it answers with the other sessions' total (docs/abi.md).
  void add_busy_callers(int32_t delta) { producer_.add_busy_callers(delta); }
  void mark_caller_cpu(int cpu) { producer_.mark_caller_cpu(cpu); }
  uint32_t busy_callers() const { return producer_.busy_callers(); }
  uint32_t other_callers() const { return producer_.other_callers(); }

  // False once the runtime closed (its queues may only be destroyed): every packet is refused then.
  bool runtime_open() const { return link_->open.load(std::memory_order_acquire); }
  // Whether the engine can write `record` (null: nothing to write). Under tandemd only session
  // memory: a record elsewhere would never complete, so the C API refuses packets naming one (the
  // runtime's own calls use records of its thread_records(), always session memory, and skip the
  // check: it takes the session memory's lock).
  bool engine_writes(const tandem_completion_t* record) const;

  // One dispatch packet with up to TANDEM_INLINE_ARGS inline words; `record` may be null.
  Status dispatch(uint16_t function, const uint64_t* args, uint32_t arg_count, uint64_t workload,
                  tandem_completion_t* record, bool barrier = false, uint32_t flags = 0, uint64_t user_data = 0);
  // A cancel packet: withdraws the job whose completion record is `target` if it has not started
  // (docs/abi.md). `record` gets OK with value 1 (withdrawn) or 0; it may be null.
  Status cancel(const tandem_completion_t* target, tandem_completion_t* record);
  Status barrier_and(const tandem_completion_t* const* deps, uint32_t dep_count, tandem_completion_t* record);

 private:
  Runtime& runtime_;
  std::shared_ptr<RuntimeLink> link_;
  abi::RingProducer producer_;
  std::shared_ptr<void> memory_;
  uint32_t ring_id_;
};

class Runtime {
 public:
  // Opens an embedded runtime, or a daemon session when one is configured (see RuntimeOptions).
  static Result<std::unique_ptr<Runtime>> open(const RuntimeOptions& options);
  virtual ~Runtime();

  virtual std::string_view kind() const = 0;
  virtual Result<std::unique_ptr<Queue>> create_queue(uint32_t capacity) = 0;
  // Memory the engine can reach (and that can hold completion records), 64-byte aligned. Fails with
  // a message for sizes that overflow, exceed the session's limit, or cannot be had.
  virtual Result<void*> allocate(size_t bytes) = 0;
  // allocate() without the reason: null on failure.
  void* alloc(size_t bytes) {
    auto r = allocate(bytes);
    return r ? r.value() : nullptr;
  }
  virtual void free(void* memory) = 0;
  // Makes [address, address + bytes), mapped from `memfd` at `offset`, usable by the engine (zero
  // copy). The arguments are checked here, in every runtime, before anything is sent: page-aligned,
  // non-empty, not wrapping, and an open memfd that covers the range and can be sealed against
  // shrinking (INVALID_ARGUMENT, with `why`, otherwise; the session is not affected).
  Status register_memory(void* address, size_t bytes, int memfd, uint64_t offset, std::string* why = nullptr);
  virtual Status unregister_memory(void* address) {
    (void)address;
    return Status::ok;
  }
  // ---- data access (access.hpp, docs/access.md) ----
  // Whether [memory, memory + bytes) is memory the engine reaches in place (session memory under
  // tandemd, or any address of a PHASE/V session; any memory of the embedded runtime).
  virtual bool in_session_memory(const void* memory, size_t bytes) const {
    (void)memory, (void)bytes;
    return true;
  }
  // Whether the engine runs in another process: scatter-gather then gathers the client's pages.
  virtual bool engine_is_remote() const { return false; }
  // Device-local buffers: a device address for `bytes`, or why not (access_unsupported without local
  // memory, device_memory_full).
  virtual Result<uint64_t> alloc_local(size_t bytes) = 0;
  virtual Status free_local(uint64_t device_address) = 0;
  // How this session's later jobs name memory (TANDEM_ADDRESS_*: registered windows, or the whole
  // address space with demand paging through the device TLB).
  virtual Status set_address_mode(uint8_t mode) = 0;
  // Moves `bytes` between host memory (any memory of this process) and device-local memory, or within
  // it, on a copy engine; waits for it. Either address may be a device address.
  Status copy_local(uint64_t dst, uint64_t src, size_t bytes);
  // The host side's access costs: the calibration's [access], else measured in this process.
  const model::HostAccessCosts& access_costs() const { return access_costs_ ? *access_costs_ : rt::host_access_costs(); }
  AccessChoice access_choice() const { return access_.load(std::memory_order_relaxed); }
  void set_access_choice(AccessChoice choice) { access_.store(choice, std::memory_order_relaxed); }
  // This thread's staging memory for the copy method (session memory, reused call after call).
  class Staging {
   public:
    explicit Staging(Runtime& rt) : rt_(rt) {}
    ~Staging();
    void reset() { chunk_ = 0, used_ = 0; }
    // `bytes` of staging for one job, 64-byte aligned; nullptr if no memory.
    void* take(size_t bytes);
    size_t chunks() const { return chunks_.size(); }  // taken from session memory so far

   private:
    Runtime& rt_;
    std::vector<std::pair<char*, size_t>> chunks_;
    size_t chunk_ = 0, used_ = 0;
  };
  Staging* thread_staging();

  // The trace area tandemd gave this session (client/trace.hpp): its header's k_enabled says whether
  // calls record. Never null: a runtime without one points at a header that stays disabled.
  const abi::trace::AreaView& trace_area() const { return trace_area_; }

  // Null in embedded mode; the daemon session's liveness otherwise.
  virtual rt::Liveness* liveness() { return nullptr; }
  // The monitor's figures per function (thesis 5.4.6), refreshed every monitoring period; read them
  // with abi::read_metrics().
  virtual const tandem_metrics_page_t& metrics_page() const = 0;

  const RuntimeOptions& options() const { return options_; }
  uint64_t serial() const { return serial_; }  // unique per runtime in this process, never reused
  Mode mode() const;
  double fixed_alpha() const;
  void set_mode(Mode m, double alpha = 0);
  void set_partition_tuning(const PartitionTuning& tuning);
  // The cost-model parameters of `function`'s calls: its calibration, else default_cost_params.
  model::CostParams cost_params(uint16_t function) const;
  void set_cost_params(uint16_t function, const model::CostParams& params);
  // Where the calibration came from ("" when every function uses defaults).
  std::string calibration_source() const;
  // The devices this runtime drives, in slot order.
  const std::vector<DeviceSummary>& devices() const { return devices_; }
  // The device whose timing and calibration `function`'s calls use: the first in slot order that can
  // hold it (the configuration's order is the preference); null when none can.
  const DeviceSummary* host_device(uint16_t function) const;
  // The accelerator timing model of `function` on its host device (zero when none holds it).
  model::AccelModel accel_model(uint16_t function) const;
  // Its host device's kind ("" when none holds it).
  std::string_view device_kind(uint16_t function) const;
  // The largest job of `function` the engine takes, in units: beyond it the job's modelled time on the
  // host device exceeds the engine's bound (JOB_TOO_LARGE). UINT64_MAX when there is no bound; 0 when
  // not even one unit fits (or no device holds the function). Jobs that round out to whole rows
  // (sobel, matmul) are bounded per call: max_job_units (client/partitioned_call.hpp).
  uint64_t max_job_units_by_time(uint16_t function) const {
    return function < TANDEM_FN_MAX ? max_job_units_by_time_[function] : UINT64_MAX;
  }
  // The smallest max_job_buffer_bytes of the devices that can hold `function` (0: none bounds it).
  uint64_t max_job_buffer_bytes(uint16_t function) const;
  CallStats& stats() { return stats_; }

  // ---- automatic mode's live figures (issue 15) ----
  // The learnt estimates (learned_costs.hpp), seeded from the calibration; set_cost_params reseeds.
  LearnedCosts& learned() { return learned_; }
  const LearnedCosts& learned() const { return learned_; }
  // The fraction of a core one calling thread gets now (model::cpu_share): the cores this process may
  // use against the threads inside high-level calls (this process's, and under tandemd the other
  // client processes' as the engine last published them) and the engine's busy cores (metrics page).
  // Other processes are assumed to run on the same CPUs (their affinity is not known here).
  // A caller asleep on its jobs counts: it wakes to compete again within microseconds, and counting
  // only the runnable ones made a crowd of waiting threads look like free cores (8 threads on 2 vCPUs:
  // calls went to software at a share 3-5x too high, auto 2-3x slower than hw).
  double cpu_share() const;
  // Whether a caller waiting for its jobs may spin (the wait policy's spin budget) without taking a
  // core from anyone: the threads inside high-level calls (every client process's, as for cpu_share)
  // and the engine's busy cores fit the process's CPUs. Else it sleeps at once: 4 callers on 2 vCPUs
  // spinning 20 us each took the CPU from the dispatcher that completes their jobs.
  bool waiting_may_spin() const;
  // Threads inside high-level calls: this process's (live) and the other sessions' (as published).
  double busy_callers() const;
  // A thread inside a high-level call, for cpu_share and waiting_may_spin; counted in the default
  // ring's header, so that the engine can tell the other client processes (other_callers).
  class BusyCaller {
   public:
    // Also tells the engine which CPU the call runs on, so that its dispatcher can run elsewhere.
    explicit BusyCaller(Runtime& rt) : queue_(rt.default_queue()) {
      queue_.add_busy_callers(1);
      queue_.mark_caller_cpu(sched_getcpu());
    }
    ~BusyCaller() { queue_.add_busy_callers(-1); }
    BusyCaller(const BusyCaller&) = delete;
    BusyCaller& operator=(const BusyCaller&) = delete;

   private:
    Queue& queue_;
  };
  // Whether automatic mode plans with the learnt, contention-adjusted figures (default) or with the
  // calibration's as they are ($TANDEM_AUTO_ADAPT=0: the behaviour before issue 15, for comparisons).
  bool adaptive() const { return adaptive_; }
  // Exploration (run_call): a call the learnt figures kept in software where the prior ones would
  // have accelerated it; explore_due: whether `interval` of those have passed since the last probe
  // (then the interval doubles, up to kMaxExploreInterval); a call that used the hardware resets it.
  void note_software_choice(uint16_t function);
  bool explore_due(uint16_t function);
  void note_hardware_used(uint16_t function);
  static constexpr uint32_t kMaxExploreInterval = 64;
  // Writes what was learnt to the per-device-kind files (learned_costs_path); no-op when nothing was
  // learnt or persistence is off. Also done when the runtime closes.
  Status save_learned() const;

  // The queue high-level calls use (shared by all threads).
  Queue& default_queue() { return *default_queue_; }

  Status wait(const tandem_completion_t* record, const rt::WaitPolicy& policy) {
    return rt::wait_record(record, policy, liveness());
  }

  // A high-level call: the partitioner splits `call` between this thread and the accelerators per
  // the mode (partitioned_call.hpp); the result is the function's value. Buffers in `call` are this
  // process's pointers. `report`, if given, receives what the call did.
  Status run(const funcs::FunctionInfo& fn, funcs::Call& call, int64_t& value, CallReport* report = nullptr);

  // ---- service requests (FastPath; service.hpp, docs/api.md) ----
  ServiceClient& service() { return service_; }
  // Creates the session's service ring, hands it to the engine and starts serving it (kServicePoll,
  // kServiceSleep or both). INVALID_ARGUMENT for no or unknown flags or a second start.
  Status start_service(uint32_t flags);
  // One service_chain call (funcs/ref/service_chain_ref.hpp): `steps` requests to callback `service`,
  // each from the previous answer, asked by an accelerator job; in software (the callback called here)
  // when the mode is sw, no service is started, or no accelerator holds the function. While it waits
  // it serves the ring itself if the service was started with kServicePoll.
  Status service_chain(uint32_t service, uint64_t steps, uint64_t seed, uint64_t& value);

  // Completion records reserved for this thread's high-level calls (kThreadRecords of them).
  static constexpr uint32_t kThreadRecords = 64;
  tandem_completion_t* thread_records();

  // The policy a thread's partitioner needs for `function`: parameters and configuration. `version`
  // changes whenever set_mode, set_partition_tuning or set_cost_params did.
  struct CallPolicy {
    model::CostParams params;
    engine::PartitionerConfig config;
  };
  uint64_t policy_version() const { return policy_version_.load(std::memory_order_acquire); }
  CallPolicy call_policy(uint16_t function, uint64_t& version) const;

 protected:
  explicit Runtime(const RuntimeOptions& options);
  // Creates the default queue; derived constructors call it once they can make queues.
  Status init_default_queue();
  // Derived constructors describe their devices first (init_devices), then set every function's cost
  // parameters: from `calibration` where it has them and was made for the function's host device,
  // else defaults from the host device's model and the measured software throughput.
  // `max_job_ns`: the engine's bound on a job's modelled time (0: none).
  void init_devices(std::vector<DeviceSummary> devices, int64_t max_job_ns);
  // The session's trace area (a daemon runtime, once attached; `area` stays mapped while this lives).
  void init_trace_area(const abi::trace::AreaView& area) { trace_area_ = area; }
  // `daemon_host`: this machine's access costs as tandemd measured them (its hello), else measured here.
  void init_cost_params(const Calibration* calibration, const model::HostAccessCosts* daemon_host = nullptr);
  // Derived destructors call these first and last: the queue needs release_ring(), the records free().
  // close_default_queue() also cuts the link of queues the application still holds.
  void close_default_queue();
  void release_thread_records();
  friend class Queue;
  virtual void release_ring(uint32_t ring_id) = 0;
  // Makes a formatted service ring of `slots` slots the session's (embedded: in this process; tandemd:
  // a memfd the daemon maps): its memory in `memory`, its address here in `base`.
  virtual Status attach_service_ring(uint32_t slots, std::shared_ptr<void>& memory, void*& base) = 0;
  // Derived destructors call it first: the library's service thread may use the session.
  void stop_service() { service_.stop(); }
  // register_memory() once its arguments are known to be sound. The embedded runtime reaches all of
  // the process's memory and needs nothing.
  virtual Status attach_memory(void* address, size_t bytes, int memfd, uint64_t offset, std::string& why) {
    (void)address, (void)bytes, (void)memfd, (void)offset, (void)why;
    return Status::ok;
  }

 private:
  RuntimeOptions options_;
  CallStats stats_;
  std::vector<DeviceSummary> devices_;
  std::array<uint64_t, TANDEM_FN_MAX> max_job_units_by_time_{};  // init_devices
  mutable std::mutex policy_mutex_;  // guards the policy below; readers copy it when the version moved
  std::atomic<uint64_t> policy_version_{1};
  Mode mode_;
  double alpha_ = 0;
  PartitionTuning tuning_;
  std::array<model::CostParams, TANDEM_FN_MAX> params_{};
  std::string calibration_source_;
  std::shared_ptr<RuntimeLink> link_ = std::make_shared<RuntimeLink>();
  std::unique_ptr<Queue> default_queue_;
  uint64_t serial_;
  std::mutex records_mutex_;
  std::vector<tandem_completion_t*> record_blocks_;
  std::vector<std::unique_ptr<Staging>> staging_;  // guarded by records_mutex_
  std::atomic<AccessChoice> access_{AccessChoice::automatic};
  std::optional<model::HostAccessCosts> access_costs_;  // set once, by init_cost_params
  LearnedCosts learned_;
  // What init restored per function from a learnt file: the device figures it was learnt against and
  // its sample counts. A function whose jobs this run never observed keeps that stamp when saved.
  // Written by init_cost_params and set_cost_params under policy_mutex_; read by save_learned.
  std::array<std::optional<LearntOnDevice>, TANDEM_FN_MAX> restored_on_{};
  std::array<SampleCounts, TANDEM_FN_MAX> restored_samples_{};
  double cores_ = 1;  // CPUs this process may run on
  bool adaptive_ = true;
  struct Exploration {  // explore_now / explored_ok; relaxed: an extra or a missed probe is harmless
    std::atomic<uint32_t> streak{0};
    std::atomic<uint32_t> interval{1};
  };
  std::array<Exploration, TANDEM_FN_MAX> exploration_{};
  abi::trace::AreaView trace_area_;
  std::mutex service_mutex_;  // start_service
  ServiceClient service_;
};

// The mode and alpha from the TANDEM_MODE environment variable (auto|sw|hw|alpha=<x>) when the
// options say auto; an unparsable value is ignored.
Mode resolve_mode(Mode requested, double& alpha);

}  // namespace tandem::client
