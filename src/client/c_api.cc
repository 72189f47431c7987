// The C API: a thin layer over client::Runtime. Converts statuses, catches what must not cross into
// C, and keeps a per-thread message for tandem_last_error().
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <string>

#include "client/runtime.hpp"
#include "tandem/tandem.h"

struct tandem_runtime {
  uint64_t magic;
  std::unique_ptr<tandem::client::Runtime> impl;
};

struct tandem_queue {
  uint64_t magic;
  std::unique_ptr<tandem::client::Queue> impl;
};

namespace {

constexpr uint64_t kRuntimeMagic = 0x54444e41542d5254ull;  // opaque handles are checked with a magic
constexpr uint64_t kQueueMagic = 0x54444e41542d5551ull;

thread_local std::string last_error;

tandem_status_t fail(tandem::Status s, std::string message) {
  last_error = std::move(message);
  return static_cast<tandem_status_t>(tandem::to_wire(s));
}

tandem_status_t ok() { return TANDEM_OK; }

tandem::client::Runtime* runtime_of(tandem_runtime_t* r) {
  return r != nullptr && r->magic == kRuntimeMagic ? r->impl.get() : nullptr;
}
tandem::client::Queue* queue_of(tandem_queue_t* q) {
  return q != nullptr && q->magic == kQueueMagic ? q->impl.get() : nullptr;
}

// A closed handle keeps its memory, marked closed, until kClosedKept more handles of its kind have
// closed: a call on it meanwhile reads the mark and fails (docs/api.md), and no new handle takes its
// address. The list is never destroyed, so the handles it holds are never leaked at exit.
constexpr size_t kClosedKept = 4096;

template <class Handle>
void retire(Handle* h) {
  h->magic = 0;
  h->impl.reset();
  static std::mutex mutex;
  static auto* closed = new std::deque<Handle*>();
  Handle* oldest = nullptr;
  try {
    std::lock_guard lock(mutex);
    closed->push_back(h);
    if (closed->size() > kClosedKept) {
      oldest = closed->front();
      closed->pop_front();
    }
  } catch (const std::bad_alloc&) {  // no room to keep it: freed now (nothing may throw into C)
    oldest = h;
  }
  delete oldest;
}

// The message of a queue call that failed: what was refused, where the queue can say.
tandem_status_t queue_failure(const tandem::client::Queue& queue, const char* call, tandem::Status s,
                              const tandem_completion_t* record, const char* arguments) {
  if (!queue.runtime_open()) return fail(s, std::string(call) + ": the queue's runtime is closed (the queue may only be destroyed)");
  if (s == tandem::Status::invalid_argument && !queue.engine_writes(record)) {
    return fail(s, std::string(call) + ": the completion record is not in session memory (tandem_alloc it): tandemd could never complete it");
  }
  if (s == tandem::Status::invalid_argument && arguments != nullptr) return fail(s, std::string(call) + ": " + arguments);
  return fail(s, std::string(call) + ": " + std::string(tandem::to_string(s)));
}

// A device address's offset has 40 bits: a range that ends past them runs past every buffer (and
// would not fit a copy job's workload either).
bool runs_past_any_buffer(uint64_t device_address, size_t bytes) {
  return bytes > (uint64_t{1} << 40) - TANDEM_DEVICE_OFFSET_OF(device_address);
}

bool wait_mode_known(int32_t mode) {
  return mode == TANDEM_WAIT_SPIN || mode == TANDEM_WAIT_BLOCK || mode == TANDEM_WAIT_SPIN_THEN_BLOCK;
}

tandem::rt::WaitPolicy policy_of(tandem_wait_mode_t mode, int64_t spin_ns, int64_t timeout_ns) {
  tandem::rt::WaitPolicy p;
  p.mode = mode == TANDEM_WAIT_SPIN    ? tandem::rt::WaitMode::spin
           : mode == TANDEM_WAIT_BLOCK ? tandem::rt::WaitMode::block
                                       : tandem::rt::WaitMode::spin_then_block;
  p.spin_ns = spin_ns;
  p.timeout_ns = timeout_ns;
  return p;
}

// struct_size of each published tandem_options_t layout: the first (up to spin_ns), the second (alpha
// and calibration_path appended) and the third (access appended). A fourth layout adds its size here and
// to options_layout_known; the exported tandem_options_init stays at the third (the programs that call
// it were built with that one), which the static_assert recalls.
constexpr size_t kOptionsSizeV1 = offsetof(tandem_options_t, spin_ns) + sizeof(int64_t);
constexpr size_t kOptionsSizeV2 = offsetof(tandem_options_t, calibration_path) + sizeof(const char*);
constexpr size_t kOptionsSizeV3 =
    (offsetof(tandem_options_t, access) + sizeof(int32_t) + alignof(tandem_options_t) - 1) / alignof(tandem_options_t) *
    alignof(tandem_options_t);
static_assert(kOptionsSizeV3 == sizeof(tandem_options_t), "a new options layout: see kOptionsSizeV1's comment");

bool options_layout_known(size_t size) {
  return size == kOptionsSizeV1 || size == kOptionsSizeV2 || size == kOptionsSizeV3;
}

bool access_of(int32_t access, tandem::client::AccessChoice& out) {
  using tandem::client::AccessChoice;
  switch (access) {
    case TANDEM_ACCESS_CHOOSE: out = AccessChoice::automatic; return true;
    case TANDEM_ACCESS_ZERO_COPY: out = AccessChoice::zero_copy; return true;
    case TANDEM_ACCESS_COPY: out = AccessChoice::copy; return true;
    case TANDEM_ACCESS_SCATTER_GATHER: out = AccessChoice::scatter_gather; return true;
    case TANDEM_ACCESS_DEVICE_LOCAL: out = AccessChoice::device_local; return true;
    default: return false;
  }
}

// The enums' values arrive from C as integers and are compared as such: a value outside an
// enumeration is never held in a variable of its type.
template <class Enum>
int32_t enum_value(const Enum& e) {
  static_assert(sizeof(Enum) == sizeof(int32_t));
  int32_t v = 0;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

bool mode_of(int32_t mode, tandem::client::Mode& out) {
  switch (mode) {
    case TANDEM_MODE_AUTO: out = tandem::client::Mode::auto_mode; return true;
    case TANDEM_MODE_SW: out = tandem::client::Mode::sw; return true;
    case TANDEM_MODE_HW: out = tandem::client::Mode::hw; return true;
    case TANDEM_MODE_ALPHA: out = tandem::client::Mode::alpha; return true;
  }
  return false;
}

}  // namespace

extern "C" {

void tandem_options_init_sized(tandem_options_t* o, size_t size) {
  if (o == nullptr) return;
  tandem_options_t defaults;
  std::memset(&defaults, 0, sizeof defaults);
  defaults.struct_size = options_layout_known(size) ? static_cast<uint32_t>(size) : 0;
  defaults.mode = TANDEM_MODE_AUTO;
  defaults.wait_mode = TANDEM_WAIT_SPIN_THEN_BLOCK;
  defaults.spin_ns = 20'000;
  defaults.access = TANDEM_ACCESS_CHOOSE;
  // Only the caller's bytes: an older header's struct is shorter than this library's. Nothing past what
  // this library knows either (a newer header's struct, or a size that is no size at all): such options
  // have struct_size 0, and tandem_open refuses them.
  std::memcpy(o, &defaults, std::min(size, sizeof defaults));
}

// The function programs built before tandem_options_init became a macro call: they have the third layout.
void(tandem_options_init)(tandem_options_t* o) { tandem_options_init_sized(o, kOptionsSizeV3); }

tandem_status_t tandem_open(const tandem_options_t* o, tandem_runtime_t** out) {
  if (out == nullptr) return fail(tandem::Status::invalid_argument, "tandem_open: null result pointer");
  *out = nullptr;
  tandem_options_t defaults;
  tandem_options_init(&defaults);
  if (o == nullptr) o = &defaults;
  // Versioning: a caller compiled against an older header passes a smaller struct_size; fields past
  // it keep their defaults.
  // The sizes some header's tandem_options_init wrote.
  if (!options_layout_known(o->struct_size)) {
    return fail(tandem::Status::invalid_argument,
                "tandem_open: options not initialised with tandem_options_init (struct_size " +
                    std::to_string(o->struct_size) + " is no layout this library knows)");
  }
  // Read as integers: a value outside the enumeration must not be loaded as one.
  const int32_t mode_value = enum_value(o->mode), wait_value = enum_value(o->wait_mode);
  if (!wait_mode_known(wait_value)) return fail(tandem::Status::invalid_argument, "tandem_open: unknown wait_mode");
  if (o->spin_ns < 0) return fail(tandem::Status::invalid_argument, "tandem_open: spin_ns is negative");
  const auto has = [o](size_t offset, size_t size) { return o->struct_size >= offset + size; };
  tandem::client::RuntimeOptions ro;
  if (o->config_path != nullptr) ro.config_path = o->config_path;
  if (o->socket_path != nullptr) ro.socket_path = o->socket_path;
  ro.embedded = o->embedded != 0;
  if (!mode_of(mode_value, ro.mode)) return fail(tandem::Status::invalid_argument, "tandem_open: unknown mode");
  ro.wait = policy_of(o->wait_mode, o->spin_ns, -1);
  if (has(offsetof(tandem_options_t, alpha), sizeof o->alpha)) {
    if (!(o->alpha >= 0 && o->alpha <= 1)) return fail(tandem::Status::invalid_argument, "tandem_open: alpha outside [0, 1]");
    ro.alpha = o->alpha;
  } else if (ro.mode == tandem::client::Mode::alpha) {
    return fail(tandem::Status::invalid_argument, "tandem_open: TANDEM_MODE_ALPHA needs the alpha field");
  }
  if (has(offsetof(tandem_options_t, calibration_path), sizeof o->calibration_path) && o->calibration_path != nullptr) {
    ro.calibration_path = o->calibration_path;
  }
  if (has(offsetof(tandem_options_t, access), sizeof o->access)) {
    if (!access_of(o->access, ro.access)) return fail(tandem::Status::invalid_argument, "tandem_open: unknown access method");
  }
  try {
    auto rt = tandem::client::Runtime::open(ro);
    if (!rt) return fail(rt.status(), rt.message());
    *out = new (std::nothrow) tandem_runtime{kRuntimeMagic, std::move(rt).value()};
    if (*out == nullptr) return fail(tandem::Status::no_memory, "tandem_open: out of memory");
    return ok();
  } catch (const tandem::Error& e) {  // set-up code's errors keep their status
    return fail(e.status(), std::string("tandem_open: ") + e.what());
  } catch (const std::exception& e) {
    return fail(tandem::Status::io_error, std::string("tandem_open: ") + e.what());
  }
}

void tandem_close(tandem_runtime_t* r) {
  if (runtime_of(r) == nullptr) return;
  retire(r);
}

const char* tandem_runtime_kind(const tandem_runtime_t* r) {
  auto* impl = runtime_of(const_cast<tandem_runtime_t*>(r));
  return impl == nullptr ? "invalid" : impl->kind().data();
}

const char* tandem_status_name(tandem_status_t s) {
  return tandem::to_string(tandem::from_wire(static_cast<uint32_t>(s))).data();
}

const char* tandem_last_error(void) { return last_error.c_str(); }

void* tandem_alloc(tandem_runtime_t* r, size_t bytes) {
  auto* rt = runtime_of(r);
  if (rt == nullptr) {
    fail(tandem::Status::invalid_argument, "tandem_alloc: invalid runtime");
    return nullptr;
  }
  auto memory = rt->allocate(bytes);
  if (!memory) {
    fail(memory.status(), memory.message());
    return nullptr;
  }
  return memory.value();
}

void tandem_free(tandem_runtime_t* r, void* memory) {
  if (auto* rt = runtime_of(r); rt != nullptr && memory != nullptr) rt->free(memory);
}

tandem_status_t tandem_register(tandem_runtime_t* r, void* address, size_t bytes, int memfd, uint64_t offset) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || address == nullptr || bytes == 0) {
    return fail(tandem::Status::invalid_argument, "tandem_register: null runtime or empty region");
  }
  std::string why;
  tandem::Status s = rt->register_memory(address, bytes, memfd, offset, &why);
  return s == tandem::Status::ok ? ok() : fail(s, "tandem_register: " + why);
}

