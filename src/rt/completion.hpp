// Completion records: the engine side writes them, the client side waits on them.
#pragma once

#include <cstdint>

#include "abi/atomics.hpp"
#include "abi/futex.hpp"
#include "status.hpp"
#include "tandem_abi.h"

namespace tandem::rt {

// Engine side: value first, then the status word with release, then wake sleepers if any declared.
inline void complete_record(tandem_completion_t* rec, Status status, int64_t value, int64_t device_ns, uint32_t slot) {
  abi::store_relaxed(rec->value, value);
  abi::store_relaxed(rec->device_ns, static_cast<uint64_t>(device_ns));
  abi::store_relaxed(rec->slot, slot);
  abi::store_release(rec->status, to_wire(status));  // pairs with the waiter's acquire
  abi::fence_seq_cst();  // status store before reading `waiters` (Dekker with wait_block)
  if (abi::load_relaxed(rec->waiters) != 0) abi::futex_wake_all(&rec->status);
}

// Client side: prepare a record before its packet is published.
inline void reset_record(tandem_completion_t* rec) {
  abi::store_relaxed(rec->waiters, 0u);
  abi::store_relaxed(rec->value, int64_t{0});
  abi::store_relaxed(rec->device_ns, uint64_t{0});
  abi::store_relaxed(rec->slot, UINT32_MAX);
  abi::store_relaxed(rec->status, static_cast<uint32_t>(TANDEM_PENDING));
}

enum class WaitMode : uint8_t { spin, block, spin_then_block };

struct WaitPolicy {
  WaitMode mode = WaitMode::spin_then_block;
  int64_t spin_ns = 20'000;     // spin budget before blocking (spin_then_block)
  int64_t timeout_ns = -1;      // overall limit; negative: none
};

// Something to ask, while waiting, whether the engine can still complete the record (the daemon may
// have died). Returns ok while alive.
class Liveness {
 public:
  virtual ~Liveness() = default;
  virtual Status check() = 0;
};

// Waits until the record's status is not PENDING; returns it. TIMEOUT if the policy's limit passes,
// DISCONNECTED if `liveness` reports the engine gone (checked at least every `check_every_ns`).
Status wait_record(const tandem_completion_t* rec, const WaitPolicy& policy, Liveness* liveness = nullptr,
                   int64_t check_every_ns = 100'000'000);

}  // namespace tandem::rt
