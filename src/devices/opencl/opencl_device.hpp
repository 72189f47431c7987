// The OpenCL device behind the asynchronous Device interface ([device.opencl], docs/devices.md).
//
// A slot is an in-order command queue (ClSlot). submit() enqueues the job's transfers, kernel and
// read-backs without waiting and registers an event callback (its user data is a CallbackSink target);
// the driver's thread calls it when the job's last command completes, and it posts the completion to
// the inbox, which wakes the dispatcher.
// poll() then reads the value (the reduction partials) and the device time (profiling events).
// "Loading a function" selects its prebuilt kernel on the slot (programs are built once, when the
// device starts); the reconfiguration delay in the models is that selection's measured time. X_a and
// D_a are measured when the device starts (one small and one larger job per function), so the engine
// and the partitioner see the real device; `tandem calibrate --device opencl` measures them properly.
//
// Batching: a small accumulate job (copy access, at most batch_max_job_bytes) is not enqueued in
// submit() but held; poll() launches what is held once no other small launch (a lone small job or a
// batch) is on the device, so an idle device gets a job at the dispatcher's next turn and a busy one,
// when its last small launch ends, every job that arrived meanwhile as one batch on the first one's
// queue (ClAccumulateBatch: three commands for all of them, one with SVM). batch_max_jobs held jobs go at once, and
// held jobs wait at most kMaxHoldNs (a small launch that hangs until its time limit holds nobody back
// for long); a held job that times out is never launched. A job the batch has no room for runs alone.
// Other jobs, long ones included, never hold a small job back. Each job still completes on its own
// slot with its own value; its device time is its share of the batch's. A lone job runs as before.
//
// Device-local memory ([device.opencl] local_memory_mib): the runtime's LocalMemory names buffers in
// one cl_mem in the device's memory; a job's local buffers are sub-buffers of it (nothing moves), and
// the copy engines (tandem_buffer_write/read: TANDEM_FN_COPY jobs) write, read and copy it on queues of their own.
//
// Faults: a program that does not build leaves its functions unloadable (build log in the
// description of the error, `tandem status`); a job whose commands fail (device lost, out of
// resources; any of its commands, not only the last) completes with DEVICE_ERROR or NO_MEMORY and the
// slot's queue is rebuilt (a failed rebuild is tried again, backing off, while the slot is out of
// service); a job running
// longer than job_timeout completes with TIMEOUT and its slot leaves service until the device
// finishes the job (OpenCL cannot cancel a kernel), then returns. A device whose every launch fails
// (8 in a row) leaves service as a whole for a while (DeviceBreaker). slot_health() and
// activity() say what happened.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "devices/callback_sink.hpp"
#include "devices/device.hpp"
#include "devices/opencl/context.hpp"
#include "devices/slot_job.hpp"

namespace tandem::devices::opencl {

class OpenclDevice final : public Device {
 public:
  // `extra`: options beyond the settings (test hooks: source overrides). Throws tandem::Error when no
  // device matches or the context cannot be made.
  explicit OpenclDevice(const config::OpenclSettings& settings, const ClOptions& extra = {});
  ~OpenclDevice() override;
  OpenclDevice(const OpenclDevice&) = delete;
  OpenclDevice& operator=(const OpenclDevice&) = delete;

  const DeviceInfo& info() const override { return info_; }
  void configure(uint32_t slot, uint16_t function) override;
  void submit(uint32_t slot, const DeviceJob& job) override;
  void poll(int64_t now, std::vector<DeviceCompletion>& out) override;
  int64_t next_deadline() const override;
  const uint32_t* wake_word() const override { return sink_->inbox().wake_word(); }
  SlotHealth slot_health(uint32_t slot) const override;
  bool slot_in_service(uint32_t slot) const override {
    return slot < slots_.size() && slots_[slot]->job.health.in_service && faults_.lost.empty();
  }
  std::string activity() const override;
  // Device-local memory: one buffer in the device's memory; its copy engines are command queues of
  // their own (ClSlot::transfer) on the engines' threads.
  void attach_local_memory(char* base, uint64_t bytes) override;
  LocalTransfer local_transfer() override;

  ClContext& context() { return context_; }
  ClAccess access() const { return access_; }
  // Every job's host buffers reached with `access` (the `copy` and `zero_copy` settings); the figures
  // with copies no longer apply (tests).
  void set_access(ClAccess access) {
    access_ = access;
    per_job_ = false;
    info_.copy_models = {};
  }
  // The `job` setting: each job's own method (DeviceJob::access) picks the API: zero_copy in place
  // (CL_MEM_USE_HOST_PTR), copy and scatter-gather by copies (from the client's session memory, the
  // client's staging or tandemd's gathered pages).
  bool per_job_access() const { return per_job_; }
  ClAccess access_of(const DeviceJob& job) const {
    if (!per_job_) return access_;
    return job.access.method == TANDEM_ACCESS_ZERO_COPY ? ClAccess::zero_copy : ClAccess::copy;
  }
  // Since the device started: batches launched (enqueued, whatever became of them) and their jobs.
  struct BatchStats {
    uint64_t batches = 0;
    uint64_t jobs = 0;
  };
  BatchStats batch_stats() const { return batch_stats_; }
  bool batching() const { return batching_; }

