#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <numeric>
#include <vector>

#include "support/child_process.hpp"
#include "support/detail/spin_wait.hpp"
#include "support/measure.hpp"
#include "support/measure_json.hpp"
#include "support/watchdog.hpp"

namespace tandem::bench {
namespace {

TEST(Summarize, EmptyGivesZeroSamples) {
  const Summary s = summarize({});
  EXPECT_EQ(s.samples, 0u);
  EXPECT_EQ(s.median, 0.0);
}

TEST(Summarize, OddCountUsesMiddleSample) {
  const std::vector<double> v{5, 1, 3};
  const Summary s = summarize(v);
  EXPECT_EQ(s.samples, 3u);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.median, 3);
  EXPECT_EQ(s.max, 5);
  EXPECT_EQ(s.p99, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
}

TEST(Summarize, EvenCountAveragesMiddlePairAndP99IsNearestRank) {
  std::vector<double> v(1000);
  std::iota(v.rbegin(), v.rend(), 1.0);  // 1000 .. 1, unsorted input on purpose
  const Summary s = summarize(v);
  EXPECT_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.median, 500.5);
  EXPECT_EQ(s.p99, 990);  // the 990th smallest of 1000
  EXPECT_EQ(s.max, 1000);
  EXPECT_DOUBLE_EQ(s.mean, 500.5);
}

TEST(Summarize, SmallCountP99IsTheMaximum) {
  const std::vector<double> v{2, 4, 6, 8, 10, 12, 14, 16, 18, 20};
  EXPECT_EQ(summarize(v).p99, 20);
}

TEST(SummaryJson, CarriesUnitsInKeys) {
  const std::vector<double> v{1, 2, 3};
  const nlohmann::json j = summarize(v);
  EXPECT_EQ(j.at("median_ns"), 2.0);
  EXPECT_EQ(j.at("min_ns"), 1.0);
  EXPECT_EQ(j.at("p99_ns"), 3.0);
  EXPECT_EQ(j.at("samples"), 3);
  EXPECT_TRUE(j.contains("mean_ns"));
  EXPECT_TRUE(j.contains("max_ns"));
}

TEST(TickClock, AgreesWithClockMonotonicOverASleep) {
  const TickClock& clock = TickClock::get();
  ASSERT_GT(clock.ns_per_tick(), 0.0);
  // Each tick read is bracketed by two monotonic reads: on a loaded machine (tests run in parallel)
  // the thread can be descheduled between reads, and the brackets say by how much.
  const int64_t n0_before = now_ns();
  const uint64_t t0 = clock.now();
  const int64_t n0_after = now_ns();
  timespec pause{0, 20'000'000};
  nanosleep(&pause, nullptr);
  const int64_t n1_before = now_ns();
  const uint64_t t1 = clock.now();
  const int64_t n1_after = now_ns();
  ASSERT_GE(t1, t0);
  const double by_ticks = clock.to_ns(t1 - t0);
  const double shortest = static_cast<double>(n1_before - n0_after);
  const double longest = static_cast<double>(n1_after - n0_before);
  EXPECT_GE(shortest, 20e6);  // a sleep is never shorter than asked
  // Same interval, two clocks: only calibration error (1%) separates them beyond the read skew.
  EXPECT_GE(by_ticks, 0.99 * shortest);
  EXPECT_LE(by_ticks, 1.01 * longest);
}

TEST(Pinning, PinsAndScopedPinRestoresTheMask) {
  const std::vector<int> cpus = usable_cpus();
  ASSERT_FALSE(cpus.empty());
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  {
    ScopedPin pin(cpus.back());
    ASSERT_TRUE(pin.pinned());
    EXPECT_EQ(usable_cpus(), std::vector<int>{cpus.back()});
    EXPECT_EQ(sched_getcpu(), cpus.back());
  }
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
  EXPECT_FALSE(pin_this_thread(-1));
}

TEST(Pinning, CpuPairIsDistinctWhenTwoCpusAreUsable) {
  const CpuPair pair = pick_cpu_pair();
  EXPECT_EQ(pair.distinct, usable_cpus().size() >= 2);
  EXPECT_EQ(pair.distinct, pair.a != pair.b);
}

TEST(SampleLoop, CallsWarmupPlusSamplesTimesOps) {
  int calls = 0;
  const std::vector<double> samples = sample_loop({3, 5, 4}, [&] { ++calls; });
  EXPECT_EQ(calls, 3 + 5 * 4);
  ASSERT_EQ(samples.size(), 5u);
  for (double s : samples) EXPECT_GE(s, 0.0);
}

TEST(SampleLoop, StatusVariantStopsAtTheFirstFailure) {
  int calls = 0;
  const Result<std::vector<double>> got = sample_loop_status({2, 10, 1}, [&] {
    return ++calls == 6 ? Status::timeout : Status::ok;
  });
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status(), Status::timeout);
  EXPECT_EQ(calls, 6);
}

