// Differential tests of the high-level calls through tandemd (tests/random_calls.hpp): random calls of
// every data function, in every mode, with every access method, on heap buffers (copied by the client or
// gathered by tandemd; zero-copy refused) and on session memory, each byte checked against the reference.
#include <gtest/gtest.h>

#include <cstdio>

#include "daemon_harness.hpp"
#include "device_end_to_end.hpp"
#include "random_calls.hpp"

namespace tandem {
namespace {

constexpr const char* kKernels =
    "[device.emu]\nslots = 6\nresident = [\"accumulate\", \"sobel\", \"matmul\", \"dct_quant\", \"priority_queue\"]\n";

TEST(RandomCallsDaemon, EveryModeAndMethodGivesTheReferenceOnHeapAndSessionMemory) {
  testing::DaemonProcess d(kKernels);
  ASSERT_TRUE(d.alive());
  auto rt = d.open(client::Mode::auto_mode);
  ASSERT_TRUE(rt);
  std::string report;
  int accelerated = 0;
  EXPECT_EQ(testing::run_random_calls(*rt, 1512, 300, {}, {.zero_copy_reaches = false, .device_local = true, .priority_queue = true}, report, &accelerated), 0) << "heap:\n" << report;
  testing::RandomCall::Memory session{[&](size_t n) { return rt->alloc(n); }, [&](void* p) { rt->free(p); }};
  EXPECT_EQ(testing::run_random_calls(*rt, 1513, 300, session, {.device_local = true, .priority_queue = true}, report, &accelerated), 0) << "session memory:\n" << report;
  EXPECT_GT(accelerated, 150) << "most calls in hw, alpha and auto modes reach the fabric";
  EXPECT_TRUE(d.alive());
}

// Client processes at once, each with random calls of its own (heap, session memory and device-local
// buffers, every mode and method): every byte of every call still its own reference's.
TEST(RandomCallsDaemon, ClientProcessesAtOnceEachGetTheirReferences) {
  testing::DaemonProcess d(kKernels);
  ASSERT_TRUE(d.alive());
  testing::run_clients(d.socket(), 4, [](int i, client::Runtime& rt) {
    std::string report;
    testing::RandomCall::Memory session{[&](size_t n) { return rt.alloc(n); }, [&](void* p) { rt.free(p); }};
    const uint64_t seed = 1550 + static_cast<uint64_t>(i) * 2;
    int accelerated = 0;
    int failures = testing::run_random_calls(rt, seed, 120, {}, {.zero_copy_reaches = false, .device_local = true, .priority_queue = true}, report, &accelerated);
    failures += testing::run_random_calls(rt, seed + 1, 120, session, {.device_local = true, .priority_queue = true}, report, &accelerated);
    if (failures > 0) std::fprintf(stderr, "client %d:\n%s", i, report.c_str());
    if (accelerated < 40) std::fprintf(stderr, "client %d: only %d of 240 calls reached the fabric\n", i, accelerated);
    return failures + (accelerated < 40 ? 1 : 0) + (::testing::Test::HasFailure() ? 1 : 0);
  });
  EXPECT_TRUE(d.alive());
}

}  // namespace
}  // namespace tandem
