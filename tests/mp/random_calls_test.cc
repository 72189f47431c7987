// Differential tests of the high-level calls through tandemd (tests/random_calls.hpp): random calls of
// every data function, in every mode, with every access method, on heap buffers (copied by the client or
// gathered by tandemd; zero-copy refused) and on session memory, each byte checked against the reference.
#include <gtest/gtest.h>

#include "daemon_harness.hpp"
#include "random_calls.hpp"

namespace tandem {
namespace {

constexpr const char* kKernels =
    "[device.emu]\nslots = 6\nresident = [\"accumulate\", \"sobel\", \"matmul\", \"dct_quant\"]\n";

TEST(RandomCallsDaemon, EveryModeAndMethodGivesTheReferenceOnHeapAndSessionMemory) {
  testing::DaemonProcess d(kKernels);
  ASSERT_TRUE(d.alive());
  auto rt = d.open(client::Mode::auto_mode);
  ASSERT_TRUE(rt);
  std::string report;
  int accelerated = 0;
  EXPECT_EQ(testing::run_random_calls(*rt, 1512, 300, {}, false, report, &accelerated, true), 0) << "heap:\n" << report;
  testing::RandomCall::Memory session{[&](size_t n) { return rt->alloc(n); }, [&](void* p) { rt->free(p); }};
  EXPECT_EQ(testing::run_random_calls(*rt, 1513, 300, session, true, report, &accelerated, true), 0) << "session memory:\n" << report;
  EXPECT_GT(accelerated, 150) << "most calls in hw, alpha and auto modes reach the fabric";
  EXPECT_TRUE(d.alive());
}

}  // namespace
}  // namespace tandem
