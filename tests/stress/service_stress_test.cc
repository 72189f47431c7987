// The service-request ring at volume, with every party the library has: one device-side producer (the
// dispatcher's role) posting requests and sleeping on the answer futex when it has nothing to do; the
// client's library thread sleeping on the request futex; two application threads polling at the same
// time; and a thread re-registering the callbacks all along. Every request is answered exactly once with
// the right answer (a torn callback/argument pair answers wrong), a cancelled request never answers its
// slot's next one, and nobody sleeps through a post or an answer (the run would stall). Also run under
// TSan by `make test`.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "abi/futex.hpp"
#include "abi/service.hpp"
#include "client/service.hpp"

namespace tandem::client {
namespace {

#ifdef TANDEM_TSAN
constexpr uint64_t kRequests = 20'000;  // TSan runs ~10x slower; the interleavings still vary
#else
constexpr uint64_t kRequests = 300'000;
#endif
constexpr uint32_t kSlots = 16;

// Two callback/argument pairs that answer alike only when called with their own argument: a reader that
// took one pair's function and the other's argument answers with the marker.
struct Offset {
  uint64_t add;
};
const Offset kOffsetA{1000}, kOffsetB{1000};
constexpr uint64_t kTorn = ~uint64_t{0};
uint64_t add_a(void* user, const uint64_t args[TANDEM_SERVICE_ARGS]) {
  return user == &kOffsetA ? args[0] * 3 + args[1] + static_cast<const Offset*>(user)->add : kTorn;
}
uint64_t add_b(void* user, const uint64_t args[TANDEM_SERVICE_ARGS]) {
  return user == &kOffsetB ? args[0] * 3 + args[1] + static_cast<const Offset*>(user)->add : kTorn;
}
uint64_t expected(uint64_t a0, uint64_t a1) { return a0 * 3 + a1 + 1000; }

TEST(ServiceStress, EveryRequestAnsweredOnceWithPollersSleeperAndReRegistration) {
  std::vector<uint64_t> memory(TANDEM_SERVICE_BYTES(kSlots) / 8 + 1);
  ASSERT_EQ(abi::format_service_ring(memory.data(), TANDEM_SERVICE_BYTES(kSlots), kSlots), Status::ok);
  ServiceClient client;
  for (uint32_t id = 0; id < 4; ++id) ASSERT_EQ(client.register_callback(id, add_a, const_cast<Offset*>(&kOffsetA)), Status::ok);
  // No owner for the memory: the vector outlives the client.
  client.start(memory.data(), kSlots, std::shared_ptr<void>(memory.data(), [](void*) {}), kServicePoll | kServiceSleep,
               nullptr);

  std::atomic<bool> done{false};
  std::vector<std::thread> helpers;
  std::atomic<uint64_t> polled{0};
  for (int t = 0; t < 2; ++t) {
    helpers.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        polled.fetch_add(client.poll(), std::memory_order_relaxed);
        std::this_thread::yield();
      }
    });
  }
  helpers.emplace_back([&] {
    uint32_t flip = 0;
    while (!done.load(std::memory_order_acquire)) {
      ++flip;
      const bool a = flip & 1;
      client.register_callback(flip % 4, a ? add_a : add_b, const_cast<Offset*>(a ? &kOffsetA : &kOffsetB));
      std::this_thread::yield();
    }
  });

  // The device side: single-threaded, as the dispatcher is.
  abi::ServiceProducer producer(memory.data(), kSlots);
  struct Out {
    uint32_t ticket;
    uint64_t a0, a1;
  };
  std::vector<Out> out;
  std::mt19937_64 rng(12);
  uint64_t posted = 0, answered = 0, cancelled = 0, wrong = 0, failed = 0, device_sleeps = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (answered + cancelled < kRequests) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "stalled: " << answered << " answered, "
                                                         << out.size() << " out";
    // Post a burst of 1..kSlots requests while slots are free.
    const uint32_t burst = 1 + static_cast<uint32_t>(rng() % kSlots);
    for (uint32_t i = 0; i < burst && posted < kRequests; ++i) {
      abi::ServiceRequest r;
      r.service = static_cast<uint32_t>(rng() % 4);
      r.token = posted;
      r.args = {posted, rng() % 1000, 0, 0};
      uint32_t ticket = 0;
      if (!producer.post(r, ticket)) break;
      ++posted;
      // One in 64 is given up at once (a timed-out job): its late answer must never reach the next
      // request of the slot.
      if (rng() % 64 == 0) {
        producer.cancel(ticket);
        ++cancelled;
      } else {
        out.push_back({ticket, r.args[0], r.args[1]});
      }
    }
    // Collect answers; sleep on the answer word now and then (the dispatcher's idle path).
    bool any = false;
    for (size_t i = 0; i < out.size();) {
      uint64_t answer = 0;
      Status why = Status::ok;
      const auto c = producer.check(out[i].ticket, answer, why);
      if (c == abi::ServiceProducer::Check::pending) {
        ++i;
        continue;
      }
      any = true;
      if (c == abi::ServiceProducer::Check::failed) ++failed;
      else if (answer != expected(out[i].a0, out[i].a1)) ++wrong;
      ++answered;
      out[i] = out.back();
      out.pop_back();
    }
    if (!any && !out.empty() && rng() % 4 == 0) {
      const uint32_t bell = producer.prepare_sleep();
      if (!producer.has_answers()) {
        ++device_sleeps;
        abi::futex_wait(producer.answer_word(), bell, 50'000'000);
      }
      producer.wake_up();
    }
  }
  done.store(true, std::memory_order_release);
  for (auto& th : helpers) th.join();
  client.stop();

  EXPECT_EQ(wrong, 0u) << "answers for another request, or from a torn callback/argument pair";
  EXPECT_EQ(failed, 0u);
  EXPECT_EQ(answered + cancelled, kRequests);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(producer.outstanding(), 0u);
  ::testing::Test::RecordProperty("device_sleeps", static_cast<int>(device_sleeps));
  ::testing::Test::RecordProperty("served_by_pollers", static_cast<int>(polled.load()));
}

}  // namespace
}  // namespace tandem::client
