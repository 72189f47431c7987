#include "devices/rtl/rtl_device.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <string>

#include "devices/rtl/rtl_catalog.hpp"

namespace tandem::devices::rtl {

namespace {

RtlFabricOptions fabric_options(const config::RtlSettings& r, RtlFabricOptions o) {
  o.accelerator.clock_hz = r.clock_hz;
  o.accelerator.max_cycles = r.max_cycles;
  return o;
}

// list_walk's memory timing follows the emulated device's TLB settings ([device.emu] tlb_read_ns,
// tlb_walk_reads), so both devices model the same memory.
RtlFabricOptions memory_options(const config::Config& c, RtlFabricOptions o) {
  o.accelerator.mem_read_cycles =
      static_cast<uint32_t>(std::clamp(std::round(c.device.emu.tlb_read_s * c.device.rtl.clock_hz), 1.0, 1e6));
  o.accelerator.walk_reads = c.device.emu.tlb_walk_reads;
  return o;
}

}  // namespace

RtlDevice::RtlDevice(const config::Config& config, const RtlFabricOptions& fabric)
    : fabric_(config.device.rtl.slots, memory_options(config, fabric_options(config.device.rtl, fabric))),
      completions_(config.device.rtl.slots),
      health_(config.device.rtl.slots),
      seen_shoot_downs_(config.device.rtl.slots, 0),
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
  info_.loadable.set(kListWalkAccelerator.function);
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
  copy->asid = job.asid;
  copy->address_mode = job.address_mode;
  if (copy->call.memory != nullptr) {
    // A job that reads client memory through its port (list_walk) translates through the session's
    // tables, which belong to the dispatcher thread (engine::Translator is not thread-safe): it runs on
    // the slot's thread as usual, but the caller waits for it, so the tables are never used from two
    // threads at once. Such jobs therefore hold the dispatcher for their simulation time.
    auto finished = std::make_shared<std::promise<void>>();
    std::future<void> done = finished->get_future();
    workers_.post(slot, [this, slot, copy, finished] {
      run_job(slot, *copy);
      finished->set_value();
    });
    done.wait();
    return;
  }
  workers_.post(slot, [this, slot, copy] { run_job(slot, *copy); });
}

void RtlDevice::run_job(uint32_t slot, const DeviceJob& job) {
  MemoryContext memory{job.asid, job.address_mode, false};
  const uint64_t shoot_downs = shoot_downs_.load(std::memory_order_acquire);
  if (shoot_downs != seen_shoot_downs_[slot]) {
    memory.flush_tlb = true;
    seen_shoot_downs_[slot] = shoot_downs;
  }
  const ExecResult r = fabric_.execute(slot, job.call, memory);
  DeviceCompletion c;
  c.token = job.token;
  c.slot = slot;
  c.status = r.status;
  c.value = r.value;
  c.device_ns = r.device_ns;
  if (job.address_mode == TANDEM_ADDRESS_PHASEV) c.tlb = r.tlb;  // like the emulated device: PHASE/V walks
  c.not_before = r.device_ns > INT64_MAX - job.start_ns ? INT64_MAX : job.start_ns + r.device_ns;
  if (r.status != Status::ok) note_error(slot);
  completions_.push(c);
}

void RtlDevice::shoot_down(uint32_t asid, uint64_t address, uint64_t bytes) {
  (void)asid, (void)address, (void)bytes;  // the Verilog TLB has no ASID tags: every slot flushes all
  shoot_downs_.fetch_add(1, std::memory_order_release);
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