TEST(Interleave, AlternatesMeasurementsAndConcatenatesTheirSamples) {
  std::string order;
  int b_calls = 0;
  const std::vector<Measurement> measurements{
      [&]() -> Result<std::vector<double>> {
        order += 'A';
        return std::vector<double>{1, 2};
      },
      [&]() -> Result<std::vector<double>> {
        order += 'B';
        if (++b_calls == 2) return {Status::timeout, "stalled"};
        return std::vector<double>{3};
      },
  };
  const auto merged = interleave(3, measurements);
  EXPECT_EQ(order, "ABABA");  // B failed in round 2 and is not run again
  ASSERT_EQ(merged.size(), 2u);
  ASSERT_TRUE(merged[0].ok());
  EXPECT_EQ(merged[0].value(), (std::vector<double>{1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(merged[1].status(), Status::timeout);
  EXPECT_EQ(merged[1].message(), "stalled");
}

TEST(TextTable, AlignsTextLeftAndNumbersRight) {
  TextTable t({"peer", "median ns"});
  t.add_row({"futex", "1234.5"});
  t.add_row({"pingpong", "98.0"});
  t.add_row({"starpu", "n/a"});
  t.add_row({"eventfd"});
  EXPECT_EQ(t.render(),
            "peer      median ns\n"
            "-------------------\n"
            "futex        1234.5\n"
            "pingpong       98.0\n"
            "starpu    n/a\n"
            "eventfd\n");
  EXPECT_EQ(fixed(2.345, 2), "2.35");
}

TEST(SpinWait, ReturnsReadyTimedOutOrAborted) {
  const detail::SpinPolicy policy = detail::SpinPolicy::for_cpus(true, 1e6);  // 1 ms
  EXPECT_EQ(detail::spin_until([] { return true; }, [] { return false; }, policy),
            detail::WaitOutcome::ready);
  EXPECT_EQ(detail::spin_until([] { return false; }, [] { return false; }, policy),
            detail::WaitOutcome::timed_out);
  EXPECT_EQ(detail::spin_until([] { return false; }, [] { return true; }, policy),
            detail::WaitOutcome::aborted);
  const detail::SpinPolicy shared_cpu = detail::SpinPolicy::for_cpus(false, 1e6);
  EXPECT_EQ(detail::spin_until([] { return false; }, [] { return false; }, shared_cpu),
            detail::WaitOutcome::timed_out);
}

TEST(StallWatchdog, FiresOnceWhenProgressStops) {
  std::atomic<uint64_t> progress{0};
  std::atomic<int> stalls{0};
  {
    StallWatchdog dog(std::chrono::milliseconds(10), progress, [&] { stalls.fetch_add(1); });
    while (!dog.fired()) {
      timespec pause{0, 1'000'000};
      nanosleep(&pause, nullptr);
    }
  }
  EXPECT_EQ(stalls.load(), 1);
}

TEST(StallWatchdog, StopsWithoutFiringWhenDestroyedEarly) {
  std::atomic<uint64_t> progress{0};
  std::atomic<int> stalls{0};
  { StallWatchdog dog(std::chrono::seconds(30), progress, [&] { stalls.fetch_add(1); }); }
  EXPECT_EQ(stalls.load(), 0);
}

bool no_children_left() {
  int wstatus = 0;
  return waitpid(-1, &wstatus, WNOHANG) < 0 && errno == ECHILD;
}

TEST(ChildProcess, ReportsTheExitCode) {
  Result<ChildProcess> child = ChildProcess::spawn([] { return 7; });
  ASSERT_TRUE(child.ok());
  const Result<int> code = child->wait_for(std::chrono::seconds(10));
  ASSERT_TRUE(code.ok()) << code.message();
  EXPECT_EQ(code.value(), 7);
  EXPECT_TRUE(no_children_left());
}

TEST(ChildProcess, KillsAndReapsAChildThatDoesNotExit) {
  Result<ChildProcess> child = ChildProcess::spawn([] {
    for (;;) pause();
    return 0;
  });
  ASSERT_TRUE(child.ok());
  const Result<int> code = child->wait_for(std::chrono::milliseconds(20));
  EXPECT_EQ(code.status(), Status::timeout);
  EXPECT_TRUE(no_children_left());
}

TEST(ChildProcess, DestructorReapsARunningChild) {
  {
    Result<ChildProcess> child = ChildProcess::spawn([] {
      for (;;) pause();
      return 0;
    });
    ASSERT_TRUE(child.ok());
  }
  EXPECT_TRUE(no_children_left());
}

}  // namespace
}  // namespace tandem::bench
