// A thin C++ wrapper over the C API (tandem.h): RAII handles, spans, and exceptions for failures.
// Header-only; everything it does goes through the C functions.
#pragma once

#include <cstddef>
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
  // A mistake the wrapper itself found (no C call was made, so tandem_last_error() does not belong to it).
  struct Local {};
  ApiError(Local, tandem_status_t status, const std::string& what) : std::runtime_error(what), status_(status) {}
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
  static void require(bool ok, const char* what) {
    if (!ok) throw ApiError(ApiError::Local{}, TANDEM_INVALID_ARGUMENT, what);
  }

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

  // The kernels' high-level calls (tandem.h): any memory, split between this thread and the accelerators.
  // 3x3 Sobel edge magnitude of a width x height image; both spans hold at least width * height bytes.
  void sobel(std::span<const uint8_t> image, std::span<uint8_t> out, uint32_t width, uint32_t height) {
    const size_t pixels = size_t{width} * height;
    require(image.size() >= pixels && out.size() >= pixels, "tandem::Runtime::sobel: a span is smaller than width * height");
    check(tandem_sobel(rt_, image.data(), out.data(), width, height), "tandem_sobel");
  }
  // C (m x n) = A (m x k) * B (k x n): int16 in, int32 out modulo 2^32, row-major.
  void matmul(std::span<const int16_t> a, std::span<const int16_t> b, std::span<int32_t> c, uint32_t m, uint32_t k,
              uint32_t n) {
    require(a.size() >= size_t{m} * k && b.size() >= size_t{k} * n && c.size() >= size_t{m} * n,
            "tandem::Runtime::matmul: a span is smaller than its matrix");
    check(tandem_matmul(rt_, a.data(), b.data(), c.data(), m, k, n), "tandem_matmul");
  }
  // JPEG forward DCT (libjpeg islow) of 8x8 sample blocks (64 bytes each) into 64 coefficients each.
  void dct(std::span<const uint8_t> samples, std::span<int16_t> coefs) {
    require(samples.size() % 64 == 0 && coefs.size() >= samples.size(), "tandem::Runtime::dct: 64 samples per block, 64 coefficients out");
    check(tandem_dct_quant(rt_, TANDEM_DCT_MODE_DCT, samples.data(), coefs.data(), samples.size() / 64, nullptr),
          "tandem_dct_quant");
  }
  // Quantization of coefficient blocks by a table of 64 entries in 1..32767.
  void quantize(std::span<const int16_t> coefs, std::span<int16_t> out, std::span<const uint16_t, 64> table) {
    require(coefs.size() % 64 == 0 && out.size() >= coefs.size(), "tandem::Runtime::quantize: 64 coefficients per block");
    check(tandem_dct_quant(rt_, TANDEM_DCT_MODE_QUANTIZE, coefs.data(), out.data(), coefs.size() / 64, table.data()),
          "tandem_dct_quant");
  }
  // Both, chained: samples to quantized coefficients.
  void dct_quant(std::span<const uint8_t> samples, std::span<int16_t> out, std::span<const uint16_t, 64> table) {
    require(samples.size() % 64 == 0 && out.size() >= samples.size(), "tandem::Runtime::dct_quant: 64 samples per block");
    check(tandem_dct_quant(rt_, TANDEM_DCT_MODE_DCT_QUANTIZE, samples.data(), out.data(), samples.size() / 64,
                           table.data()),
          "tandem_dct_quant");
  }
  // A priority-queue batch (command words from tandem_pq_push/pop/peek); returns the entries left queued.
  uint64_t priority_queue(std::span<const uint64_t> commands, std::span<uint64_t> responses) {
    require(responses.size() >= commands.size(), "tandem::Runtime::priority_queue: fewer responses than commands");
    uint64_t remaining = 0;
    check(tandem_priority_queue(rt_, commands.data(), responses.data(), commands.size(), &remaining),
          "tandem_priority_queue");
    return remaining;
  }
  // What the high-level calls of this runtime did so far.
  tandem_call_stats_t call_stats() const {
    tandem_call_stats_t stats{};
    check(tandem_get_call_stats(rt_, &stats, sizeof stats), "tandem_get_call_stats");
    return stats;
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