tandem_status_t tandem_unregister(tandem_runtime_t* r, void* address) {
  auto* rt = runtime_of(r);
  if (rt == nullptr) return fail(tandem::Status::invalid_argument, "tandem_unregister: null runtime");
  tandem::Status s = rt->unregister_memory(address);
  return s == tandem::Status::ok ? ok() : fail(s, "tandem_unregister failed");
}

tandem_status_t tandem_accumulate(tandem_runtime_t* r, const int32_t* data, size_t count, int64_t* sum) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || sum == nullptr || (data == nullptr && count > 0)) {
    return fail(tandem::Status::invalid_argument, "tandem_accumulate: null runtime, data or result");
  }
  if (reinterpret_cast<uintptr_t>(data) % alignof(int32_t) != 0) {
    return fail(tandem::Status::invalid_argument, "tandem_accumulate: data is not aligned for int32_t");
  }
  const auto* fn = tandem::funcs::find_function(TANDEM_FN_ACCUMULATE);
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data), count};
  tandem::funcs::Call call;
  tandem::funcs::BufferList buffers;
  if (tandem::funcs::describe_call(*fn, args, call, buffers) != tandem::Status::ok) {
    return fail(tandem::Status::invalid_argument, "tandem_accumulate: count too large");
  }
  call.buffers[0] = const_cast<int32_t*>(data);
  int64_t value = 0;
  tandem::Status s = rt->run(*fn, call, value);
  if (s != tandem::Status::ok) return fail(s, "tandem_accumulate failed");
  *sum = value;
  return ok();
}

