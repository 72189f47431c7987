// The embedded runtime end to end: real rings, the dispatcher thread, the emulated fabric.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <numeric>
#include <random>
#include <string_view>
#include <thread>
#include <vector>

#include "client/embedded.hpp"
#include "base/clock.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

using testing::open_embedded;

int64_t call_accumulate(client::Runtime& rt, const std::vector<int32_t>& data) {
  const auto* fn = funcs::find_function(TANDEM_FN_ACCUMULATE);
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data.data()), data.size()};
  funcs::Call call;
  funcs::BufferList buffers;
  EXPECT_EQ(funcs::describe_call(*fn, args, call, buffers), Status::ok);
  call.buffers[0] = const_cast<int32_t*>(data.data());
  int64_t value = 0;
  EXPECT_EQ(rt.run(*fn, call, value), Status::ok);
  return value;
}

TEST(Runtime, AccumulateEqualsTheReferenceInEveryMode) {
  std::mt19937 rng(3);
  for (client::Mode mode : {client::Mode::sw, client::Mode::hw, client::Mode::auto_mode}) {
    auto rt = open_embedded("", mode);
    ASSERT_TRUE(rt);
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{1} << 18}) {
      std::vector<int32_t> data(n);
      for (auto& v : data) v = static_cast<int32_t>(rng());
      EXPECT_EQ(call_accumulate(*rt, data), std::accumulate(data.begin(), data.end(), int64_t{0})) << n;
    }
    if (mode == client::Mode::sw) {
      EXPECT_EQ(rt->stats().hw_jobs.load(), 0u);
    } else if (mode == client::Mode::hw) {
      EXPECT_EQ(rt->stats().accelerated_calls.load(), 4u) << "every call with work, wholly on the accelerators";
      EXPECT_EQ(rt->stats().sw_units.load(), 0u);
      EXPECT_EQ(rt->stats().fallbacks.load(), 0u);
    } else {
      EXPECT_GE(rt->stats().accelerated_calls.load(), 1u) << "1 MiB is far above N_L";
      EXPECT_EQ(rt->stats().fallbacks.load(), 0u);
    }
  }
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// The engine and the dispatcher have room for 65,536 jobs; a runtime that runs a few must not pay for
// the rest at start-up (it did: 50 MB of page faults, most of an embedded tandem_open's time).
TEST(Runtime, StartsWithoutTouchingTheJobTablesItDoesNotUse) {
  std::vector<int32_t> data(1 << 14, 3);
  auto warm = open_embedded("", client::Mode::hw);  // the process's one-time measurements, not the runtime's
  ASSERT_TRUE(warm);
  EXPECT_EQ(call_accumulate(*warm, data), 3 << 14);
  warm.reset();
  const int64_t before = resident_bytes();
  auto rt = open_embedded("", client::Mode::hw);
  ASSERT_TRUE(rt);
  EXPECT_EQ(call_accumulate(*rt, data), 3 << 14);
  const int64_t grown = resident_bytes() - before;
  EXPECT_LT(grown, int64_t{16} << 20) << "an embedded runtime added " << (grown >> 20) << " MiB resident";
}

TEST(Runtime, UnacceleratedFunctionFallsBackToSoftware) {
  auto rt = open_embedded("[device.emu]\nresident = [\"nop\"]\n", client::Mode::hw);
  ASSERT_TRUE(rt);
  std::vector<int32_t> data(100, 2);
  EXPECT_EQ(call_accumulate(*rt, data), 200);
  EXPECT_EQ(rt->stats().fallbacks.load(), 1u);
  tandem_completion_t rec;
  rt::reset_record(&rec);
  const uint64_t units = 1000;
  ASSERT_EQ(rt->default_queue().dispatch(TANDEM_FN_WORK, &units, 1, units, &rec), Status::ok);
  EXPECT_EQ(rt->wait(&rec, {}), Status::not_accelerated);
}

TEST(Runtime, ReactivePolicyLoadsARequestedFunctionBetweenPeriods) {
  // The dispatcher hands every NOT_ACCELERATED answer to an event-driven policy: with a 10 s period,
  // only the reaction can load `work` within the test. Sticky (period-driven) leaves it out.
  const std::string base =
      "[device.emu]\nslots = 2\nresident = [\"nop\", \"accumulate\"]\n[functions.work]\nreconfig_ms = 5\n"
      "[monitor]\nperiod_ms = 10000\n[reconfig]\nreact_idle_ms = 0\npolicy = ";
  for (const char* policy : {"reactive", "sticky"}) {
    auto rt = open_embedded(base + "\"" + policy + "\"\n", client::Mode::hw);
    ASSERT_TRUE(rt) << policy;
    const uint64_t units = 1000;
    const auto dispatch_work = [&] {
      tandem_completion_t rec;
      rt::reset_record(&rec);
      EXPECT_EQ(rt->default_queue().dispatch(TANDEM_FN_WORK, &units, 1, units, &rec), Status::ok);
      return rt->wait(&rec, {});
    };
    EXPECT_EQ(dispatch_work(), Status::not_accelerated) << policy;
    if (std::string_view(policy) == "sticky") {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      EXPECT_EQ(dispatch_work(), Status::not_accelerated) << "sticky waits for the period";
      continue;
    }
    const int64_t deadline = tandem::now_ns() + 2'000'000'000;  // generous: a loaded CI machine
    Status st = Status::not_accelerated;
    while (st == Status::not_accelerated && tandem::now_ns() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      st = dispatch_work();
    }
    EXPECT_EQ(st, Status::ok) << "loaded after its 5 ms reconfiguration delay, long before the next period";
  }
}

