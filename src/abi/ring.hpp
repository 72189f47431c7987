// The submission ring protocol (HSA AQL, with io_uring's need-wakeup doorbell).
//
// Producers (any number of client threads):
//   1. reserve an index by fetch_add on k_write_index (or CAS for try_reserve, which never over-reserves);
//   2. wait until the slot is free: index < k_read_index + capacity            (acquire k_read_index)
//      (a private copy of the last read index seen spares the cache miss while the ring has room);
//   3. write the body while the header still says INVALID;
//   4. release-store the header word                                          (release header)
//   5. full fence, then if k_flags has NEED_WAKEUP: bump k_doorbell and futex-wake it.
// Consumer (one dispatcher thread):
//   1. acquire-load the header at its private read index; INVALID means not yet published;
//   2. copy the packet once into private memory (never re-read: the client may scribble on it);
//   3. once the batch is handled (completion records written first, so that x86's in-order stores do
//      not hold them behind these), reset the headers to INVALID and release-store k_read_index past
//      the batch                                                               (release read index);
//   4. before sleeping: read k_doorbell, set NEED_WAKEUP, full fence, look again, then futex-wait.
// The consumer never reads k_read_index or k_write_index back: a client can corrupt them only for itself.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "abi/atomics.hpp"
#include "abi/futex.hpp"
#include "abi/status.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::abi {

inline bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

inline uint32_t header_type(uint32_t header) { return header & TANDEM_HEADER_TYPE_MASK; }
inline uint16_t header_function(uint32_t header) {
  return static_cast<uint16_t>(header >> TANDEM_HEADER_FUNCTION_SHIFT);
}
inline uint32_t make_header(uint32_t type, uint16_t function, bool barrier = false) {
  return type | (barrier ? TANDEM_HEADER_BARRIER : 0u) |
         (static_cast<uint32_t>(function) << TANDEM_HEADER_FUNCTION_SHIFT);
}

// Writes a fresh ring header and INVALID packets into `base` (bytes long). Not thread-safe: done once,
// by the side that creates the ring, before anyone else maps it.
Status format_ring(void* base, size_t bytes, uint32_t capacity, uint64_t ring_id);

// Checks magic, version, capacity and size of a mapped ring before either side trusts it.
Status validate_ring(const void* base, size_t bytes);

class RingProducer {
 public:
  RingProducer() = default;
  // `base` must hold a formatted ring (validate_ring() == ok).
  explicit RingProducer(void* base)
      : header_(static_cast<tandem_ring_header_t*>(base)),
        packets_(reinterpret_cast<tandem_packet_t*>(static_cast<char*>(base) + header_->k_packets_offset)),
        mask_(header_->k_capacity - 1u) {}
  RingProducer(const RingProducer& o)
      : header_(o.header_), packets_(o.packets_), mask_(o.mask_), seen_read_(o.seen_read_.load(std::memory_order_relaxed)) {}
  RingProducer& operator=(const RingProducer& o) {
    header_ = o.header_;
    packets_ = o.packets_;
    mask_ = o.mask_;
    seen_read_.store(o.seen_read_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }

  bool valid() const { return header_ != nullptr; }
  uint32_t capacity() const { return mask_ + 1u; }

  // AQL reservation of `count` consecutive indices. The caller must then wait for has_space(last).
  uint64_t reserve(uint32_t count = 1) { return fetch_add_acq_rel(header_->k_write_index, uint64_t{count}); }

  // True once the slot for `index` has been consumed by the dispatcher.
  bool has_space(uint64_t index) const {
    // A stale copy is a lower bound of the read index, so "room" by the copy is room indeed.
    if (index - seen_read_.load(std::memory_order_relaxed) < capacity()) return true;
    const uint64_t read = load_acquire(header_->k_read_index);  // pairs with consumer's release
    seen_read_.store(read, std::memory_order_relaxed);
    return index - read < capacity();
  }

  // Reserves one index only if the ring has room now (never over-reserves). False: ring full.
  bool try_reserve(uint64_t& index) {
    uint64_t w = load_relaxed(header_->k_write_index);
    for (;;) {
      if (w - load_acquire(header_->k_read_index) >= capacity()) return false;  // pairs with consumer
      if (compare_exchange_acq_rel(header_->k_write_index, w, w + 1)) {
        index = w;
        return true;
      }
    }
  }

  tandem_packet_t& packet(uint64_t index) { return packets_[index & mask_]; }

  // Makes the packet at `index` visible to the dispatcher. Body must be complete.
  void publish(uint64_t index, uint32_t header) {
    store_release(packets_[index & mask_].header, header);  // pairs with consumer's acquire of header
  }

  // Rings the doorbell if the dispatcher announced that it sleeps. Call once per batch of publishes.
  void notify() {
    fence_seq_cst();  // orders our header stores before reading NEED_WAKEUP (Dekker with the consumer)
    if (load_relaxed(header_->k_flags) & TANDEM_RING_NEED_WAKEUP) {
      fetch_add_acq_rel(header_->k_doorbell, 1u);
      futex_wake(&header_->k_doorbell);
    }
  }

  void submit(uint64_t index, uint32_t header) {
    publish(index, header);
    notify();
  }

  const tandem_ring_header_t* header() const { return header_; }

  // The process's threads inside high-level calls, counted in the shared header for the engine's
  // monitor; and the other sessions' count it publishes back (docs/abi.md, "The submission ring").
  void add_busy_callers(int32_t delta) { fetch_add_acq_rel(header_->k_busy_callers, static_cast<uint32_t>(delta)); }
  uint32_t busy_callers() const { return load_relaxed(header_->k_busy_callers); }
  uint32_t other_callers() const { return load_relaxed(header_->k_other_callers); }
  // Marks `cpu` (bit cpu % 64) in the mask of CPUs the client's calls run on; no write when the bit
  // is set already, as it is for most calls.
  void mark_caller_cpu(int cpu) {
    if (cpu < 0) return;
    const uint64_t bit = uint64_t{1} << (static_cast<unsigned>(cpu) % 64);
    if ((load_relaxed(header_->k_caller_cpus) & bit) == 0) fetch_or_seq_cst(header_->k_caller_cpus, bit);
  }

 private:
  tandem_ring_header_t* header_ = nullptr;
  tandem_packet_t* packets_ = nullptr;
  uint32_t mask_ = 0;
  mutable std::atomic<uint64_t> seen_read_{0};  // producer-private: last k_read_index observed
};

class RingConsumer {
 public:
  RingConsumer() = default;
  // `base` holds a ring this side formatted with `capacity` packets. The geometry comes from the
  // consumer's own records, never from the shared header a client could rewrite.
  RingConsumer(void* base, uint32_t capacity)
      : header_(static_cast<tandem_ring_header_t*>(base)),
        packets_(reinterpret_cast<tandem_packet_t*>(static_cast<char*>(base) + TANDEM_RING_HEADER_BYTES)),
        mask_(capacity - 1u),
        read_(0) {}

