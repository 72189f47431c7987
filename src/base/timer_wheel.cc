#include "base/timer_wheel.hpp"

#include <algorithm>
#include <bit>

namespace tandem {

TimerWheel::TimerWheel(uint32_t capacity, int64_t tick_ns, uint32_t bucket_count)
    : entries_(capacity),
      buckets_(std::bit_ceil(std::max<uint32_t>(bucket_count, 64)), kNone),
      occupied_(buckets_.size() / 64, 0),
      tick_ns_(std::max<int64_t>(tick_ns, 1)),
      mask_(static_cast<int64_t>(buckets_.size()) - 1) {}

void TimerWheel::link(uint32_t id, uint32_t b) {
  Entry& e = entries_[id];
  e.bucket = b;
  e.prev = kNone;
  e.next = buckets_[b];
  if (e.next != kNone) entries_[e.next].prev = id;
  buckets_[b] = id;
  occupied_[b / 64] |= uint64_t{1} << (b % 64);
  ++active_;
}

void TimerWheel::unlink(uint32_t id) {
  Entry& e = entries_[id];
  if (e.prev != kNone) {
    entries_[e.prev].next = e.next;
  } else {
    buckets_[e.bucket] = e.next;
  }
  if (e.next != kNone) entries_[e.next].prev = e.prev;
  if (buckets_[e.bucket] == kNone) occupied_[e.bucket / 64] &= ~(uint64_t{1} << (e.bucket % 64));
  e.bucket = e.next = e.prev = kNone;
  --active_;
}

void TimerWheel::schedule(uint32_t id, int64_t deadline) {
  if (entries_[id].bucket != kNone) unlink(id);
  entries_[id].deadline = deadline;
  // A deadline already past goes into the current bucket, so the next expire() fires it.
  const int64_t tick = std::max(tick_of(deadline), cursor_);
  link(id, static_cast<uint32_t>(tick & mask_));
}

void TimerWheel::cancel(uint32_t id) {
  if (entries_[id].bucket != kNone) unlink(id);
}

int64_t TimerWheel::next_deadline() const {
  if (active_ == 0) return INT64_MAX;
  // First occupied bucket at or after the cursor, in wheel order.
  const uint32_t n = static_cast<uint32_t>(buckets_.size());
  const uint32_t start = static_cast<uint32_t>(cursor_ & mask_);
  for (uint32_t step = 0; step < n;) {
    const uint32_t b = (start + step) & static_cast<uint32_t>(mask_);
    const uint64_t word = occupied_[b / 64] >> (b % 64);
    if (word == 0) {
      step += 64 - b % 64;
      continue;
    }
    const uint32_t skip = static_cast<uint32_t>(std::countr_zero(word));
    const uint32_t found_step = step + skip;
    if (found_step >= n) break;
    // No timer has a tick in [cursor, t). If one in this bucket is due in this very round, the
    // earliest of those is the exact answer; otherwise (later rounds only) the bucket start is a
    // safe early bound.
    const int64_t t = cursor_ + found_step;
    const uint32_t bucket = (start + found_step) & static_cast<uint32_t>(mask_);
    int64_t earliest = INT64_MAX;
    for (uint32_t id = buckets_[bucket]; id != kNone; id = entries_[id].next) {
      if (std::max(tick_of(entries_[id].deadline), cursor_) == t) earliest = std::min(earliest, entries_[id].deadline);
    }
    return earliest != INT64_MAX ? earliest : t * tick_ns_;
  }
  return cursor_ * tick_ns_;
}

}  // namespace tandem
