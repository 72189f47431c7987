// Calls on_stall() once if a progress counter stops advancing for a whole timeout period. Lets a
// benchmark keep plain blocking system calls on its timed path (no poll() per message) and still
// never hang: on_stall() unblocks the waiting parties (writes a byte, shuts a socket down).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace tandem::bench {

class StallWatchdog {
 public:
  // progress: advanced by the watched code (relaxed stores suffice: only change is looked for).
  // A stall is detected between one and two timeout periods after the last advance.
  StallWatchdog(std::chrono::milliseconds timeout, const std::atomic<uint64_t>& progress,
                std::function<void()> on_stall);
  ~StallWatchdog();  // stops and joins; on_stall() is not called after it returns
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;

  bool fired() const noexcept { return fired_.load(std::memory_order_acquire); }

 private:
  void run();

  std::chrono::milliseconds timeout_;
  const std::atomic<uint64_t>& progress_;
  std::function<void()> on_stall_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mutex_
  std::atomic<bool> fired_{false};
  std::thread thread_;  // last member: starts after everything it reads is constructed
};

}  // namespace tandem::bench
