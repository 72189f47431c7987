#include "devices/emu/emu_device.hpp"

#include <cmath>

#include "devices/rtl/rtl_catalog.hpp"
#include "funcs/throughput.hpp"

namespace tandem::devices {

std::array<model::AccelModel, TANDEM_FN_MAX> emu_models(const config::Config& config,
                                                        const std::function<double(uint16_t)>& cpu_rate) {
  std::array<model::AccelModel, TANDEM_FN_MAX> models{};
  const bool bitstream = config.device.emu.reconfig_delay == "bitstream";
  const double bitstream_s = rtl::bitstream_delay_s(config.device.bitstream);
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    const config::FunctionTiming t = config::function_timing(config, fn->id);
    model::AccelModel& m = models[fn->id];
    if (t.throughput) {
      m.throughput = *t.throughput;
    } else {
      const double speedup = t.speedup.value_or(fn->default_speedup);
      const double given = cpu_rate ? cpu_rate(fn->id) : 0;
      const double base = given > 0 ? given : funcs::software_throughput(fn->id);
      m.throughput = speedup > 0 ? speedup * base : 0;
    }
    m.latency_s = t.latency_s;
    m.reconfig_s = bitstream && rtl::find_rtl_entry(fn->id) != nullptr ? bitstream_s : t.reconfig_s;
    m.bandwidth_bps = t.bandwidth_bps;
  }
  return models;
}

DeviceMemoryInfo emu_memory(const config::EmuSettings& e) {
  DeviceMemoryInfo m;
  m.local_bytes = e.local_bytes;
  m.copy_engines = e.local_bytes > 0 ? e.copy_engines : 0;
  m.copy_engine_bps = e.copy_engine_bps;
  m.copy_engine_setup_s = e.copy_engine_setup_s;
  m.reaches_host_memory = true;
  m.transfer.link_bps = e.link_bps;
  m.transfer.dma_setup_s = e.dma_setup_s;
  m.transfer.sg_bps = e.sg_bps;
  m.transfer.sg_setup_s = e.sg_setup_s;
  m.transfer.sg_page_s = e.sg_page_s;
  m.transfer.local_bps = e.local_bps;
  return m;
}

// The modelled time of a job: D_a, then its data streaming through the accelerator (the transfer of the
// job's access method) overlapped with the computation W / X_a.
int64_t job_ns(const model::AccelModel& m, const TransferModel& transfer, const DeviceJob& job) {
  if (job.access.host_bytes() == 0 && job.access.local_bytes == 0) return m.job_ns(job.call.workload);
  double compute = 0;
  if (job.call.workload > 0) compute = m.throughput > 0 ? static_cast<double>(job.call.workload) / m.throughput : INFINITY;
  const double ns = std::ceil((m.latency_s + transfer.job_s(job.access.method, job.access.host_bytes(), job.access.local_bytes, job.access.pages, compute)) * 1e9);
  return ns < 9.2e18 ? static_cast<int64_t>(ns) : INT64_MAX;
}

EmuDevice::EmuDevice(uint32_t slots, const std::array<model::AccelModel, TANDEM_FN_MAX>& models,
                     const DeviceMemoryInfo& memory)
    : loaded_(slots, UINT16_MAX), held_(slots) {
  info_.memory = memory;
  info_.kind = "emu";
  info_.name = "emu";
  info_.description = "emulated fabric: modelled timing, reference results";
  info_.slots = slots;
  info_.models = models;
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) info_.loadable.set(fn->id);
  info_.loadable.reset(TANDEM_FN_COPY);  // transfers run on the copy engines, not in accelerator slots
}

void EmuDevice::configure(uint32_t slot, uint16_t function) {
  if (slot < loaded_.size()) loaded_[slot] = function;
}

void EmuDevice::submit(uint32_t slot, const DeviceJob& job) {
  DeviceCompletion c;
  c.token = job.token;
  c.slot = slot;
  const funcs::FunctionInfo* fn = funcs::find_function(job.call.function);
  if (fn == nullptr || slot >= loaded_.size() || loaded_[slot] != job.call.function) {
    c.status = Status::device_error;  // the engine started a job on the wrong slot: a bug, reported as such
    c.not_before = job.start_ns;
    held_.hold(c, job.start_ns);
    return;
  }
  c.value = fn->run_accel(job.call, 0, job.call.workload);
  c.device_ns = job_ns(info_.models[job.call.function], info_.memory.transfer, job);
  // Saturating: an unbounded configuration (max_job_ms = 0) may model a job beyond int64 time.
  c.not_before = c.device_ns > INT64_MAX - job.start_ns ? INT64_MAX : job.start_ns + c.device_ns;
  held_.hold(c, job.start_ns);
}

}  // namespace tandem::devices
