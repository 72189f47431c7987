// The timer wheel fires every timer no earlier than its deadline, and none twice.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "base/timer_wheel.hpp"

namespace tandem::rt {
namespace {

TEST(TimerWheel, FiresAtOrAfterDeadlineOnly) {
  TimerWheel w(8, 1000, 64);
  w.expire(0, [](uint32_t) {});
  w.schedule(1, 2500);
  w.schedule(2, 1500);
  EXPECT_EQ(w.next_deadline(), 1500);
  std::vector<uint32_t> fired;
  auto collect = [&](uint32_t id) { fired.push_back(id); };
  w.expire(1499, collect);
  EXPECT_TRUE(fired.empty());
  w.expire(1500, collect);
  EXPECT_EQ(fired, std::vector<uint32_t>{2});
  w.expire(2499, collect);
  EXPECT_EQ(fired.size(), 1u);
  w.expire(2600, collect);
  EXPECT_EQ(fired, (std::vector<uint32_t>{2, 1}));
  EXPECT_EQ(w.size(), 0u);
  EXPECT_EQ(w.next_deadline(), INT64_MAX);
}

TEST(TimerWheel, LaterRoundsAndCancellation) {
  TimerWheel w(4, 10, 64);  // one round is 640 ns
  w.expire(0, [](uint32_t) {});
  w.schedule(0, 5000);       // several rounds ahead, shares a bucket with earlier ticks
  w.schedule(1, 5000 - 640); // same bucket, one round earlier
  w.schedule(2, 100);
  w.cancel(2);
  EXPECT_FALSE(w.pending(2));
  EXPECT_LE(w.next_deadline(), 5000 - 640);
  std::vector<uint32_t> fired;
  w.expire(4300, [&](uint32_t id) { fired.push_back(id); });
  EXPECT_TRUE(fired.empty());
  w.expire(4360, [&](uint32_t id) { fired.push_back(id); });
  w.expire(4999, [&](uint32_t id) { fired.push_back(id); });
  EXPECT_EQ(fired, std::vector<uint32_t>{1});
  w.expire(1'000'000, [&](uint32_t id) { fired.push_back(id); });  // a long sleep
  EXPECT_EQ(fired, (std::vector<uint32_t>{1, 0}));
}

TEST(TimerWheel, PastDeadlineFiresAtNextExpiry) {
  TimerWheel w(2, 1000, 64);
  w.expire(50'000, [](uint32_t) {});
  w.schedule(0, 10);  // already past
  EXPECT_LE(w.next_deadline(), 50'000);
  int n = 0;
  w.expire(50'000, [&](uint32_t) { ++n; });
  EXPECT_EQ(n, 1);
}

TEST(TimerWheel, RandomScheduleNeverEarlyNeverLostNeverTwice) {
  std::mt19937_64 rng(7);
  TimerWheel w(64, 100, 128);
  std::vector<int64_t> deadline(64, -1);
  std::vector<int> fires(64, 0);
  int64_t now = 0;
  w.expire(now, [](uint32_t) {});
  for (int step = 0; step < 20000; ++step) {
    const uint32_t id = static_cast<uint32_t>(rng() % 64);
    if (!w.pending(id)) {
      deadline[id] = now + static_cast<int64_t>(rng() % 50'000);
      w.schedule(id, deadline[id]);
    }
    const int64_t next = w.next_deadline();
    for (uint32_t k = 0; k < 64; ++k) {
      if (w.pending(k)) {
        EXPECT_LE(next, deadline[k]) << "next_deadline may be early, never late";
      }
    }
    now += static_cast<int64_t>(rng() % 3000);
    w.expire(now, [&](uint32_t fired) {
      EXPECT_GE(now, deadline[fired]);
      ++fires[fired];
      deadline[fired] = -1;
    });
    for (uint32_t k = 0; k < 64; ++k) {
      if (deadline[k] >= 0 && deadline[k] <= now) {
        ADD_FAILURE() << "timer " << k << " overdue";
      }
    }
  }
}

}  // namespace
}  // namespace tandem::rt
