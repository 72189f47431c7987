#include "devices/emu/emu_device.hpp"

#include <algorithm>
#include <cmath>

#include "devices/rtl/rtl_catalog.hpp"
#include "funcs/ref/service_chain_ref.hpp"
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

TlbSettings emu_tlb(const config::EmuSettings& e) {
  TlbSettings t;
  t.entries = e.tlb_entries;
  t.ways = e.tlb_ways;
  t.per_slot = e.tlb_scope == "per_slot";
  t.walk_reads = e.tlb_walk_reads;
  t.read_s = e.tlb_read_s;
  return t;
}

namespace {

// The device's view of a pointer-following job's memory: every access goes through the TLB first
// (PHASE/V; a miss is a page walk), then through the session's port (windows, demand paging).
class TlbPort final : public funcs::MemoryPort {
 public:
  TlbPort(funcs::MemoryPort& inner, DeviceTlb* tlb, uint32_t slot, uint32_t asid, TlbCounts& counts)
      : inner_(inner), tlb_(tlb), slot_(slot), asid_(asid), counts_(counts) {}
  bool read(uint64_t address, void* dst, uint32_t bytes) override {
    if (tlb_ != nullptr && bytes > 0) {
      const uint32_t shift = tlb_->settings().page_shift;
      for (uint64_t page = address >> shift; page <= (address + bytes - 1) >> shift; ++page) {
        (tlb_->lookup(slot_, asid_, page << shift) ? counts_.hits : counts_.misses) += 1;
      }
    }
    ++reads_;
    if (inner_.read(address, dst, bytes)) return true;
    status_ = inner_.status();
    return false;
  }
  uint64_t reads() const { return reads_; }

 private:
  funcs::MemoryPort& inner_;
  uint64_t reads_ = 0;
  DeviceTlb* tlb_;
  uint32_t slot_, asid_;
  TlbCounts& counts_;
};

}  // namespace

EmuDevice::EmuDevice(uint32_t slots, const std::array<model::AccelModel, TANDEM_FN_MAX>& models,
                     const DeviceMemoryInfo& memory, const TlbSettings& tlb)
    : waits_(slots), tlb_(tlb, slots), loaded_(slots, UINT16_MAX), held_(slots) {
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
  if (fn->uses_service) return start_service_job(slot, job);
  const model::AccelModel& m = info_.models[job.call.function];
  double stall_s = 0;
  // PHASE/V: the device fetches an indirect dispatch's argument block itself before the job starts
  // (thesis 5.4.5: the CSR manager reads the argument list through the IOMMU), so the block's pages go
  // through the TLB; a walk costs streaming reads whatever the function. Counted apart so that a
  // pointer-following job's walks below are charged at its own read time only.
  TlbCounts args_tlb;
  if (job.address_mode == TANDEM_ADDRESS_PHASEV && job.args_bytes > 0) {
    translate_range(slot, job.asid, job.args_address, job.args_bytes, args_tlb);
    stall_s += static_cast<double>(args_tlb.misses) * tlb_.settings().walk_reads * tlb_.settings().read_s;
  }
  if (fn->follows_pointers) {
    // Its time: D_a plus one unit (a dependent read) per node it actually visited, each walk costing
    // `walk_reads` such reads, plus the faults' service time.
    uint64_t reads = 0;
    c.value = run_through_port(slot, job, *fn, c, stall_s, reads);
    const double read_s = m.throughput > 0 ? 1.0 / m.throughput : tlb_.settings().read_s;
    stall_s += static_cast<double>(c.tlb.misses) * tlb_.settings().walk_reads * read_s;
    DeviceJob walked = job;
    walked.call.workload = reads;
    c.device_ns = job_ns(m, info_.memory.transfer, walked);
  } else {
    c.value = fn->run_accel(job.call, 0, job.call.workload);
    if (job.address_mode == TANDEM_ADDRESS_PHASEV) translate_buffers(slot, job, *fn, c.tlb);
    c.tlb.faults += job.faulted_pages;
    stall_s += static_cast<double>(c.tlb.misses) * tlb_.settings().walk_reads * tlb_.settings().read_s;
    c.device_ns = job_ns(m, info_.memory.transfer, job);
  }
  c.tlb += args_tlb;
  const double stall_ns = std::ceil(stall_s * 1e9);
  if (stall_ns > 0) c.device_ns = stall_ns < static_cast<double>(INT64_MAX - c.device_ns) ? c.device_ns + static_cast<int64_t>(stall_ns) : INT64_MAX;
  // Saturating: an unbounded configuration (max_job_ms = 0) may model a job beyond int64 time.
  c.not_before = c.device_ns > INT64_MAX - job.start_ns ? INT64_MAX : job.start_ns + c.device_ns;
  held_.hold(c, job.start_ns);
}

int64_t EmuDevice::run_through_port(uint32_t slot, const DeviceJob& job, const funcs::FunctionInfo& fn,
                                    DeviceCompletion& c, double& stall_s, uint64_t& reads) {
  if (job.call.memory == nullptr) {  // the driver gave it no way to reach memory: a driver bug
    c.status = Status::device_error;
    return 0;
  }
  DeviceTlb* tlb = job.address_mode == TANDEM_ADDRESS_PHASEV ? &tlb_ : nullptr;
  TlbPort port(*job.call.memory, tlb, slot, job.asid, c.tlb);
  funcs::Call call;
  call.copy_from(job.call);
  call.memory = &port;
  const int64_t value = fn.run_accel(call, 0, call.workload);
  reads = port.reads();
  c.tlb.faults += job.call.memory->faults();
  stall_s += static_cast<double>(job.call.memory->fault_ns()) * 1e-9;  // the job waited for the CPU to serve them
  if (port.status() != Status::ok) c.status = port.status();
  return c.status == Status::ok ? value : 0;
}

