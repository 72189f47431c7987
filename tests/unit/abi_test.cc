// The shared structures: sizes, offsets and header encoding are part of the ABI.
#include <gtest/gtest.h>

#include <cstddef>

#include "abi/ring.hpp"
#include "abi/status.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::abi {
namespace {

TEST(Abi, PacketLayoutIsFixed) {
  EXPECT_EQ(sizeof(tandem_packet_t), 64u);
  EXPECT_EQ(offsetof(tandem_packet_t, body.dispatch.workload), 8u);
  EXPECT_EQ(offsetof(tandem_packet_t, body.dispatch.args), 16u);
  EXPECT_EQ(offsetof(tandem_packet_t, body.barrier.deps), 8u);
  EXPECT_EQ(offsetof(tandem_packet_t, completion), 56u);
  EXPECT_EQ(sizeof(tandem_completion_t), 32u);
  EXPECT_EQ(sizeof(tandem_ring_header_t), 256u);
  EXPECT_EQ(offsetof(tandem_ring_header_t, k_busy_callers), 72u);
  EXPECT_EQ(offsetof(tandem_ring_header_t, k_caller_cpus), 80u);
}

TEST(Abi, HeaderEncodesTypeFunctionAndBarrier) {
  const uint32_t h = make_header(TANDEM_PACKET_DISPATCH, 0x1234, true);
  EXPECT_EQ(header_type(h), uint32_t{TANDEM_PACKET_DISPATCH});
  EXPECT_EQ(header_function(h), 0x1234);
  EXPECT_NE(h & TANDEM_HEADER_BARRIER, 0u);
  EXPECT_EQ(h & TANDEM_HEADER_RESERVED_MASK, 0u);
  EXPECT_EQ(make_header(TANDEM_PACKET_BARRIER_AND, 0, false) & TANDEM_HEADER_BARRIER, 0u);
}

TEST(Abi, StatusNamesAreDistinctAndRoundTrip) {
  for (uint32_t v = 0; v < TANDEM_STATUS_COUNT_; ++v) {
    const Status s = from_wire(v);
    EXPECT_EQ(to_wire(s), v);
    EXPECT_NE(to_string(s), "unknown_status");
    for (uint32_t w = 0; w < v; ++w) EXPECT_NE(to_string(from_wire(w)), to_string(s));
  }
  EXPECT_EQ(from_wire(TANDEM_STATUS_COUNT_ + 5), Status::protocol_error);
}

TEST(Abi, ResultCarriesValueOrFailure) {
  Result<int> good(7);
  EXPECT_TRUE(good.ok());
  EXPECT_EQ(good.value(), 7);
  Result<int> bad(Status::queue_full, "full");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status(), Status::queue_full);
  EXPECT_EQ(bad.message(), "full");
  EXPECT_THROW(bad.expect(), Error);
}

}  // namespace
}  // namespace tandem::abi
