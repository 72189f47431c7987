#include "rt/completion.hpp"

#include <algorithm>

#include "base/clock.hpp"

namespace tandem::rt {

namespace {

inline uint32_t status_acquire(const tandem_completion_t* rec) { return record_status(rec); }

}  // namespace

Status Liveness::check_at_most_every(int64_t period_ns) {
  if (known_lost()) return Status::disconnected;
  const int64_t now = now_coarse_ns();
  int64_t next = next_check_ns_.load(std::memory_order_relaxed);
  if (now < next) return Status::ok;
  // One thread of many asks; the others go on with the cached answer.
  if (!next_check_ns_.compare_exchange_strong(next, now + period_ns, std::memory_order_relaxed)) return Status::ok;
  return check();
}

Status wait_record(const tandem_completion_t* rec, const WaitPolicy& policy, Liveness* liveness,
                   int64_t check_every_ns) {
  uint32_t s = status_acquire(rec);
  if (s != TANDEM_PENDING) return from_wire(s);
  if (liveness != nullptr && liveness->known_lost()) return Status::disconnected;  // nobody will answer
  const int64_t start = now_ns();
  // Saturating: a timeout or spin budget near INT64_MAX means "no limit", not an overflow into the past.
  const auto after = [start](int64_t ns) { return ns > INT64_MAX - start ? INT64_MAX : start + ns; };
  const int64_t deadline = policy.timeout_ns >= 0 ? after(policy.timeout_ns) : INT64_MAX;
  int64_t next_check = after(check_every_ns);

  // Spin phase: bounded by the spin budget (spin mode: by the timeout and liveness checks only).
  const int64_t spin_until = policy.mode == WaitMode::block ? start
                             : policy.mode == WaitMode::spin ? deadline
                                                             : after(std::max<int64_t>(policy.spin_ns, 0));
  for (uint32_t i = 0;; ++i) {
    s = status_acquire(rec);
    if (s != TANDEM_PENDING) return from_wire(s);
    abi::cpu_relax();
    if ((i & 63) != 0) continue;
    const int64_t now = now_ns();
    if (now >= deadline) return Status::timeout;
    if (liveness != nullptr && now >= next_check) {
      Status alive = liveness->check();
      if (alive != Status::ok) return alive;
      next_check = now + check_every_ns;
    }
    if (now >= spin_until) break;
  }

  // Block phase: declare a sleeper (fails if the status is final meanwhile), then futex-wait in slices
  // so that liveness is observed.
  for (;;) {
    s = announce_sleeper(rec);
    if (s != TANDEM_PENDING) return from_wire(s);
    const int64_t now = now_ns();
    if (now >= deadline) return Status::timeout;
    int64_t slice = liveness != nullptr ? check_every_ns : (deadline == INT64_MAX ? -1 : deadline - now);
    if (deadline != INT64_MAX && deadline - now < slice) slice = deadline - now;
    abi::futex_wait(&rec->status, TANDEM_PENDING, slice);
    s = status_acquire(rec);
    if (s != TANDEM_PENDING) return from_wire(s);
    if (liveness != nullptr) {
      Status alive = liveness->check();
      if (alive != Status::ok) return alive;
    }
  }
}

}  // namespace tandem::rt