tandem_status_t tandem_list_walk(tandem_runtime_t* r, const tandem_list_node_t* head, uint64_t max_nodes, int64_t* sum) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || sum == nullptr) return fail(tandem::Status::invalid_argument, "tandem_list_walk: null runtime or result");
  if (reinterpret_cast<uintptr_t>(head) % alignof(tandem_list_node_t) != 0) {
    return fail(tandem::Status::invalid_argument, "tandem_list_walk: head is not aligned for tandem_list_node_t");
  }
  const auto* fn = tandem::funcs::find_function(TANDEM_FN_LIST_WALK);
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(head), max_nodes};
  tandem::funcs::Call call;
  tandem::funcs::BufferList buffers;
  if (tandem::funcs::describe_call(*fn, args, call, buffers) != tandem::Status::ok) {
    return fail(tandem::Status::invalid_argument, "tandem_list_walk: max_nodes too large");
  }
  int64_t value = 0;
  tandem::Status s = rt->run(*fn, call, value);
  if (s != tandem::Status::ok) return fail(s, "tandem_list_walk failed");
  *sum = value;
  return ok();
}

tandem_status_t tandem_service_register(tandem_runtime_t* r, uint32_t service_id, tandem_service_fn fn, void* user) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || service_id >= TANDEM_SERVICE_IDS) {
    return fail(tandem::Status::invalid_argument, "tandem_service_register: null runtime or service id >= TANDEM_SERVICE_IDS");
  }
  rt->service().register_callback(service_id, fn, user);
  return ok();
}

