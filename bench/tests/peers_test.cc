// Smoke tests of every peer: small sample counts, results that make physical sense, and nothing left
// behind (threads, child processes, fds, pinning, environment, files). No timing thresholds.
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <string>

#include "support/measure.hpp"
#include "support/peers.hpp"

namespace tandem::bench {
namespace {

namespace fs = std::filesystem;

PeerOptions small_run() {
  PeerOptions o;
  o.samples = 200;
  o.warmup = 20;
  o.timeout = std::chrono::seconds(10);  // sanitizer builds are slow; a stall still ends
  return o;
}

std::size_t entries_in(const char* dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// Sanitizer runtimes start a helper thread of their own when the program starts its first thread
// (TSan's background thread); start one thread up front so that it is counted in every "before".
bool settle_runtime_threads() {
  std::thread([] {}).join();
  return true;
}

// A joined thread can stay in /proc/self/task for a moment after join() returns (the kernel reaps it
// after waking the joiner): count once the number has held still for a few milliseconds.
std::size_t settled_thread_count() {
  std::size_t last = entries_in("/proc/self/task");
  for (int same = 0, tries = 0; same < 3 && tries < 500; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::size_t now = entries_in("/proc/self/task");
    same = now == last ? same + 1 : 0;
    last = now;
  }
  return last;
}

// What a peer must leave exactly as it found it.
struct ProcessSnapshot {
  bool settled = settle_runtime_threads();
  std::size_t fds = entries_in("/proc/self/fd");
  std::size_t threads = settled_thread_count();
  std::vector<int> cpus = usable_cpus();
};

bool no_children_left() {
  int wstatus = 0;
  return waitpid(-1, &wstatus, WNOHANG) < 0 && errno == ECHILD;
}

void expect_sane(const Samples& samples, std::size_t expected_count) {
  ASSERT_EQ(samples.size(), expected_count);
  for (double ns : samples) {
    ASSERT_TRUE(std::isfinite(ns));
    ASSERT_GT(ns, 0.0);
  }
  const Summary s = summarize(samples);
  EXPECT_LE(s.min, s.median);
  EXPECT_LE(s.median, s.p99);
  EXPECT_LE(s.p99, s.max);
  EXPECT_LE(s.min, s.mean);
  EXPECT_LE(s.mean, s.max);
}

void expect_clean_after(const ProcessSnapshot& before) {
  // A peer's threads are joined before it returns, but may take a moment to leave /proc; one that is
  // still running after a second is a leak.
  for (int i = 0; i < 1000 && entries_in("/proc/self/task") > before.threads; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const ProcessSnapshot after;
  EXPECT_EQ(after.fds, before.fds) << "file descriptors leaked";
  EXPECT_EQ(after.threads, before.threads) << "threads left running";
  EXPECT_EQ(after.cpus, before.cpus) << "caller left pinned";
  EXPECT_TRUE(no_children_left()) << "child process not reaped";
}

class EveryPeer : public ::testing::TestWithParam<Peer> {};

TEST_P(EveryPeer, GivesPositiveFiniteSamplesAndCleansUp) {
  const Peer peer = GetParam();
  if (!peer_available(peer)) GTEST_SKIP() << "built without " << peer_info(peer).name;
  const ProcessSnapshot before;
  const PeerOptions options = small_run();
  const Result<Samples> got = measure_peer(peer, options);
  ASSERT_TRUE(got.ok()) << to_string(got.status()) << ": " << got.message();
  const std::size_t expected =
      peer == Peer::starpu_async ? StarpuOptions{}.async_batches : options.samples;
  expect_sane(got.value(), expected);
  expect_clean_after(before);
}

INSTANTIATE_TEST_SUITE_P(Peers, EveryPeer,
                         ::testing::Values(Peer::thread_pingpong, Peer::process_pingpong, Peer::futex,
                                           Peer::iouring_nop, Peer::starpu_sync, Peer::starpu_async,
                                           Peer::pipe, Peer::eventfd, Peer::unix_socket),
                         [](const ::testing::TestParamInfo<Peer>& p) {
                           std::string name(peer_info(p.param).name);
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(Registry, ListsEveryPeerOnceWithAJsonKey) {
  EXPECT_EQ(all_peers().size(), 9u);
  for (const PeerInfo& p : all_peers()) {
    EXPECT_EQ(&peer_info(p.peer), &p);
    EXPECT_TRUE(p.key.ends_with("_ns")) << p.key;
    EXPECT_FALSE(p.description.empty());
  }
  EXPECT_EQ(peer_info(Peer::thread_pingpong).key, "pingpong_rtt_ns");
  EXPECT_EQ(peer_info(Peer::iouring_nop).key, "iouring_nop_rtt_ns");
}

TEST(PingPong, BatchedSamplesAndUnpinnedRunsWork) {
  PeerOptions options = small_run();
  options.round_trips_per_sample = 8;
  options.pin = false;
  const ProcessSnapshot before;
  const Result<Samples> threads = thread_pingpong_rtt(options);
  ASSERT_TRUE(threads.ok()) << threads.message();
  expect_sane(threads.value(), options.samples);
  const Result<Samples> processes = process_pingpong_rtt(options);
  ASSERT_TRUE(processes.ok()) << processes.message();
  expect_sane(processes.value(), options.samples);
  expect_clean_after(before);
}

TEST(PingPong, BothSidesOnOneCpuStillComplete) {
  PeerOptions options = small_run();
  options.samples = 50;
  options.warmup = 5;
  options.cpu_a = options.cpu_b = usable_cpus().front();
  const Result<Samples> got = thread_pingpong_rtt(options);
  ASSERT_TRUE(got.ok()) << got.message();
  expect_sane(got.value(), options.samples);
}

TEST(Futex, ProcessPrivateScopeWorksToo) {
  const Result<Samples> got = futex_rtt(small_run(), FutexScope::process_private);
  ASSERT_TRUE(got.ok()) << got.message();
  expect_sane(got.value(), small_run().samples);
}

TEST(Channels, CarryRequestsOfManyWords) {
  const ProcessSnapshot before;
  for (Channel channel : {Channel::pipe, Channel::unix_stream, Channel::eventfd}) {
    for (std::size_t words : {1u, 16u, 64u}) {
      const Result<Samples> got = channel_rtt(channel, small_run(), words);
      ASSERT_TRUE(got.ok()) << to_string(channel) << " " << words << ": " << got.message();
      expect_sane(got.value(), small_run().samples);
    }
  }
  expect_clean_after(before);
}

TEST(Channels, RejectRequestSizesOutOfRange) {
  EXPECT_EQ(channel_rtt(Channel::pipe, small_run(), 0).status(), Status::invalid_argument);
  EXPECT_EQ(channel_rtt(Channel::pipe, small_run(), 65).status(), Status::invalid_argument);
}

TEST(Starpu, RunsIsolatedWithOneWorkerAndLeavesNoTrace) {
  if (!peer_available(Peer::starpu_sync)) GTEST_SKIP() << "built without StarPU";
  // A throw-away HOME: StarPU must write nothing there (its STARPU_HOME is its own temporary dir).
  char home_template[] = "/tmp/tandem-peers-test-home-XXXXXX";
  ASSERT_NE(mkdtemp(home_template), nullptr);
  const char* old_home = getenv("HOME");
  const std::string saved_home = old_home != nullptr ? old_home : "";
  setenv("HOME", home_template, 1);
  const bool had_starpu_home = getenv("STARPU_HOME") != nullptr;

  StarpuOptions starpu;
  starpu.async_batches = 3;
  starpu.tasks_per_batch = 50;
  PeerOptions options = small_run();
  options.samples = 50;
  const ProcessSnapshot before;
  const Result<StarpuResult> got = starpu_task_costs(options, starpu);

  if (old_home != nullptr) {
    setenv("HOME", saved_home.c_str(), 1);
  } else {
    unsetenv("HOME");
  }
  EXPECT_TRUE(fs::is_empty(home_template)) << "StarPU wrote into HOME";
  fs::remove_all(home_template);
  ASSERT_TRUE(got.ok()) << to_string(got.status()) << ": " << got.message();
  EXPECT_EQ(got->workers, 1u);
  EXPECT_FALSE(got->scheduler.empty());
  expect_sane(got->sync_rtt, 50);
  expect_sane(got->async_task, 3);
  EXPECT_EQ(getenv("STARPU_HOME") != nullptr, had_starpu_home) << "environment changed";
  expect_clean_after(before);
}

TEST(Starpu, ReportsTheSchedulerItRan) {
  if (!peer_available(Peer::starpu_sync)) GTEST_SKIP() << "built without StarPU";
  StarpuOptions starpu;
  starpu.scheduler = "eager";
  starpu.measure_async = false;
  PeerOptions options = small_run();
  options.samples = 5;
  options.warmup = 0;
  const Result<StarpuResult> got = starpu_task_costs(options, starpu);
  ASSERT_TRUE(got.ok()) << got.message();
  EXPECT_EQ(got->scheduler, "eager");
  EXPECT_EQ(got->sync_rtt.size(), 5u);
  EXPECT_TRUE(got->async_task.empty());
}

TEST(Starpu, IsKilledAtItsDeadlineInsteadOfHanging) {
  if (!peer_available(Peer::starpu_sync)) GTEST_SKIP() << "built without StarPU";
  StarpuOptions starpu;
  starpu.total_timeout = std::chrono::milliseconds(1);  // StarPU alone takes tens of ms to start
  const ProcessSnapshot before;
  const Result<StarpuResult> got = starpu_task_costs(small_run(), starpu);
  EXPECT_EQ(got.status(), Status::timeout) << got.message();
  expect_clean_after(before);
}

// The children of this process, from /proc (needs CONFIG_PROC_CHILDREN, present on Debian kernels).
std::vector<pid_t> children_of_this_process() {
  std::vector<pid_t> pids;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "children");
    pid_t pid = 0;
    while (in >> pid) pids.push_back(pid);
  }
  return pids;
}

TEST(PingPong, AnEchoingProcessThatDiesGivesATimeoutNotAHang) {
  PeerOptions options = small_run();
  options.samples = 1'000'000'000;  // far more than can run before the child is killed
  options.timeout = std::chrono::milliseconds(200);
  std::atomic<bool> killed{false};
  std::thread killer([&] {
    for (int tries = 0; tries < 10'000 && !killed.load(); ++tries) {
      for (pid_t pid : children_of_this_process()) {
        kill(pid, SIGKILL);
        killed.store(true);
      }
      usleep(1'000);
    }
  });
  const Result<Samples> got = process_pingpong_rtt(options);
  killer.join();
  ASSERT_TRUE(killed.load()) << "the echoing child never appeared";
  EXPECT_EQ(got.status(), Status::timeout) << got.message();
  EXPECT_TRUE(no_children_left());
}

}  // namespace
}  // namespace tandem::bench
