// The ring protocol on one thread: formatting, validation, reservation, back-pressure, wake-up flag.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "abi/ring.hpp"

namespace tandem::abi {
namespace {

struct RingMemory {
  explicit RingMemory(uint32_t capacity) : bytes(TANDEM_RING_BYTES(capacity)), data(bytes) {}
  void* base() { return data.data(); }
  size_t bytes;
  std::vector<std::byte> data;
};

TEST(Ring, FormatRejectsBadGeometry) {
  RingMemory m(8);
  EXPECT_EQ(format_ring(m.base(), m.bytes, 6, 1), Status::invalid_argument);   // not a power of two
  EXPECT_EQ(format_ring(m.base(), m.bytes, 1, 1), Status::invalid_argument);   // too small
  EXPECT_EQ(format_ring(m.base(), m.bytes, 16, 1), Status::invalid_argument);  // does not fit
  EXPECT_EQ(format_ring(nullptr, m.bytes, 8, 1), Status::invalid_argument);
  EXPECT_EQ(format_ring(m.base(), m.bytes, 8, 1), Status::ok);
}

TEST(Ring, ValidateChecksMagicVersionAndSize) {
  RingMemory m(8);
  ASSERT_EQ(format_ring(m.base(), m.bytes, 8, 1), Status::ok);
  EXPECT_EQ(validate_ring(m.base(), m.bytes), Status::ok);
  EXPECT_EQ(validate_ring(m.base(), m.bytes - 1), Status::protocol_error);
  auto* h = static_cast<tandem_ring_header_t*>(m.base());
  h->k_version = 99;
  EXPECT_EQ(validate_ring(m.base(), m.bytes), Status::protocol_error);
  h->k_version = TANDEM_ABI_VERSION;
  h->k_capacity = 12;
  EXPECT_EQ(validate_ring(m.base(), m.bytes), Status::protocol_error);
  h->k_capacity = 8;
  h->k_magic = 0;
  EXPECT_EQ(validate_ring(m.base(), m.bytes), Status::protocol_error);
}

// The CPUs the client's calls run on (k_caller_cpus): bit cpu % 64, taken and cleared by the engine.
TEST(Ring, CallerCpusAreMarkedTakenAndCleared) {
  RingMemory m(4);
  ASSERT_EQ(format_ring(m.base(), m.bytes, 4, 1), Status::ok);
  RingProducer prod(m.base());
  RingConsumer cons(m.base(), 4);
  EXPECT_EQ(cons.take_caller_cpus(), 0u) << "a new ring has no CPU marked";
  prod.mark_caller_cpu(3);
  prod.mark_caller_cpu(3);
  prod.mark_caller_cpu(67);  // aliases with 3
  prod.mark_caller_cpu(0);
  prod.mark_caller_cpu(-1);  // sched_getcpu failed: nothing
  EXPECT_EQ(cons.take_caller_cpus(), (uint64_t{1} << 3) | 1u);
  EXPECT_EQ(cons.take_caller_cpus(), 0u) << "taking clears the mask";
  prod.mark_caller_cpu(63);
  EXPECT_EQ(cons.take_caller_cpus(), uint64_t{1} << 63);
}

TEST(Ring, PublishedPacketsArriveInOrderAndFreeTheirSlots) {
  RingMemory m(4);
  ASSERT_EQ(format_ring(m.base(), m.bytes, 4, 1), Status::ok);
  RingProducer prod(m.base());
  RingConsumer cons(m.base(), 4);
  tandem_packet_t out;
  EXPECT_FALSE(cons.peek(out));
  for (uint64_t round = 0; round < 5; ++round) {  // wraps around the ring several times
    for (uint64_t i = 0; i < 4; ++i) {
      uint64_t idx;
      ASSERT_TRUE(prod.try_reserve(idx));
      EXPECT_EQ(idx, round * 4 + i);
      prod.packet(idx).user_data = idx;
      prod.submit(idx, make_header(TANDEM_PACKET_DISPATCH, 7));
    }
    uint64_t idx;
    EXPECT_FALSE(prod.try_reserve(idx)) << "ring of 4 is full after 4 reservations";
    EXPECT_FALSE(prod.has_space(round * 4 + 4));
    for (uint64_t i = 0; i < 4; ++i) {
      ASSERT_TRUE(cons.peek(out));
      EXPECT_EQ(out.user_data, round * 4 + i);
      EXPECT_EQ(header_function(out.header), 7);
      cons.pop();
    }
    EXPECT_FALSE(cons.peek(out));
    EXPECT_FALSE(prod.has_space(round * 4 + 4)) << "slots free only after commit()";
    cons.commit();
    EXPECT_TRUE(prod.has_space(round * 4 + 4));
  }
}

TEST(Ring, ConsumerNeverReadsALapAheadOfItsCommit) {
  RingMemory m(2);
  ASSERT_EQ(format_ring(m.base(), m.bytes, 2, 1), Status::ok);
  RingProducer prod(m.base());
  RingConsumer cons(m.base(), 2);
  for (uint64_t i = 0; i < 2; ++i) prod.submit(prod.reserve(), make_header(TANDEM_PACKET_DISPATCH, 1));
  tandem_packet_t out;
  ASSERT_TRUE(cons.peek(out));
  cons.pop();
  ASSERT_TRUE(cons.peek(out));
  cons.pop();
  EXPECT_FALSE(cons.has_packet()) << "slot 0 still holds the popped packet 0 until commit()";
  EXPECT_FALSE(cons.peek(out));
  cons.commit();
  EXPECT_FALSE(cons.peek(out));
  prod.submit(prod.reserve(), make_header(TANDEM_PACKET_DISPATCH, 3));
  ASSERT_TRUE(cons.peek(out));
  EXPECT_EQ(header_function(out.header), 3);
}

TEST(Ring, UnpublishedReservationHoldsBackLaterPackets) {
  RingMemory m(8);
  ASSERT_EQ(format_ring(m.base(), m.bytes, 8, 1), Status::ok);
  RingProducer prod(m.base());
  RingConsumer cons(m.base(), 8);
  const uint64_t a = prod.reserve();
  const uint64_t b = prod.reserve();
  prod.submit(b, make_header(TANDEM_PACKET_DISPATCH, 1));
  tandem_packet_t out;
  EXPECT_FALSE(cons.peek(out)) << "packet b waits behind the unpublished a (AQL order)";
  prod.submit(a, make_header(TANDEM_PACKET_DISPATCH, 2));
  ASSERT_TRUE(cons.peek(out));
  EXPECT_EQ(header_function(out.header), 2);
}

TEST(Ring, DoorbellRingsOnlyWhenTheConsumerSleeps) {
  RingMemory m(8);
  ASSERT_EQ(format_ring(m.base(), m.bytes, 8, 1), Status::ok);
  RingProducer prod(m.base());
  RingConsumer cons(m.base(), 8);
  const uint32_t* bell = cons.doorbell_word();
  prod.submit(prod.reserve(), make_header(TANDEM_PACKET_DISPATCH, 1));
  EXPECT_EQ(*bell, 0u) << "consumer awake: no doorbell";
  const uint32_t before = cons.prepare_sleep();
  EXPECT_TRUE(cons.has_packet()) << "the re-check after prepare_sleep sees the earlier packet";
  prod.submit(prod.reserve(), make_header(TANDEM_PACKET_DISPATCH, 1));
  EXPECT_EQ(*bell, before + 1) << "consumer asleep: producer rang";
  cons.wake_up();
  prod.submit(prod.reserve(), make_header(TANDEM_PACKET_DISPATCH, 1));
  EXPECT_EQ(*bell, before + 1);
}

TEST(Ring, ConsumerUsesItsOwnGeometryNotTheSharedHeader) {
  RingMemory m(8);
  ASSERT_EQ(format_ring(m.base(), m.bytes, 8, 1), Status::ok);
  RingConsumer cons(m.base(), 8);
  auto* h = static_cast<tandem_ring_header_t*>(m.base());
  h->k_capacity = 1u << 30;  // a hostile client rewrites the header after creation
  h->k_packets_offset = 1ull << 40;
  tandem_packet_t out;
  EXPECT_FALSE(cons.peek(out));  // reads slot 0 of its own 8-packet ring; no wild access
}

}  // namespace
}  // namespace tandem::abi
