// Futex round trip between two threads: each side sleeps in FUTEX_WAIT until the other stores the
// next sequence number and calls FUTEX_WAKE. Every direction costs one wake system call and, when
// the receiver was already asleep, one wake-up through the scheduler.

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "support/detail/peer_common.hpp"
#include "support/peers.hpp"

namespace tandem::bench {

namespace {

// Futex words must be plain 32-bit integers the kernel can address; the threads reach them only
// through std::atomic_ref.
struct FutexWords {
  alignas(64) uint32_t ping;  // measuring -> echoing side: sequence number (wraps; compared for equality)
  alignas(64) uint32_t pong;  // echoing -> measuring side
  alignas(64) uint32_t stop;  // raised by a side that gives up
};

class FutexOps {
 public:
  explicit FutexOps(FutexScope scope)
      : wait_op_(scope == FutexScope::process_private ? FUTEX_WAIT_PRIVATE : FUTEX_WAIT),
        wake_op_(scope == FutexScope::process_private ? FUTEX_WAKE_PRIVATE : FUTEX_WAKE) {}

  // 0, or the errno of FUTEX_WAIT (EAGAIN: the word had changed; ETIMEDOUT; EINTR).
  int wait(uint32_t* word, uint32_t expected, int64_t timeout_ns) const {
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
    return syscall(SYS_futex, word, wait_op_, expected, &ts, nullptr, 0) == 0 ? 0 : errno;
  }
  void wake(uint32_t* word) const { syscall(SYS_futex, word, wake_op_, 1, nullptr, nullptr, 0); }

 private:
  int wait_op_;
  int wake_op_;
};

// Sleeps until `word` holds `want`. Each FUTEX_WAIT is bounded by the timeout and the whole wait by
// twice that, so an abort raced past the stop check still returns.
Status wait_for_value(uint32_t& word, uint32_t want, uint32_t& stop, const FutexOps& futex,
                      int64_t timeout_ns) {
  int64_t deadline = 0;  // read the clock only if the first sleep does not settle it
  for (;;) {
    // Acquire, paired with the partner's release store of this word.
    const uint32_t seen = std::atomic_ref<uint32_t>(word).load(std::memory_order_acquire);
    if (seen == want) return Status::ok;
    // Relaxed: the stop flag carries no data.
    if (std::atomic_ref<uint32_t>(stop).load(std::memory_order_relaxed) != 0) return Status::cancelled;
    int64_t budget = timeout_ns;
    if (deadline != 0) {
      budget = deadline - now_ns();
      if (budget <= 0) return Status::timeout;
    }
    const int rc = futex.wait(&word, seen, budget);
    if (rc == ETIMEDOUT) return Status::timeout;
    if (rc != 0 && rc != EAGAIN && rc != EINTR) return Status::io_error;
    if (deadline == 0) deadline = now_ns() + timeout_ns;
  }
}

void post(uint32_t& word, uint32_t value, const FutexOps& futex) {
  // Release, paired with the partner's acquire load in wait_for_value.
  std::atomic_ref<uint32_t>(word).store(value, std::memory_order_release);
  futex.wake(&word);  // always: this is the wait/wake-each-way reference
}

void raise_stop(FutexWords& words, const FutexOps& futex) {
  std::atomic_ref<uint32_t>(words.stop).store(1, std::memory_order_relaxed);
  futex.wake(&words.ping);
  futex.wake(&words.pong);
}

}  // namespace

Result<Samples> futex_rtt(const PeerOptions& options, FutexScope scope) {
  const detail::Placement where = detail::resolve_placement(options);
  const int64_t timeout = std::chrono::nanoseconds(options.timeout).count();
  const FutexOps futex(scope);
  FutexWords words{};
  const auto rounds = static_cast<uint64_t>(detail::total_round_trips(options));

  Status echo_status = Status::ok;  // written by the echo thread, read after join()
  Result<std::thread> echo = detail::start_thread([&] {
    ScopedPin pin(where.cpu_b);
    for (uint64_t n = 1; n <= rounds; ++n) {
      const auto seq = static_cast<uint32_t>(n);
      echo_status = wait_for_value(words.ping, seq, words.stop, futex, timeout);
      if (echo_status != Status::ok) {
        raise_stop(words, futex);
        return;
      }
      post(words.pong, seq, futex);
    }
  });
  if (!echo.ok()) return {echo.status(), echo.message()};

  Result<Samples> samples = [&] {
    ScopedPin pin(where.cpu_a);
    uint32_t seq = 0;
    return sample_loop_status(detail::sample_plan(options), [&] {
      ++seq;
      post(words.ping, seq, futex);
      return wait_for_value(words.pong, seq, words.stop, futex, timeout);
    });
  }();
  if (!samples.ok()) raise_stop(words, futex);
  echo->join();
  if (!samples.ok()) {
    return {samples.status(), "futex round trip: " + std::string(samples.status() == Status::timeout
                                                                      ? "no reply in time"
                                                                      : "the echoing thread gave up")};
  }
  if (echo_status != Status::ok) return {echo_status, "futex round trip: the echoing thread failed"};
  return samples;
}

}  // namespace tandem::bench