void EmuDevice::translate_buffers(uint32_t slot, const DeviceJob& job, const funcs::FunctionInfo& fn, TlbCounts& counts) {
  funcs::BufferList buffers;
  uint64_t workload = 0;
  if (fn.describe({job.call.args.data(), job.call.arg_count}, workload, buffers) != Status::ok) return;
  for (uint32_t i = 0; i < buffers.count; ++i) {
    const uint64_t address = job.call.args[buffers.items[i].arg];
    const uint64_t bytes = buffers.items[i].bytes;
    if (bytes == 0 || (address & TANDEM_DEVICE_ADDRESS_BIT) != 0) continue;  // device-local: not translated
    translate_range(slot, job.asid, address, bytes, counts);
  }
}

void EmuDevice::translate_range(uint32_t slot, uint32_t asid, uint64_t address, uint64_t bytes, TlbCounts& counts) {
  const uint32_t shift = tlb_.settings().page_shift;
  for (uint64_t page = address >> shift; page <= (address + bytes - 1) >> shift; ++page) {
    (tlb_.lookup(slot, asid, page << shift) ? counts.hits : counts.misses) += 1;
  }
}

// ---- service requests (FastPath): a job posts a request to its client, waits held in its slot, and
// resumes with the answer at the next poll that sees it. Its device time is the real time it took.

void EmuDevice::start_service_job(uint32_t slot, const DeviceJob& job) {
  ServiceWait& w = waits_[slot];
  w = ServiceWait{};
  w.active = true;
  w.job = job;
  w.value = job.call.args[2];  // the seed
  ++waiting_;
  advance_service(slot, job.start_ns);
}

bool EmuDevice::advance_service(uint32_t slot, int64_t now) {
  ServiceWait& w = waits_[slot];
  if (w.step >= w.job.call.args[1]) {
    finish_service(slot, Status::ok, now);
    return false;
  }
  if (w.job.service == nullptr) {  // a session without a service ring: nobody to ask
    finish_service(slot, Status::service_failed, now);
    return false;
  }
  abi::ServiceRequest request;
  request.service = static_cast<uint32_t>(w.job.call.args[0]);
  request.token = w.job.token;
  request.args = funcs::ref::service_chain_args(w.value, w.step, w.job.call.args[2]);
  const Status s = w.job.service->post(request, w.ticket);
  if (s == Status::queue_full) {  // every slot of the ring is out: try again at the next poll
    w.posted = false;
    if (w.deadline == 0) w.deadline = now + service_timeout_ns_;
    return true;
  }
  if (s != Status::ok) {
    finish_service(slot, s, now);
    return false;
  }
  w.posted = true;
  w.deadline = now + service_timeout_ns_;
  return true;
}

void EmuDevice::finish_service(uint32_t slot, Status status, int64_t now) {
  ServiceWait& w = waits_[slot];
  DeviceCompletion c;
  c.token = w.job.token;
  c.slot = slot;
  c.status = status;
  c.value = status == Status::ok ? static_cast<int64_t>(w.value) : 0;
  c.device_ns = now > w.job.start_ns ? now - w.job.start_ns : 0;
  c.not_before = now;
  w.active = false;
  w.job.service = nullptr;
  --waiting_;
  held_.hold(c, now);
}

void EmuDevice::poll(int64_t now, std::vector<DeviceCompletion>& out) {
  for (uint32_t slot = 0; waiting_ > 0 && slot < waits_.size(); ++slot) {
    ServiceWait& w = waits_[slot];
    if (!w.active) continue;
    // Every answer that came: a chain whose client answers at once runs several steps in one poll.
    for (;;) {
      if (!w.posted) {
        if (!advance_service(slot, now)) break;
        if (!w.posted) {
          if (now >= w.deadline) finish_service(slot, Status::timeout, now);
          break;
        }
      }
      uint64_t answer = 0;
      Status why = Status::ok;
      const ServicePort::Check got = w.job.service->check(w.ticket, answer, why);
      if (got == ServicePort::Check::pending) {
        if (now >= w.deadline) {
          w.job.service->cancel(w.ticket);  // frees the ring's slot; a late answer is ignored
          finish_service(slot, Status::timeout, now);
        }
        break;
      }
      if (got == ServicePort::Check::failed) {
        finish_service(slot, why, now);
        break;
      }
      w.value = funcs::ref::service_chain_next(w.value, answer);
      ++w.step;
      w.posted = false;
      w.deadline = 0;
      if (!advance_service(slot, now)) break;
    }
  }
  held_.release(now, out);
}

int64_t EmuDevice::next_deadline() const {
  int64_t next = held_.next_deadline();
  for (uint32_t slot = 0; waiting_ > 0 && slot < waits_.size(); ++slot) {
    if (waits_[slot].active) next = std::min(next, waits_[slot].posted ? waits_[slot].deadline : 0);
  }
  return next;
}

void EmuDevice::shoot_down(uint32_t asid, uint64_t address, uint64_t bytes) {
  if (bytes == 0) {
    tlb_.shoot_down(asid);
  } else {
    tlb_.shoot_down(asid, address, bytes);
  }
}

}  // namespace tandem::devices
