// One asynchronous interface for every accelerator backend: the emulated fabric, Verilator RTL models,
// OpenCL and CUDA devices (docs/design.md, "Devices").
//
// The dispatcher starts a job with submit(), which returns at once, and collects finished jobs with
// poll() in its loop; it never waits on a device. A device whose work finishes on other threads
// (Verilator workers, driver callbacks) bumps its wake word so that a sleeping dispatcher wakes. A
// device describes itself (DeviceInfo), so the engine, the monitor, the client's cost model and
// `tandem status` ask it instead of keeping a table per kind.
//
// Threading: every method is called from the dispatcher thread only (or before it starts); a device
// hands results from its own threads over through its own inbox, drained in poll().
// Errors: runtime paths never throw: a job that fails completes with a status (DEVICE_ERROR, TIMEOUT,
// NO_MEMORY...). Constructors are set-up code and throw tandem::Error naming the device and the problem.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "abi/service.hpp"
#include "abi/status.hpp"
#include "funcs/function.hpp"
#include "model/access_model.hpp"
#include "devices/device_tlb.hpp"
#include "model/accel_model.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::devices {

// What moving a job's data costs the device, per access method (model/access_model.hpp).
using TransferModel = model::TransferModel;

// Where a device's slots can reach data: host memory over a link, its own local memory.
struct DeviceMemoryInfo {
  uint64_t local_bytes = 0;         // device-local memory (0: none)
  uint32_t local_alignment = 64;    // where its buffers start: a multiple of this
  uint32_t copy_engines = 0;        // engines that fill and drain local memory, shared by the slots
  double copy_engine_bps = 0;       // one copy engine's bandwidth
  double copy_engine_setup_s = 0;   // per transfer
  bool reaches_host_memory = true;  // slots work in place on host memory (zero-copy)
  // The largest buffer one job may name (0: any size): an OpenCL device's largest allocation, a CUDA
  // persistent slot's pinned staging. The client's partitioner keeps every job within it; a larger
  // one completes with JOB_TOO_LARGE.
  uint64_t max_job_buffer_bytes = 0;
  TransferModel transfer;
};

// What a device offers, fixed once it is built.
struct DeviceInfo {
  std::string kind;         // "emu", "rtl", "opencl", "cuda"
  std::string name;         // unique within a runtime (the kind, unless two devices share it)
  std::string description;  // one line for people: what it is and how it is timed
  // What the device's discovery found on the machine, one line each (OpenCL: every platform and device,
  // `clinfo -l` style), for `tandem status`; empty where there is nothing to list.
  std::vector<std::string> found;
  uint32_t slots = 0;
  std::bitset<TANDEM_FN_MAX> loadable;                    // functions a slot can hold
  // Functions the device has a kernel for that did not build here (OpenCL): not loadable, and a
  // configured resident one is left out with a warning rather than refused (devices::make_devices).
  std::bitset<TANDEM_FN_MAX> not_built;
  std::array<model::AccelModel, TANDEM_FN_MAX> models{};  // per function: X_a, D_a, reconfiguration, bandwidth
  // A device that copies some methods' jobs into its own memory and works on others in place (OpenCL
  // with access = "job"): per function, X_a and D_a measured with the copies, where `models` are
  // measured in place (model::DeviceCopyCosts). All zero: every method costs the device the same.
  std::array<model::AccelModel, TANDEM_FN_MAX> copy_models{};
  DeviceMemoryInfo memory;
};

// How a job's buffers reach the device, and how much data they move.
struct JobAccess {
  uint8_t method = TANDEM_ACCESS_ZERO_COPY;  // TANDEM_ACCESS_*: how its host buffers are reached
  uint64_t bytes_in = 0;                     // host bytes the job reads
  uint64_t bytes_out = 0;                    // host bytes it writes
  uint64_t local_bytes = 0;                  // bytes of its device-local buffers
  uint32_t pages = 0;                        // scatter-gather: page-list entries
  uint64_t host_bytes() const { return bytes_in + bytes_out; }
};

// A session's service-request channel as a device sees it (rt::ServiceChannel over abi::ServiceProducer):
// a job posts a request, the client answers, the job resumes. Dispatcher thread only.
class ServicePort {
 public:
  using Check = abi::ServiceProducer::Check;
  // ok: posted, `ticket` names it; queue_full: every slot is taken (try again); service_failed: the
  // session has no service ring; cancelled: the session closed.
  virtual Status post(const abi::ServiceRequest& request, uint32_t& ticket) = 0;
  // pending, answered (`answer`), or failed (`why`: service_failed, cancelled). Not pending: the
  // request's slot is free again.
  virtual Check check(uint32_t ticket, uint64_t& answer, Status& why) = 0;
  virtual void cancel(uint32_t ticket) = 0;

