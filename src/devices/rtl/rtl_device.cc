#include "devices/rtl/rtl_device.hpp"

#include <cstdio>
#include <string>

#include "devices/rtl/rtl_catalog.hpp"

namespace tandem::devices::rtl {

namespace {

RtlFabricOptions fabric_options(const config::RtlSettings& r, RtlFabricOptions o) {
  o.accelerator.clock_hz = r.clock_hz;
  o.accelerator.max_cycles = r.max_cycles;
  return o;
}

}  // namespace

RtlDevice::RtlDevice(const config::Config& config, const RtlFabricOptions& fabric)
    : fabric_(config.device.rtl.slots, fabric_options(config.device.rtl, fabric)),
      completions_(config.device.rtl.slots),
      health_(config.device.rtl.slots),
      workers_(config.device.rtl.slots, "tandem-rtl", config.device.rtl.worker_nice) {
  const config::RtlSettings& r = config.device.rtl;
  info_.kind = "rtl";
  info_.name = "rtl";
  char description[128];
  std::snprintf(description, sizeof description,
                "Verilated models of rtl/ at %.1f MHz, cycle-counted timing, one simulation thread per slot",
                r.clock_hz / 1e6);
  info_.description = description;
  info_.slots = r.slots;
  info_.models = rtl_models(config);
  for (const RtlCatalogEntry& e : rtl_catalog()) info_.loadable.set(e.function);
}

RtlDevice::~RtlDevice() = default;

void RtlDevice::configure(uint32_t slot, uint16_t function) {
  if (slot >= workers_.slots()) return;
  workers_.post(slot, [this, slot, function] {
    fabric_.configure(slot, function);
    if (fabric_.loaded(slot) != function) note_error(slot);
  });
}

void RtlDevice::submit(uint32_t slot, const DeviceJob& job) {
  if (slot >= workers_.slots()) {  // no such slot: the job still completes, with a status
    DeviceCompletion c;
    c.token = job.token;
    c.slot = slot;
    c.status = Status::device_error;
    completions_.push(c);
    return;
  }
  auto copy = std::make_shared<DeviceJob>();
  copy->token = job.token;
  copy->start_ns = job.start_ns;
  copy->access = job.access;
  copy->call.copy_from(job.call);
  workers_.post(slot, [this, slot, copy] { run_job(slot, *copy); });
}

void RtlDevice::run_job(uint32_t slot, const DeviceJob& job) {
  const ExecResult r = fabric_.execute(slot, job.call);
  DeviceCompletion c;
  c.token = job.token;
  c.slot = slot;
  c.status = r.status;
  c.value = r.value;
  c.device_ns = r.device_ns;
  c.not_before = r.device_ns > INT64_MAX - job.start_ns ? INT64_MAX : job.start_ns + r.device_ns;
  if (r.status != Status::ok) note_error(slot);
  completions_.push(c);
}

void RtlDevice::note_error(uint32_t slot) {
  std::lock_guard lock(health_mutex_);
  health_[slot].last_error = fabric_.last_error(slot);
}

SlotHealth RtlDevice::slot_health(uint32_t slot) const {
  std::lock_guard lock(health_mutex_);
  return slot < health_.size() ? health_[slot] : SlotHealth{false, "no such slot"};
}

}  // namespace tandem::devices::rtl