tandem_status_t tandem_service_start(tandem_runtime_t* r, uint32_t flags) {
  auto* rt = runtime_of(r);
  if (rt == nullptr) return fail(tandem::Status::invalid_argument, "tandem_service_start: null runtime");
  tandem::Status s = rt->start_service(flags);
  if (s == tandem::Status::invalid_argument) {
    return fail(s, "tandem_service_start: flags must be TANDEM_SERVICE_POLL and/or TANDEM_SERVICE_SLEEP, once per runtime");
  }
  return s == tandem::Status::ok ? ok() : fail(s, "tandem_service_start: cannot attach the service ring");
}

tandem_status_t tandem_service_poll(tandem_runtime_t* r, uint32_t* served) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || !rt->service().started()) {
    return fail(tandem::Status::invalid_argument, "tandem_service_poll: null runtime or service not started");
  }
  if (tandem::rt::Liveness* l = rt->liveness(); l != nullptr && l->check_at_most_every(tandem::rt::kLivenessPeriodNs) != tandem::Status::ok) {
    return fail(tandem::Status::disconnected, "tandem_service_poll: the daemon went away");
  }
  const uint32_t n = rt->service().poll();
  if (served != nullptr) *served = n;
  return ok();
}

tandem_status_t tandem_service_chain(tandem_runtime_t* r, uint32_t service_id, uint64_t steps, uint64_t seed, uint64_t* value) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || value == nullptr) return fail(tandem::Status::invalid_argument, "tandem_service_chain: null runtime or result");
  uint64_t v = 0;
  tandem::Status s = rt->service_chain(service_id, steps, seed, v);
  if (s == tandem::Status::invalid_argument) return fail(s, "tandem_service_chain: service id >= TANDEM_SERVICE_IDS or too many steps");
  if (s != tandem::Status::ok) return fail(s, "tandem_service_chain failed");
  *value = v;
  return ok();
}

