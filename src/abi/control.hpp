// The control protocol between libtandem and tandemd, over a Unix stream socket: versioned,
// length-framed, bounded. Every message is a 16-byte frame header followed by `length` payload bytes;
// the payload of each request type has one exact size (checked), except the two variable-size replies.
// Memory travels as file descriptors (memfd) with SCM_RIGHTS, never as addresses the daemon would
// trust: the daemon maps what it is given and records the client's own address only for translation.
//
//   client                                   daemon
//   hello {abi, pid}                   ->    hello_ok {asid, limits} + metrics page fd (read-only)
//   create_queue {capacity}            ->    queue_ok {queue, bytes} + ring memfd (the daemon formats it)
//   destroy_queue {queue}              ->    ok
//   register_memory {base, bytes, off} + memfd  ->  region_ok {region}
//   unregister_memory {region}         ->    ok
//   status                             ->    status_reply {JSON text}
//   trace_attach                       ->    trace_area_ok {bytes, rings, capacity} + trace area memfd
//   trace_control {op}                 ->    trace_state {counters}      (start, stop or query tracing)
//   trace_dump {clear}                 ->    trace_dump_ok {counters} + memfd holding the dump (abi/trace.hpp)
//   attach_service {slots} + memfd     ->    ok        (the session's service-request ring, abi/service.hpp)
//   bye                                ->    (connection closed)
//   any malformed request              ->    error {status, message}; framing errors also close
#pragma once

#include <cstddef>
#include <cstdint>

