// The metrics seqlock under contention: readers never observe a torn entry.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "abi/metrics.hpp"

namespace tandem::abi {
namespace {

TEST(MetricsStress, ReadersNeverSeeATornUpdate) {
  auto page = std::make_unique<tandem_metrics_page_t>();
  init_metrics_page(*page, 8, 1000);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> torn{0}, reads{0};
  std::thread writer([&] {
    for (uint32_t v = 1; !stop.load(std::memory_order_relaxed); ++v) {
      FunctionMetrics m;  // every field carries the same value: a mix of two updates is detectable
      m.accelerators = static_cast<uint16_t>(v);
      m.queued_jobs = v;
      m.outstanding_work = v;
      m.queue_wait_s = v;
      m.demand = v;
      m.requests = v;
      write_metrics(*page, 5, m);
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 200'000; ++i) {
        FunctionMetrics m;
        if (!read_metrics(*page, 5, m, 1'000'000)) continue;
        reads.fetch_add(1, std::memory_order_relaxed);
        const uint32_t v = m.queued_jobs;
        if (m.accelerators != static_cast<uint16_t>(v) || m.outstanding_work != v || m.queue_wait_s != v ||
            m.demand != v || m.requests != v) {
          torn.fetch_add(1);
        }
      }
    });
  }
  for (auto& r : readers) r.join();
  stop = true;
  writer.join();
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
}

}  // namespace
}  // namespace tandem::abi
