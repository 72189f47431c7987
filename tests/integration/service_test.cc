// Service requests (FastPath, issue 12) in the embedded runtime: a service_chain job asks the client
// `steps` times and its value equals the software reference that calls the same callback here; polling
// and sleeping clients; unknown services, missing rings and silent clients fail only their job, with
// their status, and the device's slot serves the next job.
#include <gtest/gtest.h>

#include <atomic>

#include "client/runtime.hpp"
#include "funcs/ref/service_chain_ref.hpp"
#include "rt/completion.hpp"
#include "tandem/tandem.h"

namespace tandem {
namespace {

// A callback whose answer depends on every argument; counts its calls.
uint64_t mix(void* user, const uint64_t args[4]) {
  static_cast<std::atomic<uint64_t>*>(user)->fetch_add(1);
  return (args[0] * 31 + args[1]) ^ (args[2] << 7) ^ args[3];
}

uint64_t reference(uint64_t steps, uint64_t seed) {
  std::atomic<uint64_t> calls{0};
  return funcs::ref::service_chain(steps, seed, [&](const funcs::ref::ServiceArgs& a) { return mix(&calls, a.data()); });
}

std::unique_ptr<client::Runtime> open_runtime(const char* extra = "") {
  client::RuntimeOptions o;
  o.embedded = true;
  o.mode = client::Mode::hw;
  o.config_text = std::string("[device.emu]\nslots = 1\nresident = [\"service_chain\"]\n") + extra;
  auto opened = client::Runtime::open(o);
  EXPECT_TRUE(opened) << opened.message();
  return opened ? std::move(opened.value()) : nullptr;
}

struct Outcome {
  Status status = Status::ok;
  uint64_t value = 0;
};

// A raw job on the default queue, waited for without serving.
Outcome raw_job(client::Runtime& rt, uint32_t service, uint64_t steps, uint64_t seed) {
  auto* rec = static_cast<tandem_completion_t*>(rt.alloc(sizeof(tandem_completion_t)));
  rt::reset_record(rec);
  const uint64_t args[3] = {service, steps, seed};
  EXPECT_EQ(rt.default_queue().dispatch(TANDEM_FN_SERVICE_CHAIN, args, 3, 0, rec), Status::ok);
  rt::WaitPolicy policy;
  policy.timeout_ns = 10'000'000'000;
  Outcome o;
  o.status = rt.wait(rec, policy);
  o.value = static_cast<uint64_t>(rec->value);
  rt.free(rec);
  return o;
}

TEST(ServiceRequests, PollingClientChainMatchesTheReference) {
  auto rt = open_runtime();
  ASSERT_TRUE(rt);
  std::atomic<uint64_t> calls{0};
  ASSERT_EQ(rt->service().register_callback(4, mix, &calls), Status::ok);
  ASSERT_EQ(rt->start_service(client::kServicePoll), Status::ok);
  EXPECT_EQ(rt->start_service(client::kServicePoll), Status::invalid_argument) << "once per runtime";
  for (uint64_t steps : {0u, 1u, 7u, 500u}) {
    uint64_t value = 0;
    const uint64_t before = calls.load();
    ASSERT_EQ(rt->service_chain(4, steps, 99 + steps, value), Status::ok) << steps;
    EXPECT_EQ(value, reference(steps, 99 + steps)) << steps;
    EXPECT_EQ(calls.load() - before, steps) << "one callback per request";
  }
  EXPECT_GE(rt->stats().accelerated_calls.load(), 4u) << "the accelerator ran them, not the software path";
}

TEST(ServiceRequests, SleepingClientThreadServesRawJobs) {
  auto rt = open_runtime();
  ASSERT_TRUE(rt);
  std::atomic<uint64_t> calls{0};
  rt->service().register_callback(0, mix, &calls);
  ASSERT_EQ(rt->start_service(client::kServiceSleep), Status::ok);
  const Outcome o = raw_job(*rt, 0, 300, 5);
  EXPECT_EQ(o.status, Status::ok);
  EXPECT_EQ(o.value, reference(300, 5));
  EXPECT_EQ(calls.load(), 300u);
  uint64_t value = 0;
  ASSERT_EQ(rt->service_chain(0, 50, 6, value), Status::ok);
  EXPECT_EQ(value, reference(50, 6));
}

TEST(ServiceRequests, UnknownServiceAndMissingRingFailTheJobOnly) {
  auto rt = open_runtime();
  ASSERT_TRUE(rt);
  // No ring yet: nobody to ask.
  EXPECT_EQ(raw_job(*rt, 1, 3, 1).status, Status::service_failed);
  EXPECT_EQ(raw_job(*rt, 1, 0, 1).status, Status::ok) << "a chain of no requests asks nobody";
  std::atomic<uint64_t> calls{0};
  rt->service().register_callback(1, mix, &calls);
  ASSERT_EQ(rt->start_service(client::kServiceSleep), Status::ok);
  EXPECT_EQ(raw_job(*rt, 2, 3, 1).status, Status::service_failed) << "no callback for id 2";
  uint64_t value = 0;
  EXPECT_EQ(rt->service_chain(2, 3, 1, value), Status::service_failed);
  EXPECT_EQ(rt->service_chain(TANDEM_SERVICE_IDS, 3, 1, value), Status::invalid_argument);
  // The slot and the ring serve the next job.
  const Outcome o = raw_job(*rt, 1, 20, 2);
  EXPECT_EQ(o.status, Status::ok);
  EXPECT_EQ(o.value, reference(20, 2));
}

TEST(ServiceRequests, ASilentClientTimesOutAndFreesTheSlot) {
  auto rt = open_runtime("service_timeout_ms = 30\n");
  ASSERT_TRUE(rt);
  std::atomic<uint64_t> calls{0};
  rt->service().register_callback(1, mix, &calls);
  // Polling mode, and nobody polls while the raw job waits.
  ASSERT_EQ(rt->start_service(client::kServicePoll), Status::ok);
  EXPECT_EQ(raw_job(*rt, 1, 4, 1).status, Status::timeout);
  // The timed-out request is no longer served; the next call (which polls) completes.
  uint64_t value = 0;
  ASSERT_EQ(rt->service_chain(1, 10, 3, value), Status::ok);
  EXPECT_EQ(value, reference(10, 3));
  EXPECT_EQ(calls.load(), 10u);
}

TEST(ServiceRequests, SoftwareModeCallsTheCallbackHere) {
  auto rt = open_runtime();
  ASSERT_TRUE(rt);
  std::atomic<uint64_t> calls{0};
  rt->service().register_callback(3, mix, &calls);
  uint64_t value = 0;
  ASSERT_EQ(rt->service_chain(3, 25, 8, value), Status::ok) << "no service started: software";
  EXPECT_EQ(value, reference(25, 8));
  EXPECT_EQ(rt->stats().hw_jobs.load(), 0u);
}

TEST(ServiceRequests, CApi) {
  tandem_options_t o;
  tandem_options_init(&o);
  o.embedded = 1;
  o.mode = TANDEM_MODE_HW;
  tandem_runtime_t* rt = nullptr;
  ASSERT_EQ(tandem_open(&o, &rt), TANDEM_OK);
  std::atomic<uint64_t> calls{0};
  EXPECT_EQ(tandem_service_register(rt, TANDEM_SERVICE_IDS, mix, &calls), TANDEM_INVALID_ARGUMENT);
  EXPECT_EQ(tandem_service_poll(rt, nullptr), TANDEM_INVALID_ARGUMENT) << "not started";
  EXPECT_EQ(tandem_service_start(rt, 0), TANDEM_INVALID_ARGUMENT);
  EXPECT_EQ(tandem_service_start(rt, 8), TANDEM_INVALID_ARGUMENT);
  ASSERT_EQ(tandem_service_register(rt, 7, mix, &calls), TANDEM_OK);
  ASSERT_EQ(tandem_service_start(rt, TANDEM_SERVICE_POLL | TANDEM_SERVICE_SLEEP), TANDEM_OK);
  uint32_t served = 99;
  EXPECT_EQ(tandem_service_poll(rt, &served), TANDEM_OK);
  EXPECT_EQ(served, 0u);
  uint64_t value = 0;
  ASSERT_EQ(tandem_service_chain(rt, 7, 40, 11, &value), TANDEM_OK);
  EXPECT_EQ(value, reference(40, 11));
  EXPECT_EQ(tandem_service_chain(rt, 7, 1, 1, nullptr), TANDEM_INVALID_ARGUMENT);
  tandem_close(rt);
}

}  // namespace
}  // namespace tandem
