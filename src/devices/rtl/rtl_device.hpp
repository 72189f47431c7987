// The Verilator RTL device behind the asynchronous Device interface: an RtlFabric whose slots run on
// worker threads, one per slot (started when the slot is first used), so that a long simulated job
// delays only its own slot and never the dispatcher or the other slots' jobs.
//
// Each worker takes its slot's tasks in order (load an accelerator, run a job) and posts finished jobs
// to the completion inbox, which wakes the dispatcher. A job completes no earlier than its cycle count
// at the fabric clock after it started (a simulated job usually takes longer than that in real time).
// The workers run at a lower priority (`[device.rtl] worker_nice`) so that on a small machine the
// simulations do not take the CPU from the dispatcher and the applications (docs/results/mixed.md).
#pragma once

#include <array>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "devices/completion_inbox.hpp"
#include "devices/device.hpp"
#include "devices/held_completions.hpp"
#include "devices/rtl/rtl_fabric.hpp"

namespace tandem::devices::rtl {

class RtlDevice final : public Device {
 public:
  // `fabric` options beyond the settings (tiling bounds, test back-pressure) may be given.
  RtlDevice(const config::Config& config, const RtlFabricOptions& fabric = {});
  ~RtlDevice() override;
  RtlDevice(const RtlDevice&) = delete;
  RtlDevice& operator=(const RtlDevice&) = delete;

  const DeviceInfo& info() const override { return info_; }
  void configure(uint32_t slot, uint16_t function) override;
  void submit(uint32_t slot, const DeviceJob& job) override;
  void poll(int64_t now, std::vector<DeviceCompletion>& out) override;
  int64_t next_deadline() const override { return held_.next_deadline(); }
  const uint32_t* wake_word() const override { return inbox_.wake_word(); }
  SlotHealth slot_health(uint32_t slot) const override;

 private:
  struct Task {
    bool configure = false;
    uint16_t function = 0;  // configure
    DeviceJob job;          // run
  };
  struct Worker {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<Task> tasks;
    bool stop = false;
    std::thread thread;
  };
  void post(uint32_t slot, Task task);
  void work(uint32_t slot, Worker& w);

  DeviceInfo info_;
  int worker_nice_ = 0;
  RtlFabric fabric_;  // slot s is touched only by worker s
  std::vector<std::unique_ptr<Worker>> workers_;
  CompletionInbox inbox_;
  HeldCompletions held_;  // dispatcher thread only
  std::vector<DeviceCompletion> arrived_;
  mutable std::mutex health_mutex_;
  std::vector<SlotHealth> health_;
};

}  // namespace tandem::devices::rtl
