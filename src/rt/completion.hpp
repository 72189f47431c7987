// Completion records: the engine side writes them, the client side waits on them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "abi/atomics.hpp"
#include "abi/futex.hpp"
#include "abi/status.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::rt {

// `status` and `waiters` are one 8-byte word, changed only by atomic read-modify-writes of the whole
// word: the engine's completion is a single exchange (publish the status, learn whether anyone sleeps,
// clear the flag), and a waiter sets its flag with a compare-and-swap that fails once the status is
// final. The two RMWs are totally ordered, so no wake-up is lost, and — unlike a store followed by a
// load of `waiters` — the engine never reads the record after publishing the status, when its owner
// may already have freed or reused it.
static_assert(offsetof(tandem_completion_t, status) == 0 && offsetof(tandem_completion_t, waiters) == 4 &&
                  alignof(tandem_completion_t) >= 8,
              "status and waiters form one aligned 8-byte word");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the status is the low half of the word");

using CompletionWord = uint64_t __attribute__((may_alias));
inline CompletionWord* completion_word(const tandem_completion_t* rec) {
  return reinterpret_cast<CompletionWord*>(const_cast<uint32_t*>(&rec->status));
}
inline constexpr uint64_t kWaiterFlag = uint64_t{1} << 32;

// The record's status, acquire (pairs with complete_record's release).
inline uint32_t record_status(const tandem_completion_t* rec) {
  return static_cast<uint32_t>(__atomic_load_n(completion_word(rec), __ATOMIC_ACQUIRE));
}

// Engine side: the results first, then one exchange that publishes the status; wake sleepers if the
// old word said there were any.
// `done_ns`: the engine's clock when it completed the job (the dispatcher's pass time), whose low 32
// bits let a client that was busy elsewhere learn when its job ended (wraps every 4.3 s).
inline void complete_record(tandem_completion_t* rec, Status status, int64_t value, int64_t device_ns, uint32_t slot,
                            int64_t done_ns) {
  abi::store_relaxed(rec->done_ns_lo, static_cast<uint32_t>(static_cast<uint64_t>(done_ns)));
  abi::store_relaxed(rec->value, value);
  abi::store_relaxed(rec->device_ns, static_cast<uint64_t>(device_ns));
  abi::store_relaxed(rec->slot, slot);
  const uint64_t old = __atomic_exchange_n(completion_word(rec), uint64_t{to_wire(status)}, __ATOMIC_ACQ_REL);
  if (old & kWaiterFlag) abi::futex_wake_all(&rec->status);  // the key only: no access to the record
}

// Client side, before sleeping on `status`: sets the waiter flag unless the record is already
// complete; returns the status it saw (PENDING: the flag is set, the engine will wake us).
inline uint32_t announce_sleeper(const tandem_completion_t* rec) {
  CompletionWord* word = completion_word(rec);
  uint64_t cur = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  for (;;) {
    if (static_cast<uint32_t>(cur) != TANDEM_PENDING || (cur & kWaiterFlag)) return static_cast<uint32_t>(cur);
    if (__atomic_compare_exchange_n(word, &cur, cur | kWaiterFlag, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      return TANDEM_PENDING;
    }
  }
}

// Client side: prepare a record before its packet is published.
inline void reset_record(tandem_completion_t* rec) {
  abi::store_relaxed(rec->value, int64_t{0});
  abi::store_relaxed(rec->device_ns, uint64_t{0});
  abi::store_relaxed(rec->slot, UINT32_MAX);
  __atomic_store_n(completion_word(rec), uint64_t{TANDEM_PENDING}, __ATOMIC_RELAXED);
}

enum class WaitMode : uint8_t { spin, block, spin_then_block };

struct WaitPolicy {
  WaitMode mode = WaitMode::spin_then_block;
  int64_t spin_ns = 20'000;     // spin budget before blocking (spin_then_block)
  int64_t timeout_ns = -1;      // overall limit; negative: none
};

// Something to ask, while waiting, whether the engine can still complete the record (the daemon may
// have died). Once lost, always lost: callers may cache the answer.
class Liveness {
 public:
  virtual ~Liveness() = default;
  // Asks (a system call): ok while alive, DISCONNECTED once the engine is gone.
  virtual Status check() = 0;
  // What the last check() found, without asking: a load, for every call's hot path.
  virtual bool known_lost() const = 0;
  // check() at most once per `period_ns` (from any thread; the coarse clock gates it), the cached
  // answer otherwise: bounds how long a caller that never waits takes to notice a death.
  Status check_at_most_every(int64_t period_ns);

 private:
  std::atomic<int64_t> next_check_ns_{0};
};

// How often the client library asks a daemon session whether it is alive while it works or waits.
inline constexpr int64_t kLivenessPeriodNs = 50'000'000;

// Waits until the record's status is not PENDING; returns it. TIMEOUT if the policy's limit passes,
// DISCONNECTED if `liveness` reports the engine gone (checked at least every `check_every_ns`).
Status wait_record(const tandem_completion_t* rec, const WaitPolicy& policy, Liveness* liveness = nullptr,
                   int64_t check_every_ns = kLivenessPeriodNs);

}  // namespace tandem::rt
