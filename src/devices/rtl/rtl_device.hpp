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

#include <atomic>
#include <mutex>
#include <vector>

#include "config/config.hpp"
#include "devices/completion_inbox.hpp"
#include "devices/device.hpp"
#include "devices/rtl/rtl_fabric.hpp"
#include "devices/slot_workers.hpp"

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
  void poll(int64_t now, std::vector<DeviceCompletion>& out) override { completions_.poll(now, out); }
  int64_t next_deadline() const override { return completions_.next_deadline(); }
  const uint32_t* wake_word() const override { return completions_.wake_word(); }
  SlotHealth slot_health(uint32_t slot) const override;
  // Every slot's TLB (list_walk) forgets its translations before its next job.
  void shoot_down(uint32_t asid, uint64_t address, uint64_t bytes) override;

 private:
  void run_job(uint32_t slot, const DeviceJob& job);
  void note_error(uint32_t slot);

  DeviceInfo info_;
  RtlFabric fabric_;  // slot s is touched only by worker s
  ThreadedCompletions completions_;
  mutable std::mutex health_mutex_;
  std::vector<SlotHealth> health_;
  std::atomic<uint64_t> shoot_downs_{0};  // bumped by shoot_down(); a slot flushes when it sees a change
  std::vector<uint64_t> seen_shoot_downs_;  // per slot, touched only by its worker
  SlotWorkers workers_;  // last: its threads stop before the members they use go away
};

}  // namespace tandem::devices::rtl
