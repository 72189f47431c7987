#include "support/watchdog.hpp"

#include <utility>

namespace tandem::bench {

StallWatchdog::StallWatchdog(std::chrono::milliseconds timeout, const std::atomic<uint64_t>& progress,
                             std::function<void()> on_stall)
    : timeout_(timeout), progress_(progress), on_stall_(std::move(on_stall)), thread_([this] { run(); }) {}

StallWatchdog::~StallWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void StallWatchdog::run() {
  uint64_t last = progress_.load(std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, timeout_, [this] { return stopping_; })) {
    const uint64_t now = progress_.load(std::memory_order_relaxed);
    if (now != last) {
      last = now;
      continue;
    }
    // Release, paired with the acquire in fired(): a caller that sees the flag also sees what the
    // watchdog observed before raising it.
    fired_.store(true, std::memory_order_release);
    lock.unlock();
    on_stall_();
    return;
  }
}

}  // namespace tandem::bench
