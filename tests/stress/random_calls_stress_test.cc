// Threads making random high-level calls at once (tests/random_calls.hpp) while the runtime's mode and
// access choice change under them (each thread sets them before every call): every byte of every call
// still equals the reference's. Run under TSan too. (A failure's report names the mode and method its
// thread set; another thread may have changed them before the call read them, and a forced method that
// refuses a call's buffers may be another thread's.)
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "random_calls.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

#ifdef TANDEM_TSAN
constexpr int kCallsPerThread = 40;
#else
constexpr int kCallsPerThread = 250;
#endif

TEST(RandomCallsStress, ThreadsInEveryModeAndMethodGiveTheReference) {
  auto rt = testing::open_embedded("[device.emu]\nslots = 6\nresident = [\"accumulate\", \"sobel\", \"matmul\", \"dct_quant\", \"priority_queue\"]\n");
  ASSERT_TRUE(rt);
  constexpr int kThreads = 4;
  std::vector<std::string> reports(kThreads);
  std::atomic<int> failures{0}, accelerated{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      int mine = 0;
      failures += testing::run_random_calls(*rt, 1541 + t, kCallsPerThread, {}, {.device_local = true, .choice_shared = true, .priority_queue = true}, reports[t], &mine);
      accelerated += mine;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0) << reports[0] << reports[1] << reports[2] << reports[3];
  EXPECT_GT(accelerated.load(), kThreads * kCallsPerThread / 5);
}

}  // namespace
}  // namespace tandem
