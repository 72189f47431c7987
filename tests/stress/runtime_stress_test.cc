// Many threads submit many jobs through the embedded runtime; every completion is checked.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "client/embedded.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

#ifdef TANDEM_TSAN
constexpr int kJobsPerThread = 5'000;
#else
constexpr int kJobsPerThread = 50'000;
#endif

TEST(RuntimeStress, ThreadsPipelineBatchesOfJobsAndEveryResultIsRight) {
  auto rt = testing::open_embedded();
  ASSERT_TRUE(rt);
  constexpr int kThreads = 4, kBatch = 32;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto q = rt->create_queue(64);
      client::Queue& queue = t % 2 == 0 ? rt->default_queue() : *q.value();  // shared and private rings
      std::vector<int32_t> data(16, t + 1);
      std::vector<tandem_completion_t> recs(kBatch);
      for (int done = 0; done < kJobsPerThread; done += kBatch) {
        for (auto& r : recs) {
          rt::reset_record(&r);
          const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data.data()), data.size()};
          if (queue.dispatch(TANDEM_FN_ACCUMULATE, args, 2, 64, &r) != Status::ok) bad.fetch_add(1);
        }
        for (auto& r : recs) {
          if (rt->wait(&r, {}) != Status::ok || r.value != 16 * (t + 1)) bad.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  auto* embedded = dynamic_cast<client::EmbeddedRuntime*>(rt.get());
  const auto snap = embedded->dispatcher().snapshot();
  const uint64_t jobs = static_cast<uint64_t>(kThreads) * ((kJobsPerThread + kBatch - 1) / kBatch) * kBatch;
  EXPECT_EQ(snap.stats.completions, jobs) << "none lost, none completed twice";
  EXPECT_EQ(snap.stats.rejected, 0u);
}

}  // namespace
}  // namespace tandem
