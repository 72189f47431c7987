// Where a device's own threads (simulation workers, driver callbacks) hand finished jobs to the
// dispatcher: a locked list with an atomic count, so that the dispatcher's poll costs one load while
// nothing arrived, and a futex word bumped on every arrival, so that a sleeping dispatcher wakes
// (it waits on the word with its rings' doorbells in one futex_waitv).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "abi/atomics.hpp"
#include "abi/futex.hpp"
#include "devices/device.hpp"
#include "devices/held_completions.hpp"

namespace tandem::devices {

class CompletionInbox {
 public:
  // Any thread.
  void push(const DeviceCompletion& c) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(c);
      count_.fetch_add(1, std::memory_order_release);  // pairs with take()'s acquire
    }
    // Release: a dispatcher that sees the new word value also sees the item (it loads the word before
    // it checks the count, then sleeps only while the word is unchanged).
    abi::fetch_add_acq_rel(word_, 1u);
    abi::futex_wake(&word_);
  }

  // The dispatcher: moves everything that arrived into `out` (appends).
  void take(std::vector<DeviceCompletion>& out) {
    if (count_.load(std::memory_order_acquire) == 0) return;
    std::lock_guard lock(mutex_);
    out.insert(out.end(), items_.begin(), items_.end());
    items_.clear();
    count_.store(0, std::memory_order_relaxed);
  }

  const uint32_t* wake_word() const { return &word_; }

 private:
  std::mutex mutex_;
  std::vector<DeviceCompletion> items_;
  std::atomic<uint32_t> count_{0};
  uint32_t word_ = 0;  // futex: bumped on every push
};

// A device's completions from its own threads: pushed into the inbox (any thread), then held until their
// modelled end and handed to the dispatcher by poll() (dispatcher thread).
class ThreadedCompletions {
 public:
  explicit ThreadedCompletions(uint32_t slots) : held_(slots) { arrived_.reserve(slots); }
  void push(const DeviceCompletion& c) { inbox_.push(c); }
  void poll(int64_t now, std::vector<DeviceCompletion>& out) {
    inbox_.take(arrived_);
    for (const DeviceCompletion& c : arrived_) held_.hold(c, now);
    arrived_.clear();
    held_.release(now, out);
  }
  int64_t next_deadline() const { return held_.next_deadline(); }
  const uint32_t* wake_word() const { return inbox_.wake_word(); }

 private:
  CompletionInbox inbox_;
  HeldCompletions held_;                  // dispatcher thread
  std::vector<DeviceCompletion> arrived_;  // dispatcher thread
};

}  // namespace tandem::devices
