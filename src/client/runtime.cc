#include "runtime.hpp"

#include <sched.h>
#include <time.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <unistd.h>

#include "daemon_runtime.hpp"
#include "embedded.hpp"
#include "rt/clock.hpp"

namespace tandem::client {

namespace {

std::atomic<uint64_t> next_serial{1};

struct ThreadRecordSlot {
  uint64_t serial = 0;
  tandem_completion_t* records = nullptr;
};
// A few runtimes per thread at once is plenty; older entries are evicted round-robin (their blocks
// stay owned by their runtime, so nothing leaks past the runtime's life).
thread_local std::array<ThreadRecordSlot, 4> thread_slots;
thread_local uint32_t thread_slot_victim = 0;

}  // namespace

Mode resolve_mode(Mode requested) {
  if (requested != Mode::auto_mode) return requested;
  const char* env = std::getenv("TANDEM_MODE");
  if (env == nullptr) return Mode::auto_mode;
  std::string_view v(env);
  if (v == "sw") return Mode::sw;
  if (v == "hw") return Mode::hw;
  return Mode::auto_mode;
}

// ---------------------------------------------------------------- Queue

Queue::Queue(Runtime& runtime, abi::RingProducer producer, std::shared_ptr<void> memory, uint32_t ring_id)
    : runtime_(runtime), link_(runtime.link_), producer_(producer), memory_(std::move(memory)), ring_id_(ring_id) {}

Queue::~Queue() {
  std::lock_guard lock(link_->mutex);
  if (link_->runtime != nullptr) link_->runtime->release_ring(ring_id_);  // else: the engine is gone
}

Status Queue::reserve(uint64_t& index, uint32_t count) {
  if (count == 0 || count > producer_.capacity()) return Status::invalid_argument;
  index = producer_.reserve(count);
  // Back-pressure: the indices are ours, but a slot is free only once the dispatcher consumed it.
  for (uint32_t spins = 0; !producer_.has_space(index + count - 1); ++spins) {
    if (spins < 1024) {
      abi::cpu_relax();
      continue;
    }
    if (rt::Liveness* l = runtime_.liveness(); l != nullptr && (spins & 1023) == 0) {
      Status alive = l->check();
      if (alive != Status::ok) return alive;
    }
    timespec ts{0, 20'000};
    nanosleep(&ts, nullptr);
  }
  return Status::ok;
}

Status Queue::dispatch(uint16_t function, const uint64_t* args, uint32_t arg_count, uint64_t workload,
                       tandem_completion_t* record, bool barrier, uint32_t flags) {
  if (arg_count > TANDEM_INLINE_ARGS || (arg_count > 0 && args == nullptr)) return Status::invalid_argument;
  uint64_t index;
  Status s = reserve(index);
  if (s != Status::ok) return s;
  tandem_packet_t& p = producer_.packet(index);
  p.flags = flags;
  p.body.dispatch.workload = workload;
  for (uint32_t i = 0; i < TANDEM_INLINE_ARGS; ++i) p.body.dispatch.args[i] = i < arg_count ? args[i] : 0;
  p.user_data = 0;
  p.completion = reinterpret_cast<uintptr_t>(record);
  producer_.submit(index, abi::make_header(TANDEM_PACKET_DISPATCH, function, barrier));
  return Status::ok;
}

Status Queue::barrier_and(const tandem_completion_t* const* deps, uint32_t dep_count, tandem_completion_t* record) {
  if (dep_count > TANDEM_BARRIER_DEPS || (dep_count > 0 && deps == nullptr)) return Status::invalid_argument;
  uint64_t index;
  Status s = reserve(index);
  if (s != Status::ok) return s;
  tandem_packet_t& p = producer_.packet(index);
  p.flags = 0;
  for (uint32_t i = 0; i < TANDEM_BARRIER_DEPS; ++i) {
    p.body.barrier.deps[i] = i < dep_count ? reinterpret_cast<uintptr_t>(deps[i]) : 0;
  }
  p.user_data = 0;
  p.completion = reinterpret_cast<uintptr_t>(record);
  producer_.submit(index, abi::make_header(TANDEM_PACKET_BARRIER_AND, 0, true));
  return Status::ok;
}

// ---------------------------------------------------------------- Runtime

Runtime::Runtime(const RuntimeOptions& options)
    : options_(options), mode_(resolve_mode(options.mode)), serial_(next_serial.fetch_add(1)) {
  link_->runtime = this;
}

void Runtime::close_default_queue() {
  default_queue_.reset();
  std::lock_guard lock(link_->mutex);
  link_->runtime = nullptr;
}

Runtime::~Runtime() = default;

void Runtime::release_thread_records() {
  std::lock_guard lock(records_mutex_);
  for (tandem_completion_t* block : record_blocks_) free(block);
  record_blocks_.clear();
}

Status Runtime::init_default_queue() {
  auto q = create_queue(1024);
  if (!q) return q.status();
  default_queue_ = std::move(q).value();
  return Status::ok;
}

Result<std::unique_ptr<Runtime>> Runtime::open(const RuntimeOptions& options) {
  if (!options.embedded) {
    // An explicit socket must work; the default one is used only if a daemon is there.
    std::string path = options.socket_path;
    if (path.empty()) {
      if (const char* env = std::getenv("TANDEM_SOCKET"); env != nullptr && *env != '\0') path = env;
    }
    if (!path.empty()) return DaemonRuntime::connect(options, path);
    const std::string fallback = rt::default_socket_path();
    if (access(fallback.c_str(), F_OK) == 0) {
      auto daemon = DaemonRuntime::connect(options, fallback);
      if (daemon.ok() || daemon.status() != Status::disconnected) return daemon;  // stale socket: embedded
    }
  }
  return EmbeddedRuntime::create(options);
}

tandem_completion_t* Runtime::thread_records() {
  for (ThreadRecordSlot& s : thread_slots) {
    if (s.serial == serial_) return s.records;
  }
  auto* block = static_cast<tandem_completion_t*>(alloc(kThreadRecords * sizeof(tandem_completion_t)));
  if (block == nullptr) return nullptr;
  {
    std::lock_guard lock(records_mutex_);
    record_blocks_.push_back(block);
  }
  ThreadRecordSlot& victim = thread_slots[thread_slot_victim++ % thread_slots.size()];
  victim = ThreadRecordSlot{serial_, block};
  return block;
}

Status Runtime::run(const funcs::FunctionInfo& fn, funcs::Call& call, int64_t& value) {
  stats_.calls.fetch_add(1, std::memory_order_relaxed);
  if (mode_ == Mode::sw) {
    stats_.sw_calls.fetch_add(1, std::memory_order_relaxed);
    value = funcs::run_sw(fn, call);
    return Status::ok;
  }
  Status s = run_on_accelerator(fn, call, value);
  if (s == Status::ok) return s;
  // The accelerator refused (not resident, queue full, job too large): the call still completes.
  if (s == Status::not_accelerated || s == Status::queue_full || s == Status::job_too_large ||
      s == Status::translation_fault || s == Status::limit_exceeded) {
    stats_.fallbacks.fetch_add(1, std::memory_order_relaxed);
    value = funcs::run_sw(fn, call);
    return Status::ok;
  }
  return s;
}

Status Runtime::run_on_accelerator(const funcs::FunctionInfo& fn, funcs::Call& call, int64_t& value) {
  tandem_completion_t* rec = thread_records();
  if (rec == nullptr) return Status::no_memory;
  rt::reset_record(rec);
  stats_.hw_jobs.fetch_add(1, std::memory_order_relaxed);
  Status s = default_queue_->dispatch(fn.id, call.args.data(), std::min<uint32_t>(call.arg_count, TANDEM_INLINE_ARGS),
                                      call.workload, rec);
  if (s != Status::ok) return s;
  s = wait(rec, options_.wait);
  if (s == Status::ok) value = abi::load_relaxed(rec->value);
  return s;
}

}  // namespace tandem::client
