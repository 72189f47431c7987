// tandemd with real processes: the same program embedded and through the daemon, many clients at once,
// clients and daemons killed mid-flight.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "client/daemon_runtime.hpp"
#include "mp_util.hpp"
#include "rt/completion.hpp"

namespace tandem {
namespace {

using testing::DaemonProcess;
using testing::join;
using testing::spawn;

int64_t high_level_accumulate(client::Runtime& rt, const int32_t* data, size_t n) {
  const auto* fn = funcs::find_function(TANDEM_FN_ACCUMULATE);
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data), n};
  funcs::Call call;
  funcs::BufferList buffers;
  funcs::describe_call(*fn, args, call, buffers);
  call.buffers[0] = const_cast<int32_t*>(data);
  int64_t v = 0;
  EXPECT_EQ(rt.run(*fn, call, v), Status::ok);
  return v;
}

// One program, whatever the runtime: a transcript of what it observed.
std::vector<int64_t> program(client::Runtime& rt) {
  std::vector<int64_t> out;
  auto* data = static_cast<int32_t*>(rt.alloc(10'000 * sizeof(int32_t)));
  for (int i = 0; i < 10'000; ++i) data[i] = i * 37 - 99'999;
  out.push_back(high_level_accumulate(rt, data, 10'000));
  out.push_back(high_level_accumulate(rt, data + 5, 1));
  auto q = rt.create_queue(64);
  EXPECT_TRUE(q.ok());
  auto* recs = static_cast<tandem_completion_t*>(rt.alloc(4 * sizeof(tandem_completion_t)));
  for (int i = 0; i < 4; ++i) rt::reset_record(&recs[i]);
  const uint64_t acc[2] = {reinterpret_cast<uintptr_t>(data), 100};
  const uint64_t units = 5000;
  EXPECT_EQ(q.value()->dispatch(TANDEM_FN_ACCUMULATE, acc, 2, 400, &recs[0]), Status::ok);
  const tandem_completion_t* deps[1] = {&recs[0]};
  EXPECT_EQ(q.value()->barrier_and(deps, 1, &recs[1]), Status::ok);
  EXPECT_EQ(q.value()->dispatch(TANDEM_FN_WORK, &units, 1, units, &recs[2]), Status::ok);
  EXPECT_EQ(q.value()->dispatch(200, nullptr, 0, 0, &recs[3]), Status::ok);  // unknown function
  for (int i = 0; i < 4; ++i) {
    out.push_back(static_cast<int64_t>(rt.wait(&recs[i], {})));
    out.push_back(recs[i].value);
  }
  rt.free(recs);
  rt.free(data);
  return out;
}

TEST(Daemon, TheSameProgramRunsEmbeddedAndThroughTheDaemon) {
  std::vector<int64_t> embedded, daemon;
  {
    client::RuntimeOptions o;
    o.embedded = true;
    o.mode = client::Mode::hw;
    auto rt = client::Runtime::open(o);
    ASSERT_TRUE(rt.ok());
    EXPECT_EQ(rt.value()->kind(), "embedded");
    embedded = program(*rt.value());
  }
  DaemonProcess d;
  {
    auto rt = d.open();
    ASSERT_TRUE(rt);
    EXPECT_EQ(rt->kind(), "daemon");
    daemon = program(*rt);
    EXPECT_EQ(rt->stats().fallbacks.load(), 0u) << "session memory reaches the accelerator, zero-copy";
  }
  EXPECT_EQ(embedded, daemon);
  ASSERT_EQ(daemon.size(), 10u);
  EXPECT_EQ(daemon[2], static_cast<int64_t>(TANDEM_OK)) << "accumulate job";
  EXPECT_EQ(daemon[4], static_cast<int64_t>(TANDEM_OK)) << "barrier";
  EXPECT_EQ(daemon[8], static_cast<int64_t>(TANDEM_UNKNOWN_FUNCTION));
}

TEST(Daemon, EnvironmentSelectsTheDaemon) {
  DaemonProcess d;
  setenv("TANDEM_SOCKET", d.socket().c_str(), 1);
  auto rt = client::Runtime::open({});
  unsetenv("TANDEM_SOCKET");
  ASSERT_TRUE(rt.ok()) << rt.message();
  EXPECT_EQ(rt.value()->kind(), "daemon");
  client::RuntimeOptions bad;
  bad.socket_path = d.directory() + "/nobody.sock";
  auto none = client::Runtime::open(bad);
  EXPECT_EQ(none.status(), Status::disconnected) << "an explicit socket must work";
}

// Several processes, thousands of jobs each, pipelined; every result checked, none lost or duplicated.
TEST(Daemon, ManyProcessesManyJobsEveryResultChecked) {
  DaemonProcess d;
  constexpr int kProcesses = 4, kJobs = 5000, kWindow = 32;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    children.push_back(spawn([&d, p]() -> int {
      auto rt = d.open();
      if (!rt) return 10;
      auto q = rt->create_queue(64);
      if (!q.ok()) return 11;
      auto* data = static_cast<int32_t*>(rt->alloc(kWindow * 64 * sizeof(int32_t)));
      auto* recs = static_cast<tandem_completion_t*>(rt->alloc(kWindow * sizeof(tandem_completion_t)));
      std::vector<int64_t> expected(kWindow);
      int bad = 0;
      for (int done = 0; done < kJobs; done += kWindow) {
        for (int w = 0; w < kWindow; ++w) {  // each job sums its own slice, different every round
          int32_t* slice = data + w * 64;
          int64_t sum = 0;
          for (int i = 0; i < 64; ++i) sum += slice[i] = p * 1'000'000 + done * 7 + w * 13 + i;
          expected[w] = sum;
          rt::reset_record(&recs[w]);
          const uint64_t args[2] = {reinterpret_cast<uintptr_t>(slice), 64};
          if (q.value()->dispatch(TANDEM_FN_ACCUMULATE, args, 2, 256, &recs[w]) != Status::ok) return 12;
        }
        for (int w = 0; w < kWindow; ++w) {
          rt::WaitPolicy policy;
          policy.timeout_ns = 10'000'000'000;
          if (rt->wait(&recs[w], policy) != Status::ok || recs[w].value != expected[w]) ++bad;
        }
      }
      return bad == 0 ? 0 : 13;
    }));
  }
  for (pid_t c : children) EXPECT_EQ(join(c), 0);
  auto status = testing::daemon_status(d);
  ASSERT_FALSE(status.is_null());
  const uint64_t jobs = static_cast<uint64_t>(kProcesses) * ((kJobs + kWindow - 1) / kWindow) * kWindow;
  EXPECT_EQ(status["dispatcher"]["completions"].get<uint64_t>(), jobs) << "none lost, none completed twice";
  EXPECT_EQ(status["dispatcher"]["rejected"].get<uint64_t>(), 0u);
  EXPECT_EQ(status["daemon"]["sessions_served"].get<uint64_t>(), static_cast<uint64_t>(kProcesses));
  EXPECT_GT(status["tlb"]["hit_rate"].get<double>(), 0.9) << "the unified TLB serves repeated translations";
}

TEST(Daemon, ClientKilledMidFlightIsCleanedUpAndOthersCarryOn) {
  DaemonProcess d("[device.emu]\nresident = [\"work0\", \"accumulate\"]\n[functions.work0]\nthroughput = 1e9\n");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  // The victim fills the work0 queue with 20 ms jobs and is killed while they run.
  const pid_t victim = spawn([&]() -> int {
    auto rt = d.open();
    auto q = rt->create_queue(64);
    auto* recs = static_cast<tandem_completion_t*>(rt->alloc(40 * sizeof(tandem_completion_t)));
    const uint64_t units = 20'000'000;
    for (int i = 0; i < 40; ++i) {
      rt::reset_record(&recs[i]);
      q.value()->dispatch(TANDEM_FN_WORK_BASE, &units, 1, units, &recs[i]);
    }
    (void)!write(ready[1], "x", 1);
    pause();
    return 0;
  });
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  kill(victim, SIGKILL);
  EXPECT_EQ(join(victim), 128 + SIGKILL);
  // Its session goes, its queued jobs are cancelled, its slot frees up; the daemon lives on.
  EXPECT_TRUE(testing::eventually(d, 5, [](const nlohmann::json& j) {
    return j["sessions"].empty() && j["dispatcher"]["jobs_in_flight"].get<uint32_t>() == 0;
  }));
  auto rt = d.open();
  ASSERT_TRUE(rt);
  std::vector<int32_t> local(1000, 3);
  auto* data = static_cast<int32_t*>(rt->alloc(1000 * sizeof(int32_t)));
  std::copy(local.begin(), local.end(), data);
  EXPECT_EQ(high_level_accumulate(*rt, data, 1000), 3000);
  EXPECT_EQ(rt->stats().fallbacks.load(), 0u);
  close(ready[0]);
  close(ready[1]);
}

// Every way a client waits on the daemon returns DISCONNECTED within a second of its death.
TEST(Daemon, DaemonKilledEveryWaitReturnsDisconnectedWithinOneSecond) {
  for (rt::WaitMode mode : {rt::WaitMode::spin, rt::WaitMode::block, rt::WaitMode::spin_then_block}) {
    DaemonProcess d("[device.emu]\nresident = [\"work0\"]\n[functions.work0]\nthroughput = 1e9\n");
    auto rt = d.open();
    ASSERT_TRUE(rt);
    auto* rec = static_cast<tandem_completion_t*>(rt->alloc(sizeof(tandem_completion_t)));
    rt::reset_record(rec);
    const uint64_t units = 90'000'000;  // 90 ms: long enough to kill the daemon under it
    ASSERT_EQ(rt->default_queue().dispatch(TANDEM_FN_WORK_BASE, &units, 1, units, rec), Status::ok);
    std::thread killer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      d.kill_hard();
    });
    rt::WaitPolicy p;
    p.mode = mode;
    p.spin_ns = 1'000'000;
    const int64_t t0 = tandem::now_ns();
    const Status s = rt->wait(rec, p);
    killer.join();
    const double after_kill_s = static_cast<double>(tandem::now_ns() - t0) / 1e9 - 0.020;
    EXPECT_EQ(s, Status::disconnected);
    EXPECT_LT(after_kill_s, 1.0);
    // Everything after that fails fast with the same status; nothing hangs.
    EXPECT_EQ(rt->create_queue(8).status(), Status::disconnected);
  }
}

TEST(Daemon, FullRingWaitEndsWhenTheDaemonDies) {
  DaemonProcess d("[device.emu]\nresident = [\"work0\"]\n[functions.work0]\nthroughput = 1e9\n");
  auto rt = d.open();
  ASSERT_TRUE(rt);
  auto q = rt->create_queue(2);
  ASSERT_TRUE(q.ok());
  const uint64_t units = 90'000'000;  // 90 ms, under the 100 ms job-size bound
  // The dispatcher holds back a ring behind a long barrier-bit job, so the ring fills and stays full.
  ASSERT_EQ(q.value()->dispatch(TANDEM_FN_WORK_BASE, &units, 1, units, nullptr, true), Status::ok);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(q.value()->dispatch(TANDEM_FN_NOP, nullptr, 0, 0, nullptr), Status::ok);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    d.kill_hard();
  });
  const int64_t t0 = tandem::now_ns();
  const Status s = q.value()->dispatch(TANDEM_FN_NOP, nullptr, 0, 0, nullptr);
  killer.join();
  EXPECT_EQ(s, Status::disconnected);
  EXPECT_LT(static_cast<double>(tandem::now_ns() - t0) / 1e9, 1.05);
}

