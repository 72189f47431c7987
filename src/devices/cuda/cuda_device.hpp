// The CUDA device behind the asynchronous Device interface ([device.cuda], docs/devices.md). A slot is
// a stream (CudaSlot). In launch mode a job is a kernel launch plus its copies; poll() asks the slot's
// stream. While a job is young (kPolledNs) next_deadline() has the dispatcher spin and poll, the lowest
// completion latency; a job that runs longer gets a host function that wakes the dispatcher through
// the completion inbox, so that it may sleep. In persistent mode a job is an entry in the slot's ring,
// started by the resident block without a launch; nothing can signal its end, so the dispatcher polls
// while such jobs run (persistent mode is for short jobs).
// Faults: a job whose launch the runtime refuses completes with DEVICE_ERROR (NO_MEMORY where its
// buffers found no device memory) and its slot serves on; a job that fails on the device completes
// with DEVICE_ERROR and its slot is rebuilt (a new stream, a new resident block); one running past
// job_timeout completes with TIMEOUT and its slot leaves service until the GPU finishes it. An error
// that loses the context (cuda_error_loses_context: an illegal address, a trap) takes every slot out of
// service for good: CUDA cannot recover a process's context, so tandemd must be restarted, and
// `tandem status` says so. activity() counts what happened. Its cost model (X_a, D_a per function) is
// measured at start.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "devices/callback_sink.hpp"
#include "devices/cuda/cuda_context.hpp"
#include "devices/device.hpp"
#include "devices/slot_job.hpp"

namespace tandem::devices::cuda {

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(const config::CudaSettings& settings);  // throws tandem::Error (no GPU, ...)
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

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
  // Tests: the next job submitted to `slot` does `fault` instead (launch mode; launch.hpp's CudaFault).
  void inject(uint32_t slot, CudaFault fault) {
    if (slots_.at(slot)->stream) slots_[slot]->stream->inject(fault);
  }
  CudaContext& context() { return context_; }
  // Device-local memory: one cudaMalloc allocation; its copy engines are streams of their own
  // (CudaSlot::transfer) on the engines' threads.
  void attach_local_memory(char* base, uint64_t bytes) override;
  LocalTransfer local_transfer() override;

 private:
  struct Slot {
    uint32_t index = 0;
    std::unique_ptr<CudaSlot> stream;
    bool loaded_valid = false;
    KernelId loaded = KernelId::nop;
    bool announced = false;  // the job in flight ends with a host function's wake-up (launch mode, after kPolledNs)
    bool announce_tried = false;
    SlotJob job;
  };
  static void on_done(void* user);
  void announce(Slot& s);
  static constexpr int64_t kPolledNs = 200'000;  // a launched job is polled this long before a wake-up is asked for
  // An announced job is still asked for this often: its host function never runs if the job's error
  // loses the context (cudaLaunchHostFunc), which would leave the failure unseen until job_timeout.
  static constexpr int64_t kAnnouncedCheckNs = 5'000'000;
  static constexpr int64_t kAbandonedCheckNs = 200'000;  // above the dispatcher's spin threshold (50 us)
  // `why` by value: it is often the old stream's last_error(), which the rebuild destroys.
  void rebuild(Slot& s, std::string why, int64_t now);
  // A failure of slot s's job (`why`): counted; the context lost, or the slot rebuilt.
  void job_failed(Slot& s, std::string why, int64_t now);
  void refused_by_cuda(Slot& s, Status status);
  void lose_context(const std::string& why);
  std::string lost_context_error() const;
  void measure_copy_engines();

  config::CudaSettings settings_;
  CudaMode mode_;
  CudaAccess access_;
  int64_t timeout_ns_ = 0;
  CudaContext context_;
  DeviceInfo info_;
  // Declared before the slots, so destroyed after them: freeing memory waits for the whole device,
  // which persistent slots keep busy until they stop.
  std::vector<std::unique_ptr<CudaSlot>> copy_streams_;  // one per copy engine, once local memory is attached
  std::vector<std::unique_ptr<Slot>> slots_;
  // Wake-ups from the host functions (launch mode); their user data is one of its targets.
  std::unique_ptr<CallbackSink> sink_;
  std::vector<DeviceCompletion> ready_, arrived_;
  int64_t last_poll_ns_ = 0;
  DeviceFaults faults_;  // since the device started, for `tandem status` (activity())
  // A copy engine's transfer that lost the context (the copy engines' thread), for poll().
  std::atomic<bool> copy_lost_{false};
  std::mutex copy_loss_mutex_;
  std::string copy_loss_;
};

}  // namespace tandem::devices::cuda
