// A hashed timing wheel for real-time drivers and devices: job completions and reconfigurations fire no
// earlier than their deadline. O(1) schedule and cancel; expiry walks only the buckets that passed.
// Timers are identified by small integers (one per slot and purpose) and never allocate.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem {

class TimerWheel {
 public:
  // `capacity` timer ids; buckets of `tick_ns`; `bucket_count` a power of two.
  explicit TimerWheel(uint32_t capacity, int64_t tick_ns = 1000, uint32_t bucket_count = 1024);

  // Arms timer `id` for `deadline` (replacing a pending one).
  void schedule(uint32_t id, int64_t deadline);
  void cancel(uint32_t id);
  bool pending(uint32_t id) const { return entries_[id].bucket != kNone; }
  uint32_t size() const { return active_; }

  // Fires, in no particular order, every timer whose deadline is <= now. `fire(id)` may re-arm timers.
  template <class Fire>
  void expire(int64_t now, Fire&& fire) {
    if (active_ == 0) {
      cursor_ = tick_of(now);
      return;
    }
    const int64_t now_tick = tick_of(now);
    // After a long sleep one pass over every bucket is enough.
    const int64_t first = now_tick - cursor_ >= static_cast<int64_t>(buckets_.size()) ? now_tick - mask_ : cursor_;
    for (int64_t t = first; t <= now_tick; ++t) fire_bucket(static_cast<uint32_t>(t & mask_), now, fire);
    cursor_ = now_tick;  // bucket `now_tick` stays current: later timers may still land in it
  }

  // A time at or before the earliest pending deadline (the start of its bucket); INT64_MAX if none.
  int64_t next_deadline() const;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Entry {
    int64_t deadline = 0;
    uint32_t next = kNone;
    uint32_t prev = kNone;
    uint32_t bucket = kNone;
  };

  int64_t tick_of(int64_t t) const { return t / tick_ns_; }
  void link(uint32_t id, uint32_t bucket);
  void unlink(uint32_t id);

  template <class Fire>
  void fire_bucket(uint32_t b, int64_t now, Fire& fire) {
    for (uint32_t id = buckets_[b]; id != kNone;) {
      const uint32_t next = entries_[id].next;
      if (entries_[id].deadline <= now) {
        unlink(id);
        fire(id);
      }
      id = next;
    }
  }

  std::vector<Entry> entries_;
  std::vector<uint32_t> buckets_;   // head entry per bucket
  std::vector<uint64_t> occupied_;  // bitmap of non-empty buckets
  int64_t tick_ns_;
  int64_t mask_;
  int64_t cursor_ = 0;              // tick of the bucket being filled now
  uint32_t active_ = 0;
};

}  // namespace tandem
