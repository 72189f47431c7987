// libtandem's C++ core behind the C API: a runtime (embedded, or a tandemd session), its queues, and
// the high-level calls. The embedded runtime runs the real-time driver (src/rt) in this process.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "abi/ring.hpp"
#include "funcs/function.hpp"
#include "rt/completion.hpp"
#include "status.hpp"
#include "tandem_abi.h"

namespace tandem::client {

enum class Mode : uint8_t { auto_mode, sw, hw };

struct RuntimeOptions {
  std::string config_path;  // embedded: configuration file ("" = $TANDEM_CONFIG or built-in default)
  std::string config_text;  // embedded: configuration as TOML text (wins over config_path)
  std::string socket_path;  // daemon socket ("" = $TANDEM_SOCKET or default socket if present)
  bool embedded = false;    // never use a daemon
  Mode mode = Mode::auto_mode;
  rt::WaitPolicy wait;
};

// Counters of the high-level calls (for demos and tests).
struct CallStats {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> sw_calls{0};        // ran wholly in software by choice
  std::atomic<uint64_t> hw_jobs{0};         // accelerator jobs submitted
  std::atomic<uint64_t> fallbacks{0};       // accelerator refused (e.g. NOT_ACCELERATED): ran in software
};

class Runtime;

// Lets a queue outlive its runtime safely: the runtime clears `runtime` when it goes away, and a queue
// destroyed later only releases its memory.
struct RuntimeLink {
  std::mutex mutex;
  Runtime* runtime = nullptr;
};

// A multi-producer submission ring of this runtime.
class Queue {
 public:
  Queue(Runtime& runtime, abi::RingProducer producer, std::shared_ptr<void> memory, uint32_t ring_id);
  ~Queue();
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  Runtime& runtime() { return runtime_; }
  uint32_t capacity() const { return producer_.capacity(); }

  // Reserves `count` consecutive indices (the first in `index`), waiting while the ring is full
  // (DISCONNECTED if the engine went away). count <= capacity.
  Status reserve(uint64_t& index, uint32_t count = 1);
  bool try_reserve(uint64_t& index) { return producer_.try_reserve(index); }
  tandem_packet_t& packet(uint64_t index) { return producer_.packet(index); }
  void publish(uint64_t index, uint32_t header) { producer_.publish(index, header); }
  void notify() { producer_.notify(); }
  void submit(uint64_t index, uint32_t header) { producer_.submit(index, header); }

  // One dispatch packet with up to TANDEM_INLINE_ARGS inline words; `record` may be null.
  Status dispatch(uint16_t function, const uint64_t* args, uint32_t arg_count, uint64_t workload,
                  tandem_completion_t* record, bool barrier = false, uint32_t flags = 0);
  Status barrier_and(const tandem_completion_t* const* deps, uint32_t dep_count, tandem_completion_t* record);

 private:
  Runtime& runtime_;
  std::shared_ptr<RuntimeLink> link_;
  abi::RingProducer producer_;
  std::shared_ptr<void> memory_;
  uint32_t ring_id_;
};

class Runtime {
 public:
  // Opens an embedded runtime, or a daemon session when one is configured (see RuntimeOptions).
  static Result<std::unique_ptr<Runtime>> open(const RuntimeOptions& options);
  virtual ~Runtime();

  virtual std::string_view kind() const = 0;
  virtual Result<std::unique_ptr<Queue>> create_queue(uint32_t capacity) = 0;
  // Memory the engine can reach (and that can hold completion records).
  virtual void* alloc(size_t bytes) = 0;
  virtual void free(void* memory) = 0;
  // Makes [address, address + bytes), mapped from `memfd` at `offset`, usable by the engine (zero
  // copy). The embedded runtime reaches all of the process's memory and needs nothing.
  virtual Status register_memory(void* address, size_t bytes, int memfd, uint64_t offset) {
    (void)address, (void)bytes, (void)memfd, (void)offset;
    return Status::ok;
  }
  virtual Status unregister_memory(void* address) {
    (void)address;
    return Status::ok;
  }
  // Null in embedded mode; the daemon session's liveness otherwise.
  virtual rt::Liveness* liveness() { return nullptr; }
  // The monitor's figures per function (thesis 5.4.6), refreshed every monitoring period; read them
  // with abi::read_metrics().
  virtual const tandem_metrics_page_t& metrics_page() const = 0;

  const RuntimeOptions& options() const { return options_; }
  Mode mode() const { return mode_; }
  void set_mode(Mode m) { mode_ = m; }
  CallStats& stats() { return stats_; }

  // The queue high-level calls use (shared by all threads).
  Queue& default_queue() { return *default_queue_; }

  Status wait(const tandem_completion_t* record, const rt::WaitPolicy& policy) {
    return rt::wait_record(record, policy, liveness());
  }

  // A high-level call: runs `call` in software, on the accelerators, or both, per the mode; the
  // result is the function's value. Buffers in `call` are this process's pointers.
  Status run(const funcs::FunctionInfo& fn, funcs::Call& call, int64_t& value);

  // Completion records reserved for this thread's high-level calls (kThreadRecords of them).
  static constexpr uint32_t kThreadRecords = 64;
  tandem_completion_t* thread_records();

 protected:
  explicit Runtime(const RuntimeOptions& options);
  // Creates the default queue; derived constructors call it once they can make queues.
  Status init_default_queue();
  // Derived destructors call these first and last: the queue needs release_ring(), the records free().
  // close_default_queue() also cuts the link of queues the application still holds.
  void close_default_queue();
  void release_thread_records();
  friend class Queue;
  virtual void release_ring(uint32_t ring_id) = 0;

 private:
  Status run_on_accelerator(const funcs::FunctionInfo& fn, funcs::Call& call, int64_t& value);

  RuntimeOptions options_;
  Mode mode_;
  CallStats stats_;
  std::shared_ptr<RuntimeLink> link_ = std::make_shared<RuntimeLink>();
  std::unique_ptr<Queue> default_queue_;
  uint64_t serial_;
  std::mutex records_mutex_;
  std::vector<tandem_completion_t*> record_blocks_;
};

// Mode from the TANDEM_MODE environment variable when the options say auto.
Mode resolve_mode(Mode requested);

}  // namespace tandem::client