tandem_status_t tandem_set_address_mode(tandem_runtime_t* r, int32_t mode) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || mode < 0 || mode >= TANDEM_ADDRESS_MODE_COUNT_) {
    return fail(tandem::Status::invalid_argument, "tandem_set_address_mode: null runtime or unknown mode");
  }
  tandem::Status s = rt->set_address_mode(static_cast<uint8_t>(mode));
  return s == tandem::Status::ok ? ok() : fail(s, "tandem_set_address_mode failed");
}

tandem_status_t tandem_set_mode(tandem_runtime_t* r, tandem_mode_t mode, double alpha) {
  auto* rt = runtime_of(r);
  tandem::client::Mode m;
  if (rt == nullptr || !mode_of(enum_value(mode), m) || !(alpha >= 0 && alpha <= 1)) {
    return fail(tandem::Status::invalid_argument, "tandem_set_mode: null runtime, unknown mode or alpha outside [0, 1]");
  }
  rt->set_mode(m, alpha);
  return ok();
}

tandem_status_t tandem_work_fn(tandem_runtime_t* r, uint16_t function, uint64_t units) {
  auto* rt = runtime_of(r);
  const auto* fn = tandem::funcs::find_function(function);
  if (rt == nullptr || fn == nullptr || fn->describe == nullptr || fn->units != std::string_view("cycles")) {
    return fail(tandem::Status::invalid_argument, "tandem_work_fn: null runtime or not a work function");
  }
  const uint64_t args[1] = {units};
  tandem::funcs::Call call;
  tandem::funcs::BufferList buffers;
  if (tandem::funcs::describe_call(*fn, args, call, buffers) != tandem::Status::ok) {
    return fail(tandem::Status::invalid_argument, "tandem_work: too many units");
  }
  int64_t value = 0;
  tandem::Status s = rt->run(*fn, call, value);
  return s == tandem::Status::ok ? ok() : fail(s, "tandem_work failed");
}

tandem_status_t tandem_work(tandem_runtime_t* r, uint64_t units) { return tandem_work_fn(r, TANDEM_FN_WORK, units); }

tandem_status_t tandem_queue_create(tandem_runtime_t* r, uint32_t capacity, tandem_queue_t** out) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || out == nullptr) return fail(tandem::Status::invalid_argument, "tandem_queue_create: null argument");
  *out = nullptr;
  auto q = rt->create_queue(capacity);
  if (!q) return fail(q.status(), q.message());
  *out = new (std::nothrow) tandem_queue{kQueueMagic, std::move(q).value()};
  return *out == nullptr ? fail(tandem::Status::no_memory, "out of memory") : ok();
}

void tandem_queue_destroy(tandem_queue_t* q) {
  if (queue_of(q) == nullptr) return;
  retire(q);
}

void tandem_completion_init(tandem_completion_t* c) {
  if (c != nullptr) tandem::rt::reset_record(c);
}