namespace tandem::abi::control {

inline constexpr uint32_t kMagic = 0x4c525443;  // "CTRL"
// 2: hello_ok lists the daemon's devices; 3: tracing; 4: host figures; 5: the largest job (time, buffers);
// 6: each function's timing with copies (FunctionEntry::copy_*)
inline constexpr uint16_t kVersion = 6;
inline constexpr uint32_t kMaxPayload = 64 * 1024;  // no frame may announce more

enum class MessageType : uint16_t {
  hello = 1,
  hello_ok = 2,
  create_queue = 3,
  queue_ok = 4,
  destroy_queue = 5,
  register_memory = 6,
  region_ok = 7,
  unregister_memory = 8,
  status = 9,
  status_reply = 10,
  bye = 11,
  ok = 12,
  error = 13,
  alloc_local = 14,  // a device-local buffer for the session -> local_ok
  local_ok = 15,
  free_local = 16,   // -> ok
  set_address_mode = 17,  // how the session's later jobs name memory (TANDEM_ADDRESS_*) -> ok
  trace_attach = 18,   // the session's trace area (its client threads' record rings) -> trace_area_ok
  trace_area_ok = 19,
  trace_control = 20,  // start, stop or query tracing -> trace_state (no hello needed, like status)
  trace_state = 21,
  trace_dump = 22,     // the records collected so far -> trace_dump_ok (no hello needed)
  trace_dump_ok = 23,
  attach_service = 24,  // the session's service-request ring (memfd the client formatted) -> ok
};
inline constexpr uint16_t kLastMessageType = 24;

struct FrameHeader {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint16_t type = 0;
  uint32_t length = 0;      // payload bytes after this header
  uint32_t request_id = 0;  // echoed in the reply
};
static_assert(sizeof(FrameHeader) == 16);

struct Hello {
  uint32_t abi_version = 0;  // TANDEM_ABI_VERSION of the client
  uint32_t pid = 0;          // informational; the daemon trusts SO_PEERCRED instead
};
static_assert(sizeof(Hello) == 8);

// Followed by `device_count` DeviceEntry records, each followed by its `function_count` FunctionEntry
// records: the devices the daemon drives (slot ranges in order) and the timing of what each can hold,
// so that a client applies the calibration made for the device that runs a function. Then one
// HostEntry and its `function_count` HostRate records: this machine's CPU figures.
struct HelloOk {
  uint32_t asid = 0;             // the session's address-space id, assigned by the daemon
  uint32_t slot_count = 0;
  uint64_t metrics_bytes = 0;    // size of the metrics page mapping (fd attached)
  uint32_t max_queues = 0;       // per-session limits
  uint32_t max_jobs_in_flight = 0;
  uint64_t max_registered_bytes = 0;
  uint32_t device_count = 0;
  uint32_t reserved = 0;
  int64_t max_job_ns = 0;        // the engine's bound on a job's modelled time (0: none): JOB_TOO_LARGE beyond
};
static_assert(sizeof(HelloOk) == 48);

inline constexpr uint32_t kMaxDevices = 16;
inline constexpr size_t kDeviceNameBytes = 16;

struct DeviceEntry {
  char kind[kDeviceNameBytes] = {};  // NUL-padded: "emu", "rtl", ...
  char name[kDeviceNameBytes] = {};
  uint32_t first_slot = 0;
  uint32_t slots = 0;
  uint32_t function_count = 0;  // FunctionEntry records that follow (at most TANDEM_FN_MAX)
  uint32_t copy_engines = 0;
  // Its memory and what moving data costs it (devices::DeviceMemoryInfo): the client chooses each
  // call's access method with these.
  uint64_t local_bytes = 0;
  double copy_engine_bps = 0;
  double copy_engine_setup_s = 0;
  double link_bps = 0;
  double dma_setup_s = 0;
  double sg_bps = 0;
  double sg_setup_s = 0;
  double sg_page_s = 0;
  double local_bps = 0;
  uint64_t max_job_buffer_bytes = 0;  // the largest buffer one job may name (0: any)
};
static_assert(sizeof(DeviceEntry) == 128);

struct FunctionEntry {  // a function the device can hold, and its timing there (model::AccelModel)
  uint16_t function = 0;
  uint16_t reserved[3] = {};
  double throughput = 0;
  double latency_s = 0;
  double reconfig_s = 0;
  double bandwidth_bps = 0;
  // Its timing where the device copies a job's buffers (devices::DeviceInfo::copy_models; 0: the same
  // as in place). Since version 6.
  double copy_throughput = 0;
  double copy_latency_s = 0;
};
static_assert(sizeof(FunctionEntry) == 56);

// What the daemon measured of this machine's CPU when it started (funcs::software_throughput,
// funcs::cycles_per_second, rt::host_access_costs): a client on the same machine takes these rather than measuring them again,
// which cost each process about 20 ms of its first tandem_open (and more when many start at once).
struct HostEntry {
  uint32_t function_count = 0;  // HostRate records that follow (at most TANDEM_FN_MAX)
  uint32_t reserved = 0;
  double cycles_per_s = 0;  // the TSC's rate: what a `work` unit is (funcs::cycles_per_second)
  double memcpy_bps = 0;
  double gather_bps = 0;
  double gather_page_s = 0;
};
static_assert(sizeof(HostEntry) == 40);

struct HostRate {  // a function's software throughput on one core, units per second
  uint16_t function = 0;
  uint16_t reserved[3] = {};
  double units_per_s = 0;
};
static_assert(sizeof(HostRate) == 16);

struct CreateQueue {
  uint32_t capacity = 0;  // power of two
  uint32_t reserved = 0;
};
static_assert(sizeof(CreateQueue) == 8);

struct QueueOk {
  uint32_t queue_id = 0;
  uint32_t capacity = 0;
  uint64_t ring_bytes = 0;  // size of the ring mapping (fd attached)
};
static_assert(sizeof(QueueOk) == 16);

struct DestroyQueue {
  uint32_t queue_id = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(DestroyQueue) == 8);

inline constexpr uint32_t kRegionWritable = 1u << 0;

struct RegisterMemory {
  uint64_t client_base = 0;  // where the client mapped the region (page aligned)
  uint64_t bytes = 0;        // page multiple
  uint64_t fd_offset = 0;    // offset of client_base within the memfd (page aligned)
  uint32_t flags = 0;        // kRegionWritable
  uint32_t reserved = 0;
};
static_assert(sizeof(RegisterMemory) == 32);

struct RegionOk {
  uint32_t region_id = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(RegionOk) == 8);

struct UnregisterMemory {
  uint32_t region_id = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(UnregisterMemory) == 8);

struct AllocLocal {
  uint64_t bytes = 0;
};
static_assert(sizeof(AllocLocal) == 8);

struct LocalOk {   // also the body of free_local: the buffer's device address
  uint64_t device_address = 0;
};
static_assert(sizeof(LocalOk) == 8);

struct TraceAreaOk {
  uint64_t bytes = 0;     // size of the area's mapping (fd attached): abi::trace::area_bytes(rings, capacity)
  uint32_t rings = 0;
  uint32_t capacity = 0;
};
static_assert(sizeof(TraceAreaOk) == 16);

enum class TraceOp : uint32_t { query = 0, start = 1, stop = 2 };

struct TraceControl {
  uint32_t op = 0;  // TraceOp
  uint32_t reserved = 0;
};
static_assert(sizeof(TraceControl) == 8);

struct TraceDumpRequest {
  uint32_t clear = 0;  // 1: the daemon forgets what it hands out
  uint32_t reserved = 0;
};
static_assert(sizeof(TraceDumpRequest) == 8);

struct TraceState {  // rt::TraceCounters on the wire
  uint32_t enabled = 0;
  uint32_t sources = 0;
  uint64_t records = 0;
  uint64_t collected = 0;
  uint64_t dropped_full = 0;
  uint64_t dropped_store = 0;
  uint64_t dropped_unclaimed = 0;
  uint64_t dropped_corrupt = 0;
  int64_t started_ns = 0;
  uint64_t dump_bytes = 0;  // trace_dump_ok: the size of the dump's memfd
};
static_assert(sizeof(TraceState) == 72);
struct SetAddressMode {
  uint32_t mode = 0;  // tandem_address_mode_t
  uint32_t reserved = 0;
};
static_assert(sizeof(SetAddressMode) == 8);

struct AttachService {  // + the ring's memfd: round_to_pages(TANDEM_SERVICE_BYTES(slots)) bytes
  uint32_t slots = 0;    // 1..TANDEM_SERVICE_MAX_SLOTS
  uint32_t reserved = 0;
};
static_assert(sizeof(AttachService) == 8);

struct ErrorReply {  // followed by up to kMaxPayload - 8 bytes of message text
  uint32_t status = 0;  // tandem_status_t
  uint32_t reserved = 0;
};
static_assert(sizeof(ErrorReply) == 8);

// The exact payload size of a request or fixed reply; 0 for none; SIZE_MAX for variable (bounded).
constexpr size_t payload_size(MessageType t) {
  switch (t) {
    case MessageType::hello: return sizeof(Hello);
    case MessageType::hello_ok: return SIZE_MAX;  // HelloOk, then its device list
    case MessageType::create_queue: return sizeof(CreateQueue);
    case MessageType::queue_ok: return sizeof(QueueOk);
    case MessageType::destroy_queue: return sizeof(DestroyQueue);
    case MessageType::register_memory: return sizeof(RegisterMemory);
    case MessageType::region_ok: return sizeof(RegionOk);
    case MessageType::unregister_memory: return sizeof(UnregisterMemory);
    case MessageType::status: return 0;
    case MessageType::bye: return 0;
    case MessageType::ok: return 0;
    case MessageType::status_reply: return SIZE_MAX;
    case MessageType::error: return SIZE_MAX;
    case MessageType::alloc_local: return sizeof(AllocLocal);
    case MessageType::local_ok: return sizeof(LocalOk);
    case MessageType::free_local: return sizeof(LocalOk);
    case MessageType::trace_attach: return 0;
    case MessageType::trace_area_ok: return sizeof(TraceAreaOk);
    case MessageType::trace_control: return sizeof(TraceControl);
    case MessageType::trace_state: return sizeof(TraceState);
    case MessageType::trace_dump: return sizeof(TraceDumpRequest);
    case MessageType::trace_dump_ok: return sizeof(TraceState);
    case MessageType::set_address_mode: return sizeof(SetAddressMode);
    case MessageType::attach_service: return sizeof(AttachService);
  }
  return SIZE_MAX;
}

constexpr bool known_type(uint16_t t) { return t >= 1 && t <= kLastMessageType; }

// Whether a request of this type carries exactly one file descriptor.
constexpr bool carries_fd(MessageType t) {
  return t == MessageType::register_memory || t == MessageType::attach_service || t == MessageType::hello_ok || t == MessageType::queue_ok ||
         t == MessageType::trace_area_ok || t == MessageType::trace_dump_ok;
}

}  // namespace tandem::abi::control
