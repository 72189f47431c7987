// The emulated reconfigurable fabric: N slots whose accelerators compute real results with each
// function's accelerator datapath (funcs::FunctionInfo::run_accel) and complete no earlier than their
// model says (D_a + W / X_a). Results are computed on the dispatcher's thread when a job starts (the
// datapaths are fast loops); the completion is held in a timing wheel until the modelled end.
#pragma once

#include <array>
#include <functional>
#include <vector>

#include "config/config.hpp"
#include "devices/device.hpp"
#include "devices/device_tlb.hpp"
#include "devices/held_completions.hpp"

namespace tandem::devices {

// The emulated fabric's timing of every function: [functions] speedup x the CPU's software throughput
// of that function on this machine (`cpu_rate(function)` when given and positive, a calibrated X_c;
// else funcs::software_throughput, measured once per process), or an absolute throughput; with
// `[device.emu] reconfig_delay = "bitstream"` the functions with an RTL accelerator reconfigure in the
// time a slot sized for the largest of them takes to load (docs/rtl.md).
std::array<model::AccelModel, TANDEM_FN_MAX> emu_models(const config::Config& config,
                                                        const std::function<double(uint16_t)>& cpu_rate = {});

// The emulated fabric's memory and transfer costs from [device.emu].
DeviceMemoryInfo emu_memory(const config::EmuSettings& settings);

// The emulated fabric's time for `job`: D_a plus its data's transfer overlapped with W / X_a
// (TransferModel::job_s), or the model alone when the job moves no data.
int64_t job_ns(const model::AccelModel& m, const TransferModel& transfer, const DeviceJob& job);

// The emulated fabric's TLB from [device.emu].
TlbSettings emu_tlb(const config::EmuSettings& settings);

class EmuDevice final : public Device {
 public:
  EmuDevice(uint32_t slots, const std::array<model::AccelModel, TANDEM_FN_MAX>& models,
            const DeviceMemoryInfo& memory = {}, const TlbSettings& tlb = {});

  const DeviceInfo& info() const override { return info_; }
  void configure(uint32_t slot, uint16_t function) override;
  void submit(uint32_t slot, const DeviceJob& job) override;
  void poll(int64_t now, std::vector<DeviceCompletion>& out) override;
  int64_t next_deadline() const override;
  // How long a job waits for one answer to a service request before it fails with TIMEOUT.
  void set_service_timeout_ns(int64_t ns) { service_timeout_ns_ = ns > 0 ? ns : 1; }
  void shoot_down(uint32_t asid, uint64_t address, uint64_t bytes) override;

 private:
  // Runs a pointer-following job through its memory port (and, under PHASE/V, the TLB); the stall its
  // page walks and faults cost goes to `stall_s`.
  int64_t run_through_port(uint32_t slot, const DeviceJob& job, const funcs::FunctionInfo& fn, DeviceCompletion& c,
                           double& stall_s, uint64_t& reads);
  // PHASE/V: every page of the job's buffers through the TLB, in order (a streaming job's accesses).
  void translate_buffers(uint32_t slot, const DeviceJob& job, const funcs::FunctionInfo& fn, TlbCounts& counts);
  // Every page of [address, address + bytes) (bytes > 0) through the TLB, in order.
  void translate_range(uint32_t slot, uint32_t asid, uint64_t address, uint64_t bytes, TlbCounts& counts);

  // A service_chain job between its requests: held here (the dispatcher never waits), advanced by poll().
  struct ServiceWait {
    bool active = false;
    bool posted = false;     // a request is out (else: the ring was full, post again)
    DeviceJob job;
    uint64_t step = 0;
    uint64_t value = 0;
    uint32_t ticket = 0;
    int64_t deadline = 0;    // the answer's timeout
  };
  void start_service_job(uint32_t slot, const DeviceJob& job);
  // Posts the slot's next request, or completes the job when its chain is done. False: it completed.
  bool advance_service(uint32_t slot, int64_t now);
  void finish_service(uint32_t slot, Status status, int64_t now);

  std::vector<ServiceWait> waits_;  // by slot
  uint32_t waiting_ = 0;            // active entries of waits_
  int64_t service_timeout_ns_ = 1'000'000'000;
  DeviceInfo info_;
  DeviceTlb tlb_;
  std::vector<uint16_t> loaded_;  // function each slot was last configured for
  HeldCompletions held_;
};

}  // namespace tandem::devices