TEST(Runtime, EveryWaitStrategyObservesCompletion) {
  auto rt = open_embedded();
  ASSERT_TRUE(rt);
  for (rt::WaitMode mode : {rt::WaitMode::spin, rt::WaitMode::block, rt::WaitMode::spin_then_block}) {
    for (int i = 0; i < 200; ++i) {
      tandem_completion_t rec;
      rt::reset_record(&rec);
      ASSERT_EQ(rt->default_queue().dispatch(TANDEM_FN_NOP, nullptr, 0, 0, &rec), Status::ok);
      rt::WaitPolicy p;
      p.mode = mode;
      p.spin_ns = 1000;
      ASSERT_EQ(rt->wait(&rec, p), Status::ok);
      EXPECT_NE(rec.slot, UINT32_MAX);
    }
  }
}

TEST(Runtime, WaitTimesOutOnARecordNobodyCompletes) {
  auto rt = open_embedded();
  ASSERT_TRUE(rt);
  tandem_completion_t rec;
  rt::reset_record(&rec);
  rt::WaitPolicy p;
  p.timeout_ns = 2'000'000;
  EXPECT_EQ(rt->wait(&rec, p), Status::timeout);
}

// The emulated fabric completes no job before its modelled time (D_a + W / X_a), and not much after.
TEST(Runtime, EmulatedTimingNeverEarlyAndBoundedLate) {
  auto rt = open_embedded(R"(
[device.emu]
resident = ["work0"]
[functions.work0]
throughput = 1e9
latency_us = 50
)");
  ASSERT_TRUE(rt);
  int64_t max_observed_late_ns = 0;  // the client's view: elapsed minus modelled, over every job
  for (uint64_t units : {uint64_t{0}, uint64_t{100'000}, uint64_t{3'000'000}}) {
    const int64_t modelled = 50'000 + static_cast<int64_t>(units);  // ns at 1 unit per ns
    for (int rep = 0; rep < 5; ++rep) {
      tandem_completion_t rec;
      rt::reset_record(&rec);
      const int64_t t0 = tandem::now_ns();
      ASSERT_EQ(rt->default_queue().dispatch(TANDEM_FN_WORK_BASE, &units, 1, units, &rec), Status::ok);
      ASSERT_EQ(rt->wait(&rec, {}), Status::ok);
      const int64_t t1 = tandem::now_ns();
      const int64_t elapsed = t1 - t0;
      // The engine's completion time (low 32 bits): after the job's modelled time, before we saw it.
      const int64_t done_after_t0 = static_cast<int64_t>(rec.done_ns_lo - static_cast<uint32_t>(t0));
      EXPECT_GE(done_after_t0, modelled) << "completed no earlier than its device time";
      EXPECT_LE(done_after_t0, elapsed) << "completed before the client saw it";
      EXPECT_EQ(static_cast<int64_t>(rec.device_ns), modelled);
      EXPECT_GE(elapsed, modelled) << "never early";
      EXPECT_EQ(rec.value, static_cast<int64_t>(units));
      max_observed_late_ns = std::max(max_observed_late_ns, elapsed - modelled);
    }
  }
  auto* embedded = dynamic_cast<client::EmbeddedRuntime*>(rt.get());
  ASSERT_NE(embedded, nullptr);
  const auto snap = embedded->dispatcher().snapshot();
  // The dispatcher's own lateness figure is consistent with what the client saw: a job's deadline is
  // its start plus the modelled time, and the client's clock started before the job did and stopped
  // after its completion, so no completion can be later than the client observed.
  EXPECT_LE(snap.stats.max_lateness_ns, max_observed_late_ns);
  EXPECT_LT(snap.stats.max_lateness_ns, 50'000'000) << "lateness bounded (generous: shared CI machine)";
}

// Polls two records until both are done. Returns true if `later` was ever seen done while
// `earlier` was still pending (read `later` first, so a true answer is never a false alarm).
bool seen_out_of_order(const tandem_completion_t& earlier, const tandem_completion_t& later) {
  bool violated = false;
  const int64_t give_up = tandem::now_ns() + 5'000'000'000;
  for (;;) {
    const bool later_done = abi::load_acquire(later.status) != TANDEM_PENDING;
    const bool earlier_done = abi::load_acquire(earlier.status) != TANDEM_PENDING;
    violated = violated || (later_done && !earlier_done);
    if ((later_done && earlier_done) || tandem::now_ns() > give_up) return violated;
  }
}

TEST(Runtime, BarrierAndChainsJobsWithoutARoundTrip) {
  auto rt = open_embedded(R"(
[device.emu]
resident = ["work0", "work1"]
[functions.work0]
throughput = 1e9
[functions.work1]
throughput = 1e9
)");
  ASSERT_TRUE(rt);
  auto q = rt->create_queue(16);
  ASSERT_TRUE(q.ok());
  const uint64_t long_job = 50'000'000, short_job = 1;  // 50 ms and 1 ns on two different slots
  tandem_completion_t a, b, bar;
  // Without a barrier the short job finishes first: the check below can tell the difference.
  rt::reset_record(&a);
  rt::reset_record(&b);
  ASSERT_EQ(q.value()->dispatch(TANDEM_FN_WORK_BASE, &long_job, 1, long_job, &a), Status::ok);
  ASSERT_EQ(q.value()->dispatch(TANDEM_FN_WORK_BASE + 1, &short_job, 1, short_job, &b), Status::ok);
  EXPECT_TRUE(seen_out_of_order(a, b));
  // With BARRIER_AND(a) between them, b starts only after a completed, and so does the barrier.
  rt::reset_record(&a);
  rt::reset_record(&b);
  rt::reset_record(&bar);
  ASSERT_EQ(q.value()->dispatch(TANDEM_FN_WORK_BASE, &long_job, 1, long_job, &a), Status::ok);
  const tandem_completion_t* deps[1] = {&a};
  ASSERT_EQ(q.value()->barrier_and(deps, 1, &bar), Status::ok);
  ASSERT_EQ(q.value()->dispatch(TANDEM_FN_WORK_BASE + 1, &short_job, 1, short_job, &b), Status::ok);
  EXPECT_FALSE(seen_out_of_order(a, b));
  EXPECT_EQ(rt->wait(&bar, {}), Status::ok);
  EXPECT_EQ(rt->wait(&b, {}), Status::ok);
  rt::reset_record(&bar);
  rt::reset_record(&b);
  ASSERT_EQ(q.value()->barrier_and(deps, 1, &bar), Status::ok);  // dependency already complete
  ASSERT_EQ(q.value()->dispatch(TANDEM_FN_WORK_BASE + 1, &short_job, 1, short_job, &b), Status::ok);
  EXPECT_EQ(rt->wait(&bar, {}), Status::ok);
  EXPECT_EQ(rt->wait(&b, {}), Status::ok);
}

TEST(Runtime, FullRingAppliesBackPressureAndLosesNothing) {
  auto rt = open_embedded();
  ASSERT_TRUE(rt);
  auto q = rt->create_queue(2);
  ASSERT_TRUE(q.ok());
  std::vector<tandem_completion_t> recs(2000);
  for (auto& r : recs) {
    rt::reset_record(&r);
    ASSERT_EQ(q.value()->dispatch(TANDEM_FN_NOP, nullptr, 0, 0, &r), Status::ok);
  }
  for (auto& r : recs) ASSERT_EQ(rt->wait(&r, {}), Status::ok);
  EXPECT_FALSE(rt->create_queue(3).ok()) << "capacity must be a power of two";
}

TEST(Runtime, RejectedPacketsCompleteWithTheirStatus) {
  auto rt = open_embedded();
  ASSERT_TRUE(rt);
  tandem_completion_t rec;
  rt::reset_record(&rec);
  ASSERT_EQ(rt->default_queue().dispatch(250, nullptr, 0, 0, &rec), Status::ok);
  EXPECT_EQ(rt->wait(&rec, {}), Status::unknown_function);
  rt::reset_record(&rec);
  const uint64_t args[2] = {0, 10};  // null buffer
  ASSERT_EQ(rt->default_queue().dispatch(TANDEM_FN_ACCUMULATE, args, 2, 40, &rec), Status::ok);
  EXPECT_EQ(rt->wait(&rec, {}), Status::translation_fault);
  rt::reset_record(&rec);
  ASSERT_EQ(rt->default_queue().dispatch(TANDEM_FN_ACCUMULATE, args, 2, 3, &rec), Status::ok);
  EXPECT_EQ(rt->wait(&rec, {}), Status::invalid_packet) << "workload disagrees with the arguments";
}

TEST(Runtime, ManyThreadsShareOneQueue) {
  auto rt = open_embedded("", client::Mode::hw);
  ASSERT_TRUE(rt);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<int32_t> data(64 + t);
      std::iota(data.begin(), data.end(), t);
      const int64_t expected = std::accumulate(data.begin(), data.end(), int64_t{0});
      for (int i = 0; i < 2000; ++i) {
        if (call_accumulate(*rt, data) != expected) wrong.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rt->stats().accelerated_calls.load(), 8000u);
  EXPECT_EQ(rt->stats().sw_units.load(), 0u);
}

}  // namespace
}  // namespace tandem
