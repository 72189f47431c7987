// Bounded spin-waiting for the ping-pong peers: pause while spinning, look at the clock only every
// so many spins (so the fast path costs no clock read), yield once a spin budget is spent (so a
// partner that shares our CPU, or was descheduled, can run), and give up at a deadline.
#pragma once

#include <sched.h>

#include <cstdint>

#include "support/measure.hpp"

namespace tandem::bench::detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

enum class WaitOutcome { ready, timed_out, aborted };

struct SpinPolicy {
  uint64_t check_every;   // spins between looks at the clock and the abort flag
  uint64_t yield_after;   // spins after which each look also yields the CPU
  uint64_t timeout_ticks; // TickClock ticks from the first look to giving up

  // Partners on distinct CPUs: about 50 us of pure spinning, then yield at each look. On one shared
  // CPU spinning only delays the partner, so yield at once.
  static SpinPolicy for_cpus(bool distinct_cpus, double timeout_ns) {
    const TickClock& clock = TickClock::get();
    return distinct_cpus ? SpinPolicy{1024, 4096, clock.ticks_for_ns(timeout_ns)}
                         : SpinPolicy{1, 0, clock.ticks_for_ns(timeout_ns)};
  }
};

// Spins until ready() holds. aborted() is only consulted at each look, off the fast path.
template <class Ready, class Aborted>
WaitOutcome spin_until(Ready&& ready, Aborted&& aborted, const SpinPolicy& policy) {
  uint64_t deadline = 0;  // set at the first look, so a quick reply never reads the clock
  for (uint64_t spins = 1;; ++spins) {
    if (ready()) return WaitOutcome::ready;
    cpu_relax();
    if (spins % policy.check_every == 0) {
      if (aborted()) return WaitOutcome::aborted;
      const uint64_t now = TickClock::get().now();
      if (deadline == 0) {
        deadline = now + policy.timeout_ticks;
      } else if (now >= deadline) {
        return WaitOutcome::timed_out;
      }
      if (spins >= policy.yield_after) sched_yield();
    }
  }
}

}  // namespace tandem::bench::detail
