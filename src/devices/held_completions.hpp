// Finished jobs a device holds back until their modelled end: the emulated fabric computes a result at
// once but completes the job no earlier than start + D_a + W / X_a; the RTL device completes a job no
// earlier than its cycle count at the fabric clock. One job per slot at a time (the engine's rule), so a
// timing wheel with one timer per slot keeps them: O(1) to hold, expiry walks only passed buckets.
#pragma once

#include <cstdint>
#include <vector>

#include "base/timer_wheel.hpp"
#include "devices/device.hpp"

namespace tandem::devices {

class HeldCompletions {
 public:
  explicit HeldCompletions(uint32_t slots) : wheel_(slots), held_(slots) { ready_.reserve(slots); }

  // Keeps `c` until `c.not_before`; one whose time has come by `now` is ready at once.
  void hold(const DeviceCompletion& c, int64_t now) {
    if (c.not_before <= now) {
      ready_.push_back(c);
      return;
    }
    held_[c.slot] = c;
    wheel_.schedule(c.slot, c.not_before);
  }

  // Appends every completion whose time has come by `now`.
  void release(int64_t now, std::vector<DeviceCompletion>& out) {
    if (!ready_.empty()) {
      if (out.empty()) {
        out.swap(ready_);  // the common case: no copy
      } else {
        out.insert(out.end(), ready_.begin(), ready_.end());
        ready_.clear();
      }
    }
    if (wheel_.size() > 0) wheel_.expire(now, [&](uint32_t slot) { out.push_back(held_[slot]); });
  }

  // When release() will next have something: now-or-earlier (0) if a completion is ready.
  int64_t next_deadline() const { return ready_.empty() ? wheel_.next_deadline() : 0; }
  bool empty() const { return ready_.empty() && wheel_.size() == 0; }

 private:
  TimerWheel wheel_;
  std::vector<DeviceCompletion> held_;  // by slot
  std::vector<DeviceCompletion> ready_;
};

}  // namespace tandem::devices
