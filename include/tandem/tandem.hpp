// A thin C++ wrapper over the C API (tandem.h): RAII handles, spans, and exceptions for failures.
// Header-only; everything it does goes through the C functions.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "tandem.h"

namespace tandem {

// A failed call: the status and tandem_last_error()'s message.
class ApiError : public std::runtime_error {
 public:
  ApiError(tandem_status_t status, const std::string& what)
      : std::runtime_error(what + ": " + tandem_status_name(status) +
                           (*tandem_last_error() != '\0' ? std::string(" (") + tandem_last_error() + ")" : "")),
        status_(status) {}
  tandem_status_t status() const { return status_; }

 private:
  tandem_status_t status_;
};

inline void check(tandem_status_t s, const char* what) {
  if (s != TANDEM_OK) throw ApiError(s, what);
}

class Queue {
 public:
  Queue() = default;
  explicit Queue(tandem_queue_t* q) : q_(q) {}
  ~Queue() { tandem_queue_destroy(q_); }
  Queue(Queue&& o) noexcept : q_(std::exchange(o.q_, nullptr)) {}
  Queue& operator=(Queue&& o) noexcept {
    std::swap(q_, o.q_);
    return *this;
  }
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // One dispatch packet with up to four inline argument words; the record may be null.
  void dispatch(uint16_t function, std::span<const uint64_t> args, uint64_t workload, tandem_completion_t* record) {
    check(tandem_dispatch(q_, function, args.data(), static_cast<uint32_t>(args.size()), workload, record),
          "tandem_dispatch");
  }
  // A barrier-AND packet over up to five records.
  void barrier_and(std::span<const tandem_completion_t* const> deps, tandem_completion_t* record) {
    check(tandem_barrier_and(q_, deps.data(), static_cast<uint32_t>(deps.size()), record), "tandem_barrier_and");
  }
  // Withdraws the job whose record is `target` if it has not started; `record` (may be null) gets
  // value 1 if it was withdrawn, 0 if not.
  void cancel(const tandem_completion_t& target, tandem_completion_t* record) {
    check(tandem_cancel(q_, &target, record), "tandem_cancel");
  }
  // Low level: reserve, fill packet_at(index), publish(index, header).
  uint64_t reserve() {
    uint64_t index = 0;
    check(tandem_reserve(q_, &index), "tandem_reserve");
    return index;
  }
  tandem_packet_t& packet_at(uint64_t index) { return *tandem_packet_at(q_, index); }
  void publish(uint64_t index, uint32_t header) { tandem_publish(q_, index, header); }
  tandem_queue_t* get() const { return q_; }

 private:
  tandem_queue_t* q_ = nullptr;
};

class Runtime {
 public:
  // Opens a runtime (embedded, or a tandemd session when one is configured).
  explicit Runtime(const tandem_options_t* options = nullptr) { check(tandem_open(options, &rt_), "tandem_open"); }
  ~Runtime() { tandem_close(rt_); }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  std::string kind() const { return tandem_runtime_kind(rt_); }
  tandem_runtime_t* get() const { return rt_; }

  int64_t accumulate(std::span<const int32_t> data) {
    int64_t sum = 0;
    check(tandem_accumulate(rt_, data.data(), data.size(), &sum), "tandem_accumulate");
    return sum;
  }
  void work(uint64_t units) { check(tandem_work(rt_, units), "tandem_work"); }
  int64_t list_walk(const tandem_list_node_t* head, uint64_t max_nodes) {
    int64_t sum = 0;
    check(tandem_list_walk(rt_, head, max_nodes, &sum), "tandem_list_walk");
    return sum;
  }
  void set_address_mode(tandem_address_mode_t mode) {
    check(tandem_set_address_mode(rt_, mode), "tandem_set_address_mode");
  }
  // Where later high-level calls run (alpha: TANDEM_MODE_ALPHA's share for the accelerators).
  void set_mode(tandem_mode_t mode, double alpha = 0) { check(tandem_set_mode(rt_, mode, alpha), "tandem_set_mode"); }

  // Memory the accelerators can reach (session memory under tandemd). Release with free().
  template <class T>
  T* alloc(size_t count) {
    void* p = tandem_alloc(rt_, count * sizeof(T));
    if (p == nullptr) throw ApiError(TANDEM_NO_MEMORY, "tandem_alloc");
    return static_cast<T*>(p);
  }
  void free(void* p) { tandem_free(rt_, p); }

  Queue queue(uint32_t capacity = 0) {
    tandem_queue_t* q = nullptr;
    check(tandem_queue_create(rt_, capacity, &q), "tandem_queue_create");
    return Queue(q);
  }

  // Waits for a record and returns its status (does not throw for a job's failure).
  tandem_status_t wait(const tandem_completion_t& record, tandem_wait_mode_t mode = TANDEM_WAIT_SPIN_THEN_BLOCK,
                       int64_t spin_ns = 20'000, int64_t timeout_ns = -1) {
    return tandem_wait(rt_, &record, mode, spin_ns, timeout_ns);
  }

 private:
  tandem_runtime_t* rt_ = nullptr;
};

}  // namespace tandem