 protected:
  ~ServicePort() = default;
};

// A job as the device sees it.
struct DeviceJob {
  uint64_t token = 0;    // the driver's id, handed back in the completion
  int64_t start_ns = 0;  // when the driver started it (CLOCK_MONOTONIC); device time counts from here
  JobAccess access;
  funcs::Call call;      // buffers already translated into this process's addresses (or staging)
  uint32_t asid = 0;     // the session's address-space id (tags the device TLB's entries)
  uint8_t address_mode = TANDEM_ADDRESS_AISLE;  // TANDEM_ADDRESS_*: PHASEV translates through the device TLB
  uint64_t faulted_pages = 0;  // pages the driver faulted in for it before it started (demand paging)
  // An indirect dispatch's argument block (TANDEM_FLAG_ARGS_INDIRECT): its client address and bytes (0:
  // the arguments came inline). Under PHASE/V the device fetches it through its TLB before starting.
  uint64_t args_address = 0;
  uint32_t args_bytes = 0;
  ServicePort* service = nullptr;  // functions that ask their client (service_chain): its session's channel
};

struct DeviceCompletion {
  uint64_t token = 0;
  uint32_t slot = 0;       // the device's own slot number
  Status status = Status::ok;
  int64_t value = 0;
  int64_t device_ns = 0;   // the job's time on the device: modelled, cycle-counted or measured
  int64_t not_before = 0;  // its modelled end (start + device time); 0 when the device keeps no timing
  TlbCounts tlb;           // its translations through the device TLB (PHASE/V), walks and faults served
};

// A copy engine's transfer on a device whose local memory is its own (OpenCL), not the host mapping the
// runtime's LocalMemory hands out: `dst` and `src` as the `copy` call names them (LocalMemory's
// addresses stand for local buffers). Runs on engine `engine`'s own thread and may block.
struct TransferDone {
  Status status = Status::ok;
  int64_t device_ns = 0;  // measured
};
using LocalTransfer = std::function<TransferDone(uint32_t engine, void* dst, const void* src, uint64_t bytes)>;

struct SlotHealth {
  bool in_service = true;  // false: the device took the slot out of service after a fault
  std::string last_error;  // "" when none
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;
  // Begins loading `function` into `slot` and returns at once; the engine waits the model's
  // reconfiguration delay. A device that works on its own threads finishes the load before the slot's
  // next job.
  virtual void configure(uint32_t slot, uint16_t function) = 0;
  // Starts `job` on `slot` and returns at once (the engine runs one job per slot at a time). The job is
  // reported exactly once by poll(), whatever happens to it.
  virtual void submit(uint32_t slot, const DeviceJob& job) = 0;
  // Appends every finished job whose not_before has passed by `now`. Never blocks.
  virtual void poll(int64_t now, std::vector<DeviceCompletion>& out) = 0;
  // The earliest not_before of a finished job still held back; INT64_MAX if none.
  virtual int64_t next_deadline() const = 0;
  // A futex word the device increments (release) and wakes when a completion becomes ready on another
  // thread; nullptr when completions only appear on the dispatcher's thread (poll/next_deadline say when).
  virtual const uint32_t* wake_word() const { return nullptr; }
  // TLB shoot-down: the session `asid` unmapped [address, address + bytes) (bytes 0: everything, the
  // session closed). A device with a TLB forgets those translations before its next access.
  virtual void shoot_down(uint32_t asid, uint64_t address, uint64_t bytes) { (void)asid, (void)address, (void)bytes; }
  // Set-up, before the dispatcher starts: the runtime's device-local memory is this device's, and
  // [base, base + bytes) are the addresses its buffers translate to. A device that keeps the data in
  // memory of its own (OpenCL: one buffer on the device) maps them there; the emulated fabric works on
  // that host mapping itself. Throws tandem::Error if the memory cannot be had.
  virtual void attach_local_memory(char* base, uint64_t bytes) { (void)base, (void)bytes; }
  // How its copy engines move data to and from that memory; empty: a copy on the host mapping.
  virtual LocalTransfer local_transfer() { return {}; }
  virtual SlotHealth slot_health(uint32_t slot) const {
    (void)slot;
    return {};
  }
  // slot_health(slot).in_service without the message (the dispatcher asks after every failed job, and on
  // every poll while a slot is out of service).
  virtual bool slot_in_service(uint32_t slot) const { return slot_health(slot).in_service; }
  // One line for `tandem status` on what the device did beyond its slots' jobs ("" = nothing to say):
  // the OpenCL device's batching.
  virtual std::string activity() const { return {}; }
};

}  // namespace tandem::devices
