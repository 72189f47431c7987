// tandemd with real processes: the same program embedded and through the daemon, many clients at once,
// clients and daemons killed mid-flight.
#include <gtest/gtest.h>

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include <atomic>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>

#include "base/clock.hpp"
#include "client/daemon_runtime.hpp"
#include "funcs/function.hpp"
#include "mp_util.hpp"
#include "rt/completion.hpp"
#include "test_util.hpp"

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

// tandemd shares one status report among the requests of 10 ms (a flood must not keep its control
// thread waiting on the dispatcher), but never across a session's start or end: a tool that checks the
// daemon is up, runs a client for a few ms and asks again sees that client (`tandem demo` did not).
TEST(Daemon, AStatusAfterASessionCountsIt) {
  DaemonProcess d;
  ASSERT_EQ(testing::daemon_status(d)["daemon"]["sessions_served"].get<uint64_t>(), 0u);
  {
    auto rt = d.open(client::Mode::hw);
    ASSERT_TRUE(rt);
    std::vector<int32_t> data(1000, 3);
    EXPECT_EQ(high_level_accumulate(*rt, data.data(), data.size()), 3000);
  }
  EXPECT_EQ(testing::daemon_status(d)["daemon"]["sessions_served"].get<uint64_t>(), 1u);
}

// tandemd's hello says how large a job its engine takes ([fabric] max_job_ms over each function's model)
// and each device's largest job buffer; the client's partitioner keeps every job within them. Here a job
// of at most 99,000 bytes: a 1 MiB call runs wholly on the fabric in eleven or more jobs, none refused.
TEST(Daemon, ClientsKeepTheirJobsWithinTheDaemonsJobSizeBound) {
  DaemonProcess d("[fabric]\nmax_job_ms = 0.1\n[functions.accumulate]\nthroughput = 1e9\nlatency_us = 1\n");
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  EXPECT_EQ(rt->max_job_units_by_time(TANDEM_FN_ACCUMULATE), 99000u);
  EXPECT_EQ(rt->max_job_buffer_bytes(TANDEM_FN_ACCUMULATE), 0u) << "the emulated fabric takes any buffer";
  constexpr size_t kInts = 1 << 18;
  auto* data = static_cast<int32_t*>(rt->alloc(kInts * 4));
  ASSERT_NE(data, nullptr);
  for (size_t i = 0; i < kInts; ++i) data[i] = static_cast<int32_t>(i % 1000) - 500;
  const auto* fn = funcs::find_function(TANDEM_FN_ACCUMULATE);
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data), kInts};
  funcs::Call call;
  funcs::BufferList buffers;
  ASSERT_EQ(funcs::describe_call(*fn, args, call, buffers), Status::ok);
  call.buffers[0] = data;
  int64_t value = 0;
  client::CallReport report;
  ASSERT_EQ(rt->run(*fn, call, value, &report), Status::ok);
  EXPECT_EQ(value, std::accumulate(data, data + kInts, int64_t{0}));
  EXPECT_EQ(report.counters.jobs_failed, 0u);
  EXPECT_EQ(report.counters.hw_units, kInts * 4);
  EXPECT_GE(report.counters.jobs_completed, 11u);
  rt->free(data);
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

