// Several producer threads, one consumer, millions of packets: none lost, none duplicated, each
// producer's packets in its own order. The consumer sleeps on the doorbell whenever the ring is
// empty, so the need-wakeup handshake is exercised millions of times too.
#include <gtest/gtest.h>

#include <sched.h>

#include <atomic>
#include <thread>
#include <vector>

#include "abi/ring.hpp"

namespace tandem::abi {
namespace {

#ifdef TANDEM_TSAN
constexpr uint64_t kPerProducer = 100'000;  // TSan runs ~10x slower; the interleavings still vary
#else
constexpr uint64_t kPerProducer = 1'000'000;
#endif

void backoff(int spins) {
  if (spins < 64) {
    cpu_relax();
  } else {
    sched_yield();
  }
}

void run(uint32_t producers, uint32_t capacity, bool use_try_reserve) {
  std::vector<std::byte> memory(TANDEM_RING_BYTES(capacity));
  ASSERT_EQ(format_ring(memory.data(), memory.size(), capacity, 1), Status::ok);
  RingConsumer consumer(memory.data(), capacity);
  std::vector<uint64_t> next_seq(producers, 0);
  std::atomic<uint32_t> done{0};
  uint64_t received = 0, sleeps = 0;
  bool ok = true;

  std::thread consumer_thread([&] {
    const uint64_t total = kPerProducer * producers;
    tandem_packet_t p;
    while (received < total) {
      uint32_t taken = 0;
      while (taken < 64 && consumer.peek(p)) {
        consumer.pop();
        ++taken;
        const uint64_t who = p.body.dispatch.args[0], seq = p.body.dispatch.args[1];
        if (who >= producers || seq != next_seq[who]) ok = false;  // loss, duplicate or reorder
        if (who < producers) next_seq[who] = seq + 1;
        ++received;
      }
      if (taken > 0) {
        consumer.commit();
        continue;
      }
      const uint32_t bell = consumer.prepare_sleep();
      if (!consumer.has_packet()) {
        ++sleeps;
        futex_wait(consumer.doorbell_word(), bell, 10'000'000);
      }
      consumer.wake_up();
    }
  });

  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < producers; ++t) {
    threads.emplace_back([&, t] {
      RingProducer producer(memory.data());
      for (uint64_t seq = 0; seq < kPerProducer; ++seq) {
        uint64_t idx;
        // More threads than cores: a waiting producer yields so the consumer gets to run.
        if (use_try_reserve) {
          for (int spins = 0; !producer.try_reserve(idx); ++spins) backoff(spins);
        } else {
          idx = producer.reserve();
          for (int spins = 0; !producer.has_space(idx); ++spins) backoff(spins);
        }
        tandem_packet_t& p = producer.packet(idx);
        p.body.dispatch.args[0] = t;
        p.body.dispatch.args[1] = seq;
        producer.submit(idx, make_header(TANDEM_PACKET_DISPATCH, 1));
      }
      done.fetch_add(1);
    });
  }
  for (auto& th : threads) th.join();
  consumer_thread.join();
  EXPECT_TRUE(ok);
  EXPECT_EQ(received, kPerProducer * producers);
  for (uint32_t t = 0; t < producers; ++t) EXPECT_EQ(next_seq[t], kPerProducer);
  ::testing::Test::RecordProperty("consumer_sleeps", static_cast<int>(sleeps));
}

TEST(RingStress, ThreeProducersFetchAddReservation) { run(3, 256, false); }
TEST(RingStress, ThreeProducersTryReserveOnATinyRing) { run(3, 4, true); }
TEST(RingStress, OneProducerNoLoss) { run(1, 64, false); }

}  // namespace
}  // namespace tandem::abi
