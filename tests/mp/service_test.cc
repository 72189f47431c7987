// Service requests (FastPath, issue 12) through tandemd: the ring is shared memory between the
// client and the daemon's device side, not the socket. Round trips with polling and sleeping clients;
// a client killed while its job waits frees the slot at once; a daemon killed under a waiting client
// is noticed promptly; a client that never answers or answers garbage fails only its own job.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "daemon_harness.hpp"
#include "funcs/ref/service_chain_ref.hpp"
#include "mp_util.hpp"

namespace tandem {
namespace {

using testing::DaemonProcess;

uint64_t mix(void*, const uint64_t args[4]) { return (args[0] * 31 + args[1]) ^ (args[2] << 7) ^ args[3]; }

uint64_t reference(uint64_t steps, uint64_t seed) {
  return funcs::ref::service_chain(steps, seed, [](const funcs::ref::ServiceArgs& a) { return mix(nullptr, a.data()); });
}

// One slot: a job that kept it would hold up every other client.
std::string config(int timeout_ms) {
  return "[device.emu]\nslots = 1\nresident = [\"service_chain\"]\nservice_timeout_ms = " + std::to_string(timeout_ms) + "\n";
}

// Dispatches a chain on the default queue without serving it; the record (session memory) is returned.
tandem_completion_t* dispatch_chain(client::Runtime& rt, uint32_t service, uint64_t steps, uint64_t seed) {
  auto* rec = static_cast<tandem_completion_t*>(rt.alloc(sizeof(tandem_completion_t)));
  rt::reset_record(rec);
  const uint64_t args[3] = {service, steps, seed};
  EXPECT_EQ(rt.default_queue().dispatch(TANDEM_FN_SERVICE_CHAIN, args, 3, 0, rec), Status::ok);
  return rec;
}

Status wait_for(client::Runtime& rt, tandem_completion_t* rec) {
  rt::WaitPolicy policy;
  policy.timeout_ns = 20'000'000'000;
  return rt.wait(rec, policy);
}

TEST(ServiceDaemon, PollingAndSleepingClientsRoundTrip) {
  DaemonProcess d(config(10'000));
  for (uint32_t flags : {client::kServicePoll, client::kServiceSleep}) {
    auto rt = d.open(client::Mode::hw);
    ASSERT_TRUE(rt);
    rt->service().register_callback(9, mix, nullptr);
    ASSERT_EQ(rt->start_service(flags), Status::ok);
    uint64_t value = 0;
    ASSERT_EQ(rt->service_chain(9, 200, flags, value), Status::ok);
    EXPECT_EQ(value, reference(200, flags));
    EXPECT_EQ(rt->stats().accelerated_calls.load(), 1u) << "the daemon's device ran it";
  }
}

TEST(ServiceDaemon, AClientKilledWhileItsJobWaitsFreesTheSlot) {
  DaemonProcess d(config(60'000));  // a timeout the test never reaches: only the session's end frees it
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t victim = testing::spawn([&] {
    auto rt = d.open(client::Mode::hw);
    if (!rt || rt->start_service(client::kServicePoll) != Status::ok) return 2;
    dispatch_chain(*rt, 1, 5, 1);  // never served: this process stops polling
    const char c = 'x';
    if (write(ready[1], &c, 1) != 1) return 3;
    pause();
    return 0;
  });
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_TRUE(testing::eventually(d, 10, [](const nlohmann::json& s) {
    return s.dump().find("\"jobs_in_flight\":1") != std::string::npos;  // its job holds the slot
  }));
  kill(victim, SIGKILL);
  EXPECT_EQ(testing::join(victim), 128 + SIGKILL);
  close(ready[0]);
  close(ready[1]);
  // The one slot serves the next client well before the 60 s timeout.
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  rt->service().register_callback(2, mix, nullptr);
  ASSERT_EQ(rt->start_service(client::kServiceSleep), Status::ok);
  const int64_t start = now_ns();
  tandem_completion_t* rec = dispatch_chain(*rt, 2, 30, 4);
  EXPECT_EQ(wait_for(*rt, rec), Status::ok);
  EXPECT_EQ(static_cast<uint64_t>(rec->value), reference(30, 4));
  EXPECT_LT(now_ns() - start, 30'000'000'000) << "freed by the session's end, not the timeout";
  EXPECT_TRUE(d.alive());
}

TEST(ServiceDaemon, ADaemonKilledUnderAWaitingClientIsNoticedPromptly) {
  DaemonProcess d(config(60'000));
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  std::atomic<bool> in_callback{false};
  // A callback that kills the daemon: the job then never completes.
  rt->service().register_callback(3, [](void* user, const uint64_t*) -> uint64_t {
    static_cast<std::atomic<bool>*>(user)->store(true);
    return 1;
  }, &in_callback);
  ASSERT_EQ(rt->start_service(client::kServicePoll), Status::ok);
  tandem_completion_t* rec = dispatch_chain(*rt, 3, 1'000'000, 1);
  while (!in_callback.load()) rt->service().poll();
  d.kill_hard();
  const int64_t start = now_ns();
  uint64_t value = 0;
  EXPECT_EQ(rt->service_chain(3, 10, 1, value), Status::disconnected);
  EXPECT_EQ(wait_for(*rt, rec), Status::disconnected);
  EXPECT_LT(now_ns() - start, 5'000'000'000) << "liveness is checked every 50 ms";
}

TEST(ServiceDaemon, SilentAndGarbageClientsFailOnlyTheirJobs) {
  DaemonProcess d(config(100));
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  rt->service().register_callback(1, mix, nullptr);
  ASSERT_EQ(rt->start_service(client::kServicePoll), Status::ok);
  // Never answered: TIMEOUT after 100 ms.
  EXPECT_EQ(wait_for(*rt, dispatch_chain(*rt, 1, 3, 1)), Status::timeout);
  // Garbage: the client overwrites every posted slot's state word with words the device never wrote.
  tandem_completion_t* rec = dispatch_chain(*rt, 1, 3, 1);
  auto* slots = reinterpret_cast<tandem_service_slot_t*>(static_cast<char*>(rt->service().ring()) + TANDEM_SERVICE_HEADER_BYTES);
  while (rt::record_status(rec) == TANDEM_PENDING) {
    for (uint32_t i = 0; i < client::kServiceSlots; ++i) {
      if ((abi::load_acquire(slots[i].state) & 3u) == TANDEM_SERVICE_POSTED) {
        abi::store_release(slots[i].state, 0xdeadbeefu);
        slots[i].answer = 42;
      }
    }
  }
  EXPECT_EQ(wait_for(*rt, rec), Status::service_failed);
  // An unknown service id: the library (polled here) answers that it has none.
  tandem_completion_t* unknown = dispatch_chain(*rt, 200, 2, 1);
  while (rt::record_status(unknown) == TANDEM_PENDING) rt->service().poll();
  EXPECT_EQ(wait_for(*rt, unknown), Status::service_failed);
  // The session and the slot carry on.
  uint64_t value = 0;
  ASSERT_EQ(rt->service_chain(1, 25, 7, value), Status::ok);
  EXPECT_EQ(value, reference(25, 7));
  EXPECT_TRUE(d.alive());
}

}  // namespace
}  // namespace tandem