// Three processes flood one function queue (each keeps 2,048 jobs in flight, twice the queue); a
// fourth submits 20,000 jobs 16 at a time. Each session has a fair share of the queue, so the victim,
// far below its share, never meets QUEUE_FULL (it lost 1-10% of its jobs to the flooders before).
TEST(Daemon, FloodingSessionsCannotStarveAnotherThroughASharedQueue) {
  DaemonProcess d("[device.emu]\nresident = [\"work0\"]\n[functions.work0]\nthroughput = 1e9\nlatency_us = 0\n");
  constexpr int kFlooders = 3, kVictimJobs = 20'000, kWindow = 16;
  constexpr uint64_t kUnits = 10'000;  // 10 us per job
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> flooders;
  for (int f = 0; f < kFlooders; ++f) {
    flooders.push_back(spawn([&]() -> int {
      auto rt = d.open();
      if (!rt) return 2;
      constexpr int kInFlight = 2048;
      auto q = rt->create_queue(4096);
      auto* recs = static_cast<tandem_completion_t*>(rt->alloc(kInFlight * sizeof(tandem_completion_t)));
      if (!q.ok() || recs == nullptr) return 3;
      for (int i = 0; i < kInFlight; ++i) {
        rt::reset_record(&recs[i]);
        (void)q.value()->dispatch(TANDEM_FN_WORK_BASE, &kUnits, 1, kUnits, &recs[i]);
      }
      (void)!write(go[1], "f", 1);
      for (;;) {  // until killed: resubmit every job that finished, whatever its status
        for (int i = 0; i < kInFlight; ++i) {
          if (rt::record_status(&recs[i]) == TANDEM_PENDING) continue;
          rt::reset_record(&recs[i]);
          if (q.value()->dispatch(TANDEM_FN_WORK_BASE, &kUnits, 1, kUnits, &recs[i]) != Status::ok) return 4;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }));
  }
  char c;
  for (int f = 0; f < kFlooders; ++f) {
    pollfd p{go[0], POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 10'000), 1) << "a flooder did not start";
    ASSERT_EQ(read(go[0], &c, 1), 1);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the queue is full now
  const int64_t queue_full = testing::join(spawn([&]() -> int {
    auto rt = d.open();
    if (!rt) return 200;
    auto* recs = static_cast<tandem_completion_t*>(rt->alloc(kWindow * sizeof(tandem_completion_t)));
    int full = 0, other = 0;
    for (int done = 0; done < kVictimJobs; done += kWindow) {
      for (int w = 0; w < kWindow; ++w) {
        rt::reset_record(&recs[w]);
        if (rt->default_queue().dispatch(TANDEM_FN_WORK_BASE, &kUnits, 1, kUnits, &recs[w]) != Status::ok) return 201;
      }
      for (int w = 0; w < kWindow; ++w) {
        const Status s = rt->wait(&recs[w], {});
        full += s == Status::queue_full;
        other += s != Status::ok && s != Status::queue_full;
      }
    }
    std::fprintf(stderr, "victim: %d of %d jobs QUEUE_FULL, %d other failures\n", full, kVictimJobs, other);
    return other > 0 ? 202 : std::min(full, 199);
  }));
  auto status = testing::daemon_status(d);
  for (pid_t f : flooders) {
    kill(f, SIGKILL);
    join(f);
  }
  close(go[0]);
  close(go[1]);
  EXPECT_EQ(queue_full, 0) << "QUEUE_FULL jobs of the victim (>= 199: 199 or more; 200+: other failure)";
  ASSERT_FALSE(status.is_null());
  EXPECT_GT(status["functions"][0]["submitted_jobs"].get<uint64_t>(), 3u * kVictimJobs) << "the flooders flooded";
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

// High-level calls in every mode and wait mode, running when the daemon is killed: the call in flight
// and every later one return DISCONNECTED within a second of the death, and once one did, later calls
// return at once instead of paying a liveness timeout each. (hw mode used to spin forever.)
TEST(Daemon, DaemonKilledEveryModeCallsReturnDisconnectedWithinOneSecond) {
  struct Shared {
    std::atomic<int64_t> first_disconnected_ns{0};
    std::atomic<int64_t> later_calls_ns{0};  // 1000 calls after the first DISCONNECTED
    std::atomic<uint32_t> calls{0};
    std::atomic<uint32_t> wrong{0};
  };
  for (client::Mode mode : {client::Mode::hw, client::Mode::auto_mode, client::Mode::sw, client::Mode::alpha}) {
    for (rt::WaitMode wait : {rt::WaitMode::spin, rt::WaitMode::block, rt::WaitMode::spin_then_block}) {
      const std::string what = client::mode_name(mode, 0.5) + " wait " + std::to_string(static_cast<int>(wait));
      DaemonProcess d;
      void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      ASSERT_NE(mem, MAP_FAILED);
      auto* shared = new (mem) Shared;
      const pid_t child = spawn([&]() -> int {
        alarm(20);
        client::RuntimeOptions o;
        o.socket_path = d.socket();
        o.mode = mode;
        o.alpha = 0.5;
        o.wait.mode = wait;
        auto opened = client::Runtime::open(o);
        if (!opened) return 2;
        client::Runtime& rt = *opened.value();
        constexpr size_t kN = 1 << 20;
        auto* data = static_cast<int32_t*>(rt.alloc(kN * sizeof(int32_t)));
        if (data == nullptr) return 3;
        for (size_t i = 0; i < kN; ++i) data[i] = static_cast<int32_t>(i % 77);
        const int64_t expected = std::accumulate(data, data + kN, int64_t{0});
        const auto* fn = funcs::find_function(TANDEM_FN_ACCUMULATE);
        const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data), kN};
        funcs::Call call;
        funcs::BufferList buffers;
        funcs::describe_call(*fn, args, call, buffers);
        call.buffers[0] = data;
        for (;;) {
          int64_t v = 0;
          const Status s = rt.run(*fn, call, v);
          shared->calls.fetch_add(1);
          if (s == Status::disconnected) break;
          if (s != Status::ok || v != expected) shared->wrong.fetch_add(1);
        }
        shared->first_disconnected_ns = tandem::now_ns();
        const int64_t t0 = tandem::now_ns();
        for (int i = 0; i < 1000; ++i) {
          int64_t v = 0;
          if (rt.run(*fn, call, v) != Status::disconnected) return 4;
        }
        shared->later_calls_ns = tandem::now_ns() - t0;
        return 0;
      });
      while (shared->calls.load() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const int64_t killed = tandem::now_ns();
      d.kill_hard();
      EXPECT_EQ(join(child), 0) << what;
      EXPECT_EQ(shared->wrong.load(), 0u) << what;
      const double after_s = static_cast<double>(shared->first_disconnected_ns.load() - killed) / 1e9;
      EXPECT_LT(after_s, 1.0) << what;
      EXPECT_LT(static_cast<double>(shared->later_calls_ns.load()) / 1e9, 0.05)
          << what << ": 1000 calls after the first DISCONNECTED";
      munmap(mem, sizeof(Shared));
    }
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
  std::atomic<int64_t> killed_at{0};
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    d.kill_hard();
    killed_at = tandem::now_ns();
  });
  const Status s = q.value()->dispatch(TANDEM_FN_NOP, nullptr, 0, 0, nullptr);
  const int64_t returned = tandem::now_ns();
  killer.join();
  EXPECT_EQ(s, Status::disconnected);
  // Within a second of the daemon's death (from the kill, not from the call: the killer may be late).
  EXPECT_LT(static_cast<double>(returned - killed_at.load()) / 1e9, 1.05);
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

// A --socket that names someone's file, or whose ".lock" does, is refused and the file kept: tandemd
// replaces only a socket (and an empty lock file) that a killed tandemd left behind.
TEST(Daemon, ASocketPathThatIsNotASocketIsRefusedAndTheFileKept) {
  char dir[] = "/tmp/tandem-sockpath-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string folder = dir;
  const auto write_file = [](const std::string& path, const char* text) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text, f);
    std::fclose(f);
  };
  const auto read_file = [](const std::string& path) {
    std::string text;
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      char buf[512];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
      std::fclose(f);
    }
    return text;
  };
  const auto run_tandemd = [&](const std::string& socket) {
    const std::string err = folder + "/stderr";
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(20);  // a tandemd that took the path would serve for ever: the test fails instead of hanging
      FILE* log = std::freopen(err.c_str(), "w", stderr);
      (void)log;
      execl(TANDEM_TANDEMD_PATH, "tandemd", "--foreground", "--socket", socket.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    EXPECT_EQ(join(pid), 1);
    return read_file(err);
  };
  const std::string file = folder + "/precious.txt";
  write_file(file, "precious\n");
  std::string said = run_tandemd(file);
  EXPECT_NE(said.find("exists and is not a socket"), std::string::npos) << said;
  EXPECT_EQ(read_file(file), "precious\n");
  EXPECT_NE(access((file + ".lock").c_str(), F_OK), 0) << "no lock file was made beside it";

  const std::string socket = folder + "/tandem.sock";
  write_file(socket + ".lock", "not a lock\n");
  said = run_tandemd(socket);
  EXPECT_NE(said.find("is not tandemd's lock file"), std::string::npos) << said;
  EXPECT_EQ(read_file(socket + ".lock"), "not a lock\n");
  EXPECT_NE(access(socket.c_str(), F_OK), 0) << "no socket was made";

  for (const char* name : {"/precious.txt", "/tandem.sock.lock", "/stderr"}) unlink((folder + name).c_str());
  EXPECT_EQ(rmdir(dir), 0) << "tandemd left something in " << folder;
}

// A client process's CPU share counts the other client processes' callers (docs/model.md, "CPU
// contention"): each publishes its threads inside calls in its ring header, the daemon's monitor tells
// every session the others' total; a scribbled count is bounded, and goes with its session.
TEST(Daemon, EachClientCountsTheOtherProcessesCallers) {
  DaemonProcess d;
  constexpr uint32_t kCallers = 3;
  int to_child[2], from_child[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(from_child), 0);
  const auto step = [](int fd) {
    char c = 's';
    return write(fd, &c, 1) == 1;
  };
  const auto await = [](int fd) {  // false on EOF (the other side is gone) or after 10 s
    pollfd p{fd, POLLIN, 0};
    char c = 0;
    return poll(&p, 1, 10'000) == 1 && read(fd, &c, 1) == 1;
  };
  const pid_t child = spawn([&] {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a parent that fails an assertion leaves no child behind
    close(to_child[1]);
    close(from_child[0]);
    auto rt = d.open();
    if (!rt) return 2;
    std::vector<std::unique_ptr<client::Runtime::BusyCaller>> callers;
    for (uint32_t i = 0; i < kCallers; ++i) callers.push_back(std::make_unique<client::Runtime::BusyCaller>(*rt));
    if (!step(from_child[1]) || !await(to_child[0])) return 3;
    callers.clear();
    if (!step(from_child[1]) || !await(to_child[0])) return 4;
    rt->default_queue().add_busy_callers(-1);  // a count below zero: 2^32 - 1 in the shared word
    if (!step(from_child[1]) || !await(to_child[0])) return 5;
    return 0;  // its session closes with the process
  });
  ASSERT_GT(child, 0);
  close(to_child[0]);
  close(from_child[1]);
  struct Cleanup {  // on an early return: no child or descriptors left behind
    pid_t pid;
    int fds[2];
    ~Cleanup() {
      for (int fd : fds) close(fd);
      if (pid > 0) {
        kill(pid, SIGKILL);
        (void)join(pid);
      }
    }
  } cleanup{child, {to_child[1], from_child[0]}};
  auto me = d.open(client::Mode::auto_mode);
  ASSERT_TRUE(me);
  const auto others_become = [&](uint32_t n) {
    const int64_t until = tandem::now_ns() + 5'000'000'000;
    while (tandem::now_ns() < until) {
      if (me->default_queue().other_callers() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ADD_FAILURE() << "other_callers stayed at " << me->default_queue().other_callers() << ", not " << n;
    return false;
  };
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const double cores = CPU_COUNT(&set);

  ASSERT_TRUE(await(from_child[0])) << "the child did not start its callers";
  EXPECT_TRUE(others_become(kCallers));
  const nlohmann::json status = daemon_status(d);
  uint32_t shown = 0;
  for (const auto& s : status["sessions"]) {
    if (s["pid"].get<int>() == child) shown = s.value("busy_callers", 0u);
  }
  EXPECT_EQ(shown, kCallers) << "tandem status shows the child's callers: " << status.dump();
  {
    client::Runtime::BusyCaller mine(*me);
    EXPECT_EQ(me->busy_callers(), kCallers + 1.0);
    EXPECT_LE(me->cpu_share(), std::min(1.0, cores / (kCallers + 1)) + 1e-9) << "four callers share the cores";
  }

  ASSERT_TRUE(step(to_child[1]) && await(from_child[0]));
  EXPECT_TRUE(others_become(0)) << "callers that left are no longer counted";
  ASSERT_TRUE(step(to_child[1]) && await(from_child[0]));
  const uint32_t bound = 4 * std::max(1u, std::thread::hardware_concurrency());  // the daemon's, per session
  EXPECT_TRUE(others_become(bound)) << "a scribbled count is bounded";
  EXPECT_FALSE(daemon_status(d).is_null()) << "the daemon still answers";
  ASSERT_TRUE(step(to_child[1]));
  EXPECT_EQ(join(child), 0);
  cleanup.pid = -1;
  EXPECT_TRUE(others_become(0)) << "a closed session's callers are gone";
}

// tandemd's dispatcher leaves the CPU a client's calls run on where it may use another (docs/abi.md,
// k_caller_cpus): the mark crosses the process boundary in the ring header.
TEST(Daemon, TheDispatcherStepsOffItsClientsCpu) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "one CPU: nowhere to step to";
  DaemonProcess d;
  auto rt = d.open();
  ASSERT_TRUE(rt);
  const std::vector<pid_t> dispatchers = testing::threads_named("tandem-dispatch", std::to_string(d.pid()));
  ASSERT_EQ(dispatchers.size(), 1u) << "tandemd's tandem-dispatch thread";
  const pid_t dispatcher = dispatchers[0];
  int caller_cpu = 0;
  while (!CPU_ISSET(caller_cpu, &all)) ++caller_cpu;
  testing::PinnedToOneCpu pinned(caller_cpu);
  ASSERT_TRUE(pinned.ok());
  const funcs::FunctionInfo* work = funcs::find_function(TANDEM_FN_WORK);
  const uint64_t args[1] = {20'000};
  funcs::Call call;
  funcs::BufferList buffers;
  ASSERT_EQ(funcs::describe_call(*work, args, call, buffers), Status::ok);
  cpu_set_t dispatcher_cpus;
  const int64_t until = tandem::now_ns() + 5'000'000'000;
  do {
    int64_t value = -1;
    ASSERT_EQ(rt->run(*work, call, value), Status::ok);
    EXPECT_EQ(value, 20'000);
    CPU_ZERO(&dispatcher_cpus);
    ASSERT_EQ(sched_getaffinity(dispatcher, sizeof dispatcher_cpus, &dispatcher_cpus), 0);
  } while (CPU_ISSET(caller_cpu, &dispatcher_cpus) && tandem::now_ns() < until);
  EXPECT_FALSE(CPU_ISSET(caller_cpu, &dispatcher_cpus)) << "tandemd's dispatcher may still run on its client's CPU";
  EXPECT_GT(CPU_COUNT(&dispatcher_cpus), 0);
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