tandem_status_t tandem_reserve(tandem_queue_t* q, uint64_t* index) {
  auto* queue = queue_of(q);
  if (queue == nullptr || index == nullptr) return fail(tandem::Status::invalid_argument, "tandem_reserve: null argument");
  tandem::Status s = queue->reserve(*index);
  return s == tandem::Status::ok ? ok() : queue_failure(*queue, "tandem_reserve", s, nullptr, nullptr);
}

tandem_status_t tandem_try_reserve(tandem_queue_t* q, uint64_t* index) {
  auto* queue = queue_of(q);
  if (queue == nullptr || index == nullptr) return fail(tandem::Status::invalid_argument, "tandem_try_reserve: null argument");
  if (!queue->runtime_open()) return queue_failure(*queue, "tandem_try_reserve", tandem::Status::invalid_argument, nullptr, nullptr);
  return queue->try_reserve(*index) ? ok() : fail(tandem::Status::queue_full, "ring full");
}

tandem_packet_t* tandem_packet_at(tandem_queue_t* q, uint64_t index) {
  auto* queue = queue_of(q);
  return queue == nullptr ? nullptr : &queue->packet(index);
}

void tandem_publish(tandem_queue_t* q, uint64_t index, uint32_t header) {
  if (auto* queue = queue_of(q)) queue->submit(index, header);
}

void tandem_publish_quiet(tandem_queue_t* q, uint64_t index, uint32_t header) {
  if (auto* queue = queue_of(q)) queue->publish(index, header);
}

void tandem_notify(tandem_queue_t* q) {
  if (auto* queue = queue_of(q)) queue->notify();
}

uint32_t tandem_header(tandem_packet_type_t type, uint16_t function, int barrier) {
  return tandem::abi::make_header(static_cast<uint32_t>(type), function, barrier != 0);
}

tandem_status_t tandem_dispatch(tandem_queue_t* q, uint16_t function, const uint64_t* args, uint32_t arg_count,
                                uint64_t workload, tandem_completion_t* completion) {
  auto* queue = queue_of(q);
  if (queue == nullptr) return fail(tandem::Status::invalid_argument, "tandem_dispatch: invalid queue");
  if (!queue->engine_writes(completion)) return queue_failure(*queue, "tandem_dispatch", tandem::Status::invalid_argument, completion, nullptr);
  tandem::Status s = queue->dispatch(function, args, arg_count, workload, completion);
  return s == tandem::Status::ok
             ? ok()
             : queue_failure(*queue, "tandem_dispatch", s, completion, "arg_count above TANDEM_INLINE_ARGS, or args NULL with arg_count > 0");
}

tandem_status_t tandem_cancel(tandem_queue_t* q, const tandem_completion_t* target, tandem_completion_t* completion) {
  auto* queue = queue_of(q);
  if (queue == nullptr || target == nullptr) return fail(tandem::Status::invalid_argument, "tandem_cancel: null argument");
  if (!queue->engine_writes(completion)) return queue_failure(*queue, "tandem_cancel", tandem::Status::invalid_argument, completion, nullptr);
  tandem::Status s = queue->cancel(target, completion);
  return s == tandem::Status::ok ? ok() : queue_failure(*queue, "tandem_cancel", s, completion, nullptr);
}

tandem_status_t tandem_barrier_and(tandem_queue_t* q, const tandem_completion_t* const* deps, uint32_t dep_count,
                                   tandem_completion_t* completion) {
  auto* queue = queue_of(q);
  if (queue == nullptr) return fail(tandem::Status::invalid_argument, "tandem_barrier_and: invalid queue");
  if (!queue->engine_writes(completion)) return queue_failure(*queue, "tandem_barrier_and", tandem::Status::invalid_argument, completion, nullptr);
  tandem::Status s = queue->barrier_and(deps, dep_count, completion);
  return s == tandem::Status::ok
             ? ok()
             : queue_failure(*queue, "tandem_barrier_and", s, completion, "dep_count above TANDEM_BARRIER_DEPS, or deps NULL with dep_count > 0");
}