  // Tests. The events of launches found failed without their callback (kept until it comes), and the
  // callbacks registered and not yet run.
  size_t unannounced_events() const { return unannounced_.size(); }
  int callbacks_pending() const { return sink_->pending(); }
  // Runs, as a conforming driver would, the late CL_COMPLETE callback of the newest such launch on
  // `slot` (PoCL never sends one: pocl/pocl#1430). False when none is kept.
  bool deliver_late_callback(uint32_t slot, cl_int status);

 private:
  struct Batch;
  struct Slot {
    uint32_t index = 0;
    std::unique_ptr<ClSlot> queue;
    bool loaded_valid = false;
    KernelId loaded = KernelId::nop;
    SlotJob job;    // the job in flight
    EventPtr done;  // its launch's last command (a lone job; a batch has its own)
    bool small_launch = false;  // its job is a lone small (batchable) one
    uint64_t launch = 0;        // its launch's number (DeviceBreaker)
  };
  // A batch in flight: its jobs' slots in order (the first one's queue runs it).
  struct Batch {
    std::unique_ptr<ClAccumulateBatch> work;
    std::vector<uint32_t> slots;
    EventPtr done;
    bool in_flight = false;
    uint64_t launch = 0;  // DeviceBreaker's number
  };
  // A job held for the next batch.
  struct Held {
    uint32_t slot = 0;
    funcs::Call call;
    KernelJob plan;
    ClAccess access = ClAccess::copy;  // if it runs on its own after all
  };
  static constexpr uint32_t kBatchSlot = UINT32_MAX;  // a batch's completion in the inbox
  static void CL_CALLBACK on_complete(cl_event event, cl_int status, void* user);
  bool batchable(const DeviceJob& job, const KernelJob& plan) const;
  void launch(Slot& s, const funcs::Call& call, const KernelJob& plan, ClAccess access, bool small);
  void launch_held();
  void drop_expired_held();
  Batch* free_batch();
  void finish_batch(Batch& b, const DeviceCompletion& c, int64_t now, std::vector<DeviceCompletion>& out);
  void complete_now(uint32_t slot, uint64_t token, Status status, std::string error = {});
  void launch_ended(DeviceCompletion c, bool announced, int64_t now, std::vector<DeviceCompletion>& out);
  void find_unannounced_failures(int64_t now, std::vector<DeviceCompletion>& out);
  bool launches_in_flight() const;
  void rebuild(Slot& s, const std::string& why, int64_t now);
  void measure_models();
  void measure_copy_engines();

  config::OpenclSettings settings_;
  ClContext context_;
  ClAccess access_ = ClAccess::copy;
  bool per_job_ = false;  // access = "job"
  std::string unbuilt_;   // kernels that did not build, each with its log's first line
  uint64_t retired_in_place_ = 0, retired_copied_ = 0;  // host buffers counted by slot queues since rebuilt
  int64_t timeout_ns_ = 0;
  DeviceInfo info_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::unique_ptr<ClSlot>> copy_queues_;  // one per copy engine, once local memory is attached
  // The event callbacks' way back (their user data is one of its targets, never the device).
  std::unique_ptr<CallbackSink> sink_;
  std::vector<DeviceCompletion> ready_;    // completed on the dispatcher's thread (refusals, failures)
  std::vector<DeviceCompletion> arrived_;  // scratch for the inbox
  std::vector<Held> held_;                 // jobs for the next batch
  std::vector<std::unique_ptr<Batch>> batches_;
  bool batching_ = false;                  // the batch kernel exists and batch_max_jobs > 1
  bool batch_svm_ = false;                 // batches may stage in SVM ([device.opencl] batch_staging)
  // Held jobs wait while one small launch is on the device. Measured with 8 clients of accumulate
  // (1 KiB) on PoCL: 6 jobs per batch on average, and more jobs/s than with two launches in flight
  // (4.9 jobs per batch).
  static constexpr uint32_t kBatchSmallLaunches = 1;
  // The longest a held job waits for the small launch before it (one that hangs until its time limit
  // must not hold the others back): far above a batch's time on a device that works.
  static constexpr int64_t kMaxHoldNs = 1'000'000;
  int64_t held_since_ = 0;                 // when the first of held_ was held
  uint32_t small_launches_ = 0;            // lone small jobs and batches whose completion is not polled yet
  BatchStats batch_stats_;        // jobs and batches whose completion has not been polled
  // PoCL never runs the CL_COMPLETE callback of a command that the driver terminated (pocl/pocl#1430),
  // so a job whose last command failed would never complete: every kEventCheckNs while launches are
  // in flight, poll() asks their events. A failure found so completes at once, and its event is kept
  // (its handle cannot be reused) until a late callback names it, if one ever does.
  static constexpr int64_t kEventCheckNs = 2'000'000;
  static constexpr size_t kMaxUnannounced = 64;
  int64_t next_event_check_ns_ = 0;
  std::vector<EventPtr> unannounced_;
  uint64_t evicted_unannounced_ = 0;  // dropped from unannounced_ (bounded), their callbacks never seen
  uint32_t failing_rebuilds_ = 0;  // test hook (ClOptions::failing_rebuilds)
  // Since the device started, for `tandem status` (activity()): launches (jobs or batches) whose
  // commands failed, the rebuilds of a slot's queue that followed, and jobs without device memory.
  DeviceFaults faults_;
  DeviceBreaker breaker_;  // the whole device out of service while every launch fails
};

}  // namespace tandem::devices::opencl