TEST(Daemon, SigtermDrainsInFlightJobsThenDisconnects) {
  DaemonProcess d("[device.emu]\nresident = [\"work0\"]\n[functions.work0]\nthroughput = 1e9\n");
  auto rt = d.open();
  ASSERT_TRUE(rt);
  auto* rec = static_cast<tandem_completion_t*>(rt->alloc(sizeof(tandem_completion_t)));
  rt::reset_record(rec);
  const uint64_t units = 90'000'000;  // 90 ms
  ASSERT_EQ(rt->default_queue().dispatch(TANDEM_FN_WORK_BASE, &units, 1, units, rec), Status::ok);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::thread stopper([&] { EXPECT_EQ(d.stop(), 0) << "clean exit"; });
  EXPECT_EQ(rt->wait(rec, {}), Status::ok) << "the accepted job finished before the daemon left";
  EXPECT_EQ(rec->value, static_cast<int64_t>(units));
  stopper.join();
  EXPECT_FALSE(d.connectable());
  EXPECT_NE(access(d.socket().c_str(), F_OK), 0) << "the socket is removed";
}

TEST(Daemon, SecondDaemonOnTheSameSocketIsRefused) {
  DaemonProcess d;
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* null = std::freopen("/dev/null", "w", stderr);
    (void)null;
    execl(TANDEM_TANDEMD_PATH, "tandemd", "--foreground", "--socket", d.socket().c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  EXPECT_EQ(join(pid), 1);
  EXPECT_TRUE(d.connectable()) << "the first daemon still owns the socket";
}

TEST(Daemon, PerSessionLimitsAreErrorsNotCrashes) {
  DaemonProcess d("[limits]\nqueues_per_session = 2\nregistered_mib_per_session = 8\njobs_in_flight_per_session = 4\n"
                  "[device.emu]\nresident = [\"work0\"]\n[functions.work0]\nthroughput = 1e9\n");
  auto rt = d.open();  // its default queue is the first of two
  ASSERT_TRUE(rt);
  auto q2 = rt->create_queue(8);
  EXPECT_TRUE(q2.ok());
  auto q3 = rt->create_queue(8);
  EXPECT_EQ(q3.status(), Status::limit_exceeded);
  EXPECT_NE(q3.message().find("2 queues"), std::string::npos) << q3.message();
  EXPECT_EQ(rt->alloc(16u << 20), nullptr) << "16 MiB exceed the 8 MiB of registered memory";
  auto* recs = static_cast<tandem_completion_t*>(rt->alloc(8 * sizeof(tandem_completion_t)));
  ASSERT_NE(recs, nullptr);
  const uint64_t units = 50'000'000;
  for (int i = 0; i < 6; ++i) {
    rt::reset_record(&recs[i]);
    ASSERT_EQ(q2.value()->dispatch(TANDEM_FN_WORK_BASE, &units, 1, units, &recs[i]), Status::ok);
  }
  int over_limit = 0;
  for (int i = 0; i < 6; ++i) over_limit += rt->wait(&recs[i], {}) == Status::limit_exceeded;
  EXPECT_EQ(over_limit, 2) << "4 jobs in flight at most";
  EXPECT_TRUE(d.alive());
}

}  // namespace
}  // namespace tandem
