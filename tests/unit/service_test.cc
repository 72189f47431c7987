// The service-request ring (abi/service.hpp): requests round-trip; whatever the client writes into
// the shared slots, the producer accepts only the exact answer word it expects, and a slot it gave up
// on is free again and never takes a late answer for the next request.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "abi/service.hpp"

namespace tandem::abi {
namespace {

struct Ring {
  explicit Ring(uint32_t count) : slots(count), memory(TANDEM_SERVICE_BYTES(count) / 8 + 1) {
    EXPECT_EQ(format_service_ring(base(), bytes(), count), Status::ok);
  }
  void* base() { return memory.data(); }
  size_t bytes() const { return TANDEM_SERVICE_BYTES(slots); }
  tandem_service_slot_t& slot(uint32_t i) {
    return reinterpret_cast<tandem_service_slot_t*>(static_cast<char*>(base()) + TANDEM_SERVICE_HEADER_BYTES)[i];
  }
  uint32_t slots;
  std::vector<uint64_t> memory;
};

ServiceRequest request(uint32_t service, uint64_t a0) {
  ServiceRequest r;
  r.service = service;
  r.token = 7;
  r.args = {a0, a0 + 1, a0 + 2, a0 + 3};
  return r;
}

TEST(ServiceRing, FormatAndValidate) {
  Ring ring(4);
  EXPECT_EQ(validate_service_ring(ring.base(), ring.bytes(), 4), Status::ok);
  EXPECT_EQ(validate_service_ring(ring.base(), ring.bytes(), 8), Status::invalid_argument) << "too small for 8";
  EXPECT_EQ(validate_service_ring(ring.base(), ring.bytes() + 64, 5), Status::protocol_error) << "formatted with 4";
  EXPECT_EQ(validate_service_ring(nullptr, ring.bytes(), 4), Status::invalid_argument);
  EXPECT_EQ(validate_service_ring(ring.base(), ring.bytes(), 0), Status::invalid_argument);
  static_cast<tandem_service_header_t*>(ring.base())->k_magic = 1;
  EXPECT_EQ(validate_service_ring(ring.base(), ring.bytes(), 4), Status::protocol_error);
  EXPECT_EQ(format_service_ring(ring.base(), ring.bytes(), TANDEM_SERVICE_MAX_SLOTS + 1), Status::invalid_argument);
}

TEST(ServiceRing, RequestsRoundTripInAnyOrder) {
  Ring ring(4);
  ServiceProducer producer(ring.base(), 4);
  ServiceConsumer consumer(ring.base(), 4);
  EXPECT_FALSE(consumer.has_news());
  uint32_t t1 = 0, t2 = 0;
  ASSERT_TRUE(producer.post(request(3, 100), t1));
  ASSERT_TRUE(producer.post(request(5, 200), t2));
  EXPECT_EQ(producer.outstanding(), 2u);
  uint64_t answer = 0;
  Status why = Status::ok;
  EXPECT_EQ(producer.check(t1, answer, why), ServiceProducer::Check::pending);
  ASSERT_TRUE(consumer.has_news());
  std::vector<uint32_t> seen;
  EXPECT_EQ(consumer.serve([&](const ServiceRequest& r, uint64_t& a) {
    seen.push_back(r.service);
    EXPECT_EQ(r.args[3], r.args[0] + 3);
    a = r.args[0] * 2;
    return Status::ok;
  }), 2u);
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_FALSE(consumer.has_news());
  EXPECT_EQ(producer.check(t2, answer, why), ServiceProducer::Check::answered);
  EXPECT_EQ(answer, 400u);
  EXPECT_EQ(producer.check(t1, answer, why), ServiceProducer::Check::answered);
  EXPECT_EQ(answer, 200u);
  EXPECT_EQ(producer.outstanding(), 0u);
  // Served requests are not served twice.
  EXPECT_EQ(consumer.serve([](const ServiceRequest&, uint64_t&) { return Status::ok; }), 0u);
}

TEST(ServiceRing, FullRingRefusesUntilASlotIsFree) {
  Ring ring(2);
  ServiceProducer producer(ring.base(), 2);
  uint32_t t[3] = {};
  ASSERT_TRUE(producer.post(request(1, 1), t[0]));
  ASSERT_TRUE(producer.post(request(1, 2), t[1]));
  EXPECT_FALSE(producer.post(request(1, 3), t[2]));
  producer.cancel(t[0]);
  EXPECT_TRUE(producer.post(request(1, 3), t[2]));
}

TEST(ServiceRing, ClientFailureAndGarbageFailOnlyThatRequest) {
  Ring ring(4);
  ServiceProducer producer(ring.base(), 4);
  ServiceConsumer consumer(ring.base(), 4);
  uint32_t t = 0;
  uint64_t answer = 0;
  Status why = Status::ok;
  // The client has no callback: it says so, the request fails.
  ASSERT_TRUE(producer.post(request(9, 1), t));
  consumer.serve([](const ServiceRequest&, uint64_t&) { return Status::unknown_function; });
  EXPECT_EQ(producer.check(t, answer, why), ServiceProducer::Check::failed);
  EXPECT_EQ(why, Status::service_failed);
  // An answer word with the wrong sequence, a state kind nobody defined, a free word: all garbage.
  for (uint32_t garbage : {0xfffffff2u, 0x3u, 0u}) {
    ASSERT_TRUE(producer.post(request(1, 1), t));
    ring.slot(t).state = garbage;
    EXPECT_EQ(producer.check(t, answer, why), ServiceProducer::Check::failed) << garbage;
    EXPECT_EQ(why, Status::service_failed);
  }
  // A ticket that is not out (a caller bug) fails without touching shared memory.
  EXPECT_EQ(producer.check(3000, answer, why), ServiceProducer::Check::failed);
  EXPECT_EQ(why, Status::invalid_argument);
  EXPECT_EQ(producer.outstanding(), 0u);
  // The scribbled ring still works.
  ASSERT_TRUE(producer.post(request(2, 5), t));
  consumer.serve([](const ServiceRequest& r, uint64_t& a) {
    a = r.args[0] + 1;
    return Status::ok;
  });
  EXPECT_EQ(producer.check(t, answer, why), ServiceProducer::Check::answered);
  EXPECT_EQ(answer, 6u);
}

TEST(ServiceRing, ALateAnswerNeverAnswersTheNextRequest) {
  Ring ring(1);
  ServiceProducer producer(ring.base(), 1);
  ServiceConsumer consumer(ring.base(), 1);
  uint32_t t = 0;
  ASSERT_TRUE(producer.post(request(1, 1), t));
  // The client copies the request, then the producer gives up (timeout) before it answers.
  const tandem_service_slot_t copy = ring.slot(t);
  producer.cancel(t);
  EXPECT_EQ(consumer.serve([](const ServiceRequest&, uint64_t& a) {
    a = 1;
    return Status::ok;
  }), 0u) << "a cancelled slot is not served";
  // A late answer written the way a slow client would (its old sequence) is not the next request's.
  ASSERT_TRUE(producer.post(request(1, 2), t));
  ring.slot(t).state = (copy.state & ~3u) | TANDEM_SERVICE_ANSWERED;
  uint64_t answer = 0;
  Status why = Status::ok;
  EXPECT_EQ(producer.check(t, answer, why), ServiceProducer::Check::failed);
  EXPECT_EQ(why, Status::service_failed);
}

TEST(ServiceRing, SleepFlagsMakeEachSideWakeTheOther) {
  Ring ring(2);
  ServiceProducer producer(ring.base(), 2);
  ServiceConsumer consumer(ring.base(), 2);
  auto* h = static_cast<tandem_service_header_t*>(ring.base());
  const uint32_t bell = producer.prepare_sleep();
  EXPECT_TRUE(h->k_device_flags & TANDEM_SERVICE_SLEEPING);
  uint32_t t = 0;
  ASSERT_TRUE(producer.post(request(1, 1), t));
  consumer.serve([](const ServiceRequest&, uint64_t& a) {
    a = 2;
    return Status::ok;
  });
  EXPECT_NE(h->k_answered, bell) << "the answer moved the word the device side sleeps on";
  producer.wake_up();
  EXPECT_FALSE(h->k_device_flags & TANDEM_SERVICE_SLEEPING);
  // A client sleep returns at once when a request came after what it saw.
  const uint32_t seen = consumer.seen();
  ASSERT_TRUE(producer.post(request(1, 1), t));
  consumer.sleep(seen, 5'000'000'000);  // would hang the test if it waited
  EXPECT_TRUE(consumer.has_news());
  EXPECT_FALSE(h->k_client_flags & TANDEM_SERVICE_SLEEPING);
}

}  // namespace
}  // namespace tandem::abi
