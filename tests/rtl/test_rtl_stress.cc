// Several client threads share the rtl device through the embedded runtime while another thread
// keeps reconfiguring the spare slots (label stress: also built and run under TSan). Every result
// is compared with the software path.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "client/embedded.hpp"
#include "rt/completion.hpp"
#include "rtl_cases.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

#ifdef TANDEM_TSAN
constexpr int kRoundsPerThread = 6;
#else
constexpr int kRoundsPerThread = 25;
#endif

using testing::Case;

// One round: one call of each function, all submitted before any is waited for.
std::vector<Case> round_cases(uint64_t seed) {
  std::vector<Case> cases;
  cases.push_back(testing::accumulate_case(seed, 300));
  cases.push_back(testing::sobel_case(seed, 40, 12));
  cases.push_back(testing::matmul_case(seed, 9, 7, 11));
  cases.push_back(testing::dct_case(seed, 6, TANDEM_DCT_MODE_DCT_QUANTIZE));
  cases.push_back(testing::pq_case(seed, 120));
  return cases;
}

TEST(RtlStress, ClientThreadsShareTheRtlDeviceWhileSlotsAreReconfigured) {
  // Eight slots: the five accelerators resident in 0-4, slots 5-7 spare for the reconfigurer.
  auto rt = testing::open_embedded("[device]\nkinds = [\"rtl\"]\n[device.rtl]\nslots = 8\n", client::Mode::hw);
  ASSERT_TRUE(rt);
  auto& dispatcher = dynamic_cast<client::EmbeddedRuntime&>(*rt).dispatcher();
  constexpr int kThreads = 3;
  std::atomic<int> bad{0};
  std::atomic<bool> stop{false};
  std::atomic<int> loads{0};
  std::thread reconfigurer([&] {
    const uint16_t fns[] = {TANDEM_FN_SOBEL, TANDEM_FN_MATMUL, TANDEM_FN_DCT_QUANT, TANDEM_FN_PRIORITY_QUEUE,
                            TANDEM_FN_ACCUMULATE};
    for (uint32_t i = 0; !stop.load(); ++i) {
      if (dispatcher.load(5 + i % 3, fns[i % 5])) loads.fetch_add(1);  // refused while busy: fine
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto q = rt->create_queue(16);
      if (!q) {
        bad.fetch_add(1);
        return;
      }
      for (int round = 0; round < kRoundsPerThread; ++round) {
        const uint64_t seed = 1000 * static_cast<uint64_t>(t) + static_cast<uint64_t>(round);
        std::vector<Case> hw = round_cases(seed), sw = round_cases(seed);
        std::vector<tandem_completion_t> recs(hw.size());
        for (size_t i = 0; i < hw.size(); ++i) {
          testing::call_of(hw[i]);
          rt::reset_record(&recs[i]);
          if (q.value()->dispatch(hw[i].function, hw[i].args.data(), static_cast<uint32_t>(hw[i].args.size()),
                                  hw[i].workload, &recs[i]) != Status::ok) {
            bad.fetch_add(1);
          }
        }
        for (size_t i = 0; i < hw.size(); ++i) {
          const int64_t want = testing::run_software(sw[i]);
          if (rt->wait(&recs[i], {}) != Status::ok || static_cast<int64_t>(recs[i].value) != want ||
              (sw[i].output != SIZE_MAX && sw[i].out() != hw[i].out())) {
            bad.fetch_add(1);
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  reconfigurer.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(loads.load(), 0) << "the spare slots start empty: the first load is always taken";
  const auto snap = dispatcher.snapshot();
  EXPECT_EQ(snap.stats.completions, static_cast<uint64_t>(kThreads) * kRoundsPerThread * 5);
  EXPECT_EQ(snap.stats.rejected, 0u);
}

}  // namespace
}  // namespace tandem
