#include "devices/rtl/rtl_device.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

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
    : worker_nice_(config.device.rtl.worker_nice),
      fabric_(config.device.rtl.slots, fabric_options(config.device.rtl, fabric)),
      held_(config.device.rtl.slots),
      health_(config.device.rtl.slots) {
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
  workers_.resize(r.slots);
  arrived_.reserve(r.slots);
}

RtlDevice::~RtlDevice() {
  for (auto& w : workers_) {
    if (!w) continue;
    {
      std::lock_guard lock(w->mutex);
      w->stop = true;
    }
    w->wake.notify_one();
    w->thread.join();
  }
}

void RtlDevice::post(uint32_t slot, Task task) {
  if (slot >= workers_.size()) {
    if (!task.configure) {  // no such slot: the job still completes, with a status
      DeviceCompletion c;
      c.token = task.job.token;
      c.slot = slot;
      c.status = Status::device_error;
      inbox_.push(c);
    }
    return;
  }
  std::unique_ptr<Worker>& w = workers_[slot];
  if (!w) {
    w = std::make_unique<Worker>();
    Worker& ref = *w;
    w->thread = std::thread([this, slot, &ref] { work(slot, ref); });
  }
  {
    std::lock_guard lock(w->mutex);
    w->tasks.push_back(std::move(task));
  }
  w->wake.notify_one();
}

void RtlDevice::configure(uint32_t slot, uint16_t function) {
  Task t;
  t.configure = true;
  t.function = function;
  post(slot, std::move(t));
}

void RtlDevice::submit(uint32_t slot, const DeviceJob& job) {
  Task t;
  t.job.token = job.token;
  t.job.start_ns = job.start_ns;
  t.job.call.copy_from(job.call);
  post(slot, std::move(t));
}

void RtlDevice::work(uint32_t slot, Worker& w) {
  // Below the dispatcher and the applications: a simulation may use what CPU is left.
  if (worker_nice_ > 0) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), worker_nice_);
  const std::string name = "tandem-rtl-" + std::to_string(slot);
  pthread_setname_np(pthread_self(), name.c_str());
  for (;;) {
    Task task;
    {
      std::unique_lock lock(w.mutex);
      w.wake.wait(lock, [&] { return w.stop || !w.tasks.empty(); });
      if (w.stop) return;
      task = std::move(w.tasks.front());
      w.tasks.pop_front();
    }
    if (task.configure) {
      fabric_.configure(slot, task.function);
      if (fabric_.loaded(slot) != task.function) {
        std::lock_guard lock(health_mutex_);
        health_[slot].last_error = fabric_.last_error(slot);
      }
      continue;
    }
    const ExecResult r = fabric_.execute(slot, task.job.call);
    DeviceCompletion c;
    c.token = task.job.token;
    c.slot = slot;
    c.status = r.status;
    c.value = r.value;
    c.device_ns = r.device_ns;
    c.not_before = r.device_ns > INT64_MAX - task.job.start_ns ? INT64_MAX : task.job.start_ns + r.device_ns;
    if (r.status != Status::ok) {
      std::lock_guard lock(health_mutex_);
      health_[slot].last_error = fabric_.last_error(slot);
    }
    inbox_.push(c);
  }
}

void RtlDevice::poll(int64_t now, std::vector<DeviceCompletion>& out) {
  inbox_.take(arrived_);
  for (const DeviceCompletion& c : arrived_) held_.hold(c, now);
  arrived_.clear();
  held_.release(now, out);
}

SlotHealth RtlDevice::slot_health(uint32_t slot) const {
  std::lock_guard lock(health_mutex_);
  return slot < health_.size() ? health_[slot] : SlotHealth{false, "no such slot"};
}

}  // namespace tandem::devices::rtl