tandem_status_t tandem_wait(tandem_runtime_t* r, const tandem_completion_t* c, tandem_wait_mode_t mode, int64_t spin_ns,
                            int64_t timeout_ns) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || c == nullptr) return fail(tandem::Status::invalid_argument, "tandem_wait: null or closed runtime, or null record");
  // Read as an integer (a value outside the enumeration must not be loaded as one); an unknown mode
  // waits as TANDEM_WAIT_SPIN_THEN_BLOCK, as documented.
  int32_t mode_value = enum_value(mode);
  if (!wait_mode_known(mode_value)) mode_value = TANDEM_WAIT_SPIN_THEN_BLOCK;
  tandem::Status s = rt->wait(c, policy_of(static_cast<tandem_wait_mode_t>(mode_value), spin_ns, timeout_ns));
  return static_cast<tandem_status_t>(tandem::to_wire(s));
}

tandem_status_t tandem_buffer_alloc(tandem_runtime_t* r, size_t bytes, uint64_t* device_address) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || device_address == nullptr || bytes == 0) {
    return fail(tandem::Status::invalid_argument, "tandem_buffer_alloc: null runtime or result, or zero bytes");
  }
  auto address = rt->alloc_local(bytes);
  if (!address) return fail(address.status(), "tandem_buffer_alloc: " + address.message());
  *device_address = address.value();
  return ok();
}

tandem_status_t tandem_buffer_free(tandem_runtime_t* r, uint64_t device_address) {
  auto* rt = runtime_of(r);
  if (rt == nullptr) return fail(tandem::Status::invalid_argument, "tandem_buffer_free: null runtime");
  const tandem::Status s = rt->free_local(device_address);
  return s == tandem::Status::ok ? ok() : fail(s, "tandem_buffer_free: not a device buffer of this runtime");
}

tandem_status_t tandem_buffer_write(tandem_runtime_t* r, uint64_t device_address, const void* source, size_t bytes) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || (source == nullptr && bytes > 0) || (device_address & TANDEM_DEVICE_ADDRESS_BIT) == 0) {
    return fail(tandem::Status::invalid_argument, "tandem_buffer_write: null runtime or source, or not a device address");
  }
  if (runs_past_any_buffer(device_address, bytes)) {
    return fail(tandem::Status::translation_fault, "tandem_buffer_write: the range runs past the device buffer");
  }
  const tandem::Status s = rt->copy_local(device_address, reinterpret_cast<uintptr_t>(source), bytes);
  return s == tandem::Status::ok ? ok() : fail(s, "tandem_buffer_write: " + std::string(tandem::to_string(s)));
}

tandem_status_t tandem_buffer_read(tandem_runtime_t* r, void* destination, uint64_t device_address, size_t bytes) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || (destination == nullptr && bytes > 0) || (device_address & TANDEM_DEVICE_ADDRESS_BIT) == 0) {
    return fail(tandem::Status::invalid_argument, "tandem_buffer_read: null runtime or destination, or not a device address");
  }
  if (runs_past_any_buffer(device_address, bytes)) {
    return fail(tandem::Status::translation_fault, "tandem_buffer_read: the range runs past the device buffer");
  }
  const tandem::Status s = rt->copy_local(reinterpret_cast<uintptr_t>(destination), device_address, bytes);
  return s == tandem::Status::ok ? ok() : fail(s, "tandem_buffer_read: " + std::string(tandem::to_string(s)));
}

tandem_status_t tandem_set_access(tandem_runtime_t* r, int32_t access) {
  auto* rt = runtime_of(r);
  tandem::client::AccessChoice choice;
  if (rt == nullptr || !access_of(access, choice)) {
    return fail(tandem::Status::invalid_argument, "tandem_set_access: null runtime or unknown access method");
  }
  rt->set_access_choice(choice);
  return ok();
}

}  // extern "C"

// The C API's other translation units (c_api_calls.cc) reach handles and the message through these.
namespace tandem::client::capi {
Runtime* runtime_of(tandem_runtime_t* runtime) { return ::runtime_of(runtime); }
tandem_status_t fail(Status status, std::string message) { return ::fail(status, std::move(message)); }
}  // namespace tandem::client::capi
