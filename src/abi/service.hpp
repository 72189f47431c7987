// The service-request ring (FastPath): a running job asks its client to run a callback and resumes
// with the answer (tandem_abi.h, "service requests"; docs/abi.md). Shared memory between the device
// side (one producer: the dispatcher thread) and the client (one consumer at a time).
//
// Producer, per request: pick a slot it knows is free (its own bookkeeping, never the shared state),
// write the body, release-store state = (seq << 2) | POSTED, bump k_posted (seq_cst: a full barrier), and
// futex-wake k_posted if the client announced that it sleeps. It accepts exactly (seq << 2) | ANSWERED
// back; any other word in a slot it waits on is the client's scribbling and fails that request.
// Consumer: look at k_posted; when it moved, scan the slots for POSTED words, copy each body once, run
// the callback, write answer and status, CAS the state to (seq << 2) | ANSWERED, bump k_answered and wake
// the device side if it sleeps. Both sides keep the geometry they agreed on, never the header's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "abi/atomics.hpp"
#include "abi/futex.hpp"
#include "abi/status.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::abi {

// Writes a fresh header and free slots into `base` (bytes long); the creator does it before sharing.
Status format_service_ring(void* base, size_t bytes, uint32_t slots);
// Checks magic, version, slot count and size before the other side trusts the mapping.
Status validate_service_ring(const void* base, size_t bytes, uint32_t slots);

struct ServiceRequest {
  uint32_t service = 0;
  uint64_t token = 0;
  std::array<uint64_t, TANDEM_SERVICE_ARGS> args{};
};

// The device side. Single-threaded (the dispatcher's).
class ServiceProducer {
 public:
  enum class Check { pending, answered, failed };

  ServiceProducer() = default;
  // `base` holds a ring of `slots` slots that validate_service_ring accepted.
  ServiceProducer(void* base, uint32_t slots);

  bool valid() const { return header_ != nullptr; }
  uint32_t outstanding() const { return outstanding_; }
  // A hint: the client answered something since the last check() (k_answered moved).
  bool has_answers() const { return outstanding_ > 0 && load_acquire(header_->k_answered) != answered_seen_; }

  // Posts a request; false when every slot is taken (try again later). `ticket` names it.
  bool post(const ServiceRequest& request, uint32_t& ticket);
  // Whether the request's answer came: answered (`answer` set, slot freed), failed (the client said it
  // has no answer or wrote garbage: `why` set, slot freed), or pending.
  Check check(uint32_t ticket, uint64_t& answer, Status& why);
  // Gives up on a request (timed out, job gone): its slot is freed; a late answer is never taken for
  // the next request of the slot, whose sequence differs.
  void cancel(uint32_t ticket);

  // Sleep protocol (Dekker with the client's answer): announce, then look at the slots again, then
  // futex-wait on answer_word() with the value returned.
  uint32_t prepare_sleep();
  void wake_up();
  const uint32_t* answer_word() const { return &header_->k_answered; }

 private:
  void release(uint32_t slot);
  tandem_service_header_t* header_ = nullptr;
  tandem_service_slot_t* slots_ = nullptr;
  std::vector<uint32_t> sequence_;  // private: the sequence of each slot's current request
  std::vector<uint8_t> busy_;
  std::vector<uint32_t> free_;      // free slot numbers
  uint32_t outstanding_ = 0;
  uint32_t answered_seen_ = 0;      // k_answered at the last check()
};

// The client side. One thread at a time (the library serialises callers).
class ServiceConsumer {
 public:
  ServiceConsumer() = default;
  ServiceConsumer(void* base, uint32_t slots)
      : header_(static_cast<tandem_service_header_t*>(base)),
        slots_(reinterpret_cast<tandem_service_slot_t*>(static_cast<char*>(base) + TANDEM_SERVICE_HEADER_BYTES)),
        count_(slots) {}

  bool valid() const { return header_ != nullptr; }

  // True if the producer posted since the last serve().
  bool has_news() const { return load_acquire(header_->k_posted) != seen_; }

  // Serves every posted request: `serve(const ServiceRequest&, uint64_t& answer) -> Status` runs once
  // per request, on a private copy. Returns how many were answered.
  template <class Serve>
  uint32_t serve(Serve&& fn) {
    const uint32_t posted = load_acquire(header_->k_posted);  // before the scan: a later post moves it again
    // Requests posted since the last serve(): the scan stops once it found that many (a request cancelled
    // before it was seen, or one an earlier scan already served, only makes it look at every slot). It
    // starts at the slot served last: a device that asks again at once reuses the slot it just freed.
    uint32_t wanted = posted - seen_;
    seen_ = posted;
    uint32_t served = 0;
    for (uint32_t n = 0, i = next_; n < count_ && wanted > 0; ++n, i = i + 1 == count_ ? 0 : i + 1) {
      tandem_service_slot_t& slot = slots_[i];
      const uint32_t state = load_acquire(slot.state);  // pairs with the producer's release
      if ((state & 3u) != TANDEM_SERVICE_POSTED) continue;
      ServiceRequest request;
      request.service = load_relaxed(slot.service);
      request.token = load_relaxed(slot.token);
      for (uint32_t a = 0; a < TANDEM_SERVICE_ARGS; ++a) request.args[a] = load_relaxed(slot.args[a]);
      uint64_t answer = 0;
      const Status status = fn(static_cast<const ServiceRequest&>(request), answer);
      store_relaxed(slot.answer, answer);
      store_relaxed(slot.status, to_wire(status));
      // Only if it is still the request we served: a cancelled slot may carry a newer one by now.
      uint32_t expected = state;
      compare_exchange_acq_rel(slot.state, expected, (state & ~3u) | TANDEM_SERVICE_ANSWERED);
      ++served;
      --wanted;
      next_ = i;
    }
    if (served > 0) {
      // Dekker with the device side's prepare_sleep(): a seq_cst bump then a seq_cst look at its flag.
      fetch_add_seq_cst(header_->k_answered, 1u);
      if (load_seq_cst(header_->k_device_flags) & TANDEM_SERVICE_SLEEPING) futex_wake(&header_->k_answered);
    }
    return served;
  }

  // k_posted as the last serve() saw it.
  uint32_t seen() const { return seen_; }
  // Sleeps until k_posted moves from `seen` (or `timeout_ns`, or a wake of k_posted). May run beside
  // a serve() on another thread.
  void sleep(uint32_t seen, int64_t timeout_ns) const {
    fetch_or_seq_cst(header_->k_client_flags, uint32_t{TANDEM_SERVICE_SLEEPING});
    fence_seq_cst();
    if (load_acquire(header_->k_posted) == seen) futex_wait(&header_->k_posted, seen, timeout_ns);
    fetch_and_seq_cst(header_->k_client_flags, ~uint32_t{TANDEM_SERVICE_SLEEPING});
  }
  // Wakes a thread in sleep() (to stop it).
  void interrupt() { futex_wake_all(&header_->k_posted); }

 private:
  tandem_service_header_t* header_ = nullptr;
  tandem_service_slot_t* slots_ = nullptr;
  uint32_t count_ = 0;
  uint32_t seen_ = 0;
  uint32_t next_ = 0;  // where the next scan starts
};

}  // namespace tandem::abi