  bool valid() const { return header_ != nullptr; }

  // True if the packet at the private read index has been published.
  bool has_packet() const {
    if (read_ - committed_ > mask_) return false;  // a whole lap popped: commit before looking further
    return header_type(load_acquire(packets_[read_ & mask_].header)) != TANDEM_PACKET_INVALID;
  }

  // Copies the next published packet into `out` without consuming it. False if none is published.
  bool peek(tandem_packet_t& out) const {
    // Slots popped but not yet committed still hold their old headers: never read a lap ahead.
    if (read_ - committed_ > mask_) return false;
    const tandem_packet_t& slot = packets_[read_ & mask_];
    uint32_t h = load_acquire(slot.header);  // pairs with producer's release of header
    if (header_type(h) == TANDEM_PACKET_INVALID) return false;
    std::memcpy(&out, &slot, sizeof out);
    out.header = h;  // the header we synchronised with, not a later scribble
    return true;
  }

  // Consumes the packet peek() returned; its slot is reset and freed at the next commit().
  void pop() { ++read_; }

  // Resets the headers of the packets popped since the last commit to INVALID and publishes the
  // private read index: frees their slots for producers. Once per batch, after it was handled.
  void commit() {
    for (uint64_t i = committed_; i != read_; ++i) {
      store_relaxed(packets_[i & mask_].header, uint32_t{TANDEM_PACKET_INVALID});
    }
    committed_ = read_;
    store_release(header_->k_read_index, read_);  // pairs with producer's acquire in has_space()
  }

  uint64_t read_index() const { return read_; }

  // Sleep protocol. Returns the doorbell value to wait on; after it, re-check has_packet().
  uint32_t prepare_sleep() {
    uint32_t bell = load_acquire(header_->k_doorbell);
    fetch_or_seq_cst(header_->k_flags, uint32_t{TANDEM_RING_NEED_WAKEUP});
    fence_seq_cst();  // orders the flag store before the re-check of the header (Dekker)
    return bell;
  }
  void wake_up() { fetch_and_seq_cst(header_->k_flags, ~uint32_t{TANDEM_RING_NEED_WAKEUP}); }
  const uint32_t* doorbell_word() const { return &header_->k_doorbell; }

  // The client's published count of its threads inside calls: untrusted, the caller bounds it.
  uint32_t published_callers() const { return load_relaxed(header_->k_busy_callers); }
  void set_other_callers(uint32_t count) { store_relaxed(header_->k_other_callers, count); }
  // The CPUs the client's calls ran on since the last take (untrusted: a hint where not to run). The
  // line is the producers': it is written only when a bit was set.
  uint64_t take_caller_cpus() {
    return load_relaxed(header_->k_caller_cpus) == 0 ? 0 : exchange_relaxed(header_->k_caller_cpus, uint64_t{0});
  }

 private:
  tandem_ring_header_t* header_ = nullptr;
  tandem_packet_t* packets_ = nullptr;
  uint32_t mask_ = 0;
  uint64_t read_ = 0;       // private shadow of k_read_index: next packet to look at
  uint64_t committed_ = 0;  // packets before this one have been reset and freed
};

}  // namespace tandem::abi
