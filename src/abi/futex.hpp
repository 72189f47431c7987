// Futex wrappers for words in shared memory. Shared (not PRIVATE) futexes, because rings and completion
// records are mapped by two processes at different addresses; the kernel keys them by page.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <span>

namespace tandem::abi {

// Sleeps while *word == expected, at most timeout_ns (negative: no limit). Returns 0 on wake-up or
// mismatch, ETIMEDOUT on timeout, EINTR when interrupted.
inline int futex_wait(const uint32_t* word, uint32_t expected, int64_t timeout_ns = -1) {
  timespec ts{};
  timespec* tsp = nullptr;
  if (timeout_ns >= 0) {
    ts.tv_sec = static_cast<time_t>(timeout_ns / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout_ns % 1'000'000'000);
    tsp = &ts;
  }
  long rc = syscall(SYS_futex, word, FUTEX_WAIT, expected, tsp, nullptr, 0);
  if (rc == 0) return 0;
  return errno == EAGAIN ? 0 : errno;
}

inline int futex_wake(const uint32_t* word, int count = 1) {
  return static_cast<int>(syscall(SYS_futex, word, FUTEX_WAKE, count, nullptr, nullptr, 0));
}

inline int futex_wake_all(const uint32_t* word) { return futex_wake(word, 0x7fffffff); }

// One word of a vectored wait (Linux >= 5.16).
struct FutexWaitTarget {
  const uint32_t* word;
  uint32_t expected;
};

// Sleeps until any word differs from its expected value or is woken, or until the absolute
// CLOCK_MONOTONIC deadline (negative: none). At most FUTEX_WAITV_MAX targets. Returns 0 when woken
// or a word already differs, ETIMEDOUT, EINTR, or ENOSYS on kernels without futex_waitv.
inline int futex_waitv(std::span<const FutexWaitTarget> targets, int64_t deadline_ns) {
#ifdef SYS_futex_waitv
  struct futex_waitv vec[FUTEX_WAITV_MAX];
  size_t n = targets.size() < FUTEX_WAITV_MAX ? targets.size() : FUTEX_WAITV_MAX;
  for (size_t i = 0; i < n; ++i) {
    vec[i].val = targets[i].expected;
    vec[i].uaddr = reinterpret_cast<uintptr_t>(targets[i].word);
    vec[i].flags = FUTEX_32;
    vec[i].__reserved = 0;
  }
  timespec ts{};
  timespec* tsp = nullptr;
  if (deadline_ns >= 0) {
    ts.tv_sec = static_cast<time_t>(deadline_ns / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(deadline_ns % 1'000'000'000);
    tsp = &ts;
  }
  long rc = syscall(SYS_futex_waitv, vec, n, 0, tsp, CLOCK_MONOTONIC);
  if (rc >= 0) return 0;
  return errno == EAGAIN ? 0 : errno;
#else
  (void)targets;
  (void)deadline_ns;
  return ENOSYS;
#endif
}

}  // namespace tandem::abi
