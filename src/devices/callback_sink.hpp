// Where a driver's own threads (OpenCL event callbacks, CUDA host functions) hand a device its
// completions. A callback's user data is one of the sink's targets (a slot, or the device's batches),
// never the device itself: a driver may call back after the device is gone (PoCL never calls back a
// command it terminated; a conforming driver does, possibly late), so a device that ends with
// callbacks still pending leaves its sink behind (retire()) rather than free what a late one touches.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "devices/completion_inbox.hpp"
#include "devices/device.hpp"

namespace tandem::devices {

class CallbackSink {
 public:
  // One target per slot (its completions carry the slot's index) and one for the device's batches
  // (they carry `batch_slot`).
  CallbackSink(uint32_t slots, uint32_t batch_slot) : slots_(slots), targets_(std::make_unique<Target[]>(slots + 1)) {
    for (uint32_t i = 0; i < slots; ++i) targets_[i] = Target{this, i};
    targets_[slots] = Target{this, batch_slot};
  }
  CallbackSink(const CallbackSink&) = delete;
  CallbackSink& operator=(const CallbackSink&) = delete;

  // The user data of a callback for a slot's job, or for a batch.
  void* slot_target(uint32_t slot) { return &targets_[slot]; }
  void* batch_target() { return &targets_[slots_]; }

  // Before registering a callback, and if the registration failed.
  void expect() { pending_.fetch_add(1, std::memory_order_relaxed); }
  void cancel() { pending_.fetch_sub(1, std::memory_order_relaxed); }
  // Registered callbacks that have not run yet.
  int pending() const { return pending_.load(std::memory_order_acquire); }

  // A callback (any thread): `c` arrives for the dispatcher with its target's slot.
  static void arrive(void* user, DeviceCompletion c) {
    auto* t = static_cast<Target*>(user);
    CallbackSink* sink = t->sink;
    c.slot = t->slot;
    sink->inbox_.push(c);
    sink->pending_.fetch_sub(1, std::memory_order_release);  // the callback's last touch of the sink
  }

  CompletionInbox& inbox() { return inbox_; }
  const CompletionInbox& inbox() const { return inbox_; }

  // At the device's end: frees the sink, unless callbacks are still pending; then it is kept for them
  // (and kept out of the leak checker's report: it is not lost, it is waited for).
  static void retire(std::unique_ptr<CallbackSink> sink);

 private:
  struct Target {
    CallbackSink* sink = nullptr;
    uint32_t slot = 0;
  };
  uint32_t slots_;
  std::unique_ptr<Target[]> targets_;
  CompletionInbox inbox_;
  std::atomic<int> pending_{0};
};

}  // namespace tandem::devices
