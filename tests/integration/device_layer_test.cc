// The asynchronous device layer under the real dispatcher: a fake device that completes jobs late, out
// of order and from its own thread, beside the emulated fabric in one dispatcher. Every completion must
// reach its own record with the device's value, time and slot; a held-back completion must not be
// delivered before its modelled end; a completion posted while the dispatcher sleeps must wake it.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "abi/ring.hpp"
#include "base/clock.hpp"
#include "config/config.hpp"
#include "devices/completion_inbox.hpp"
#include "devices/emu/emu_device.hpp"
#include "rt/address_space.hpp"
#include "rt/completion.hpp"
#include "rt/dispatcher.hpp"

namespace tandem {
namespace {

using devices::DeviceCompletion;
using devices::DeviceJob;

// Holds every job until the test releases them, then completes them in the order it is told, from its
// own thread, each with value = 3 x workload and device_ns = workload. `hold_ns`: not_before lies that
// far after the job's start (a device whose timing says "not yet").
class FakeDevice final : public devices::Device {
 public:
  FakeDevice(uint32_t slots, int64_t hold_ns) : hold_ns_(hold_ns) {
    info_.kind = "fake";
    info_.name = "fake";
    info_.description = "test device: completes when told, out of order, from its own thread";
    info_.slots = slots;
    for (uint16_t f : {uint16_t{TANDEM_FN_WORK_BASE}, uint16_t{TANDEM_FN_WORK_BASE + 1}}) {
      info_.loadable.set(f);
      info_.models[f].throughput = 1e9;
    }
  }

  const devices::DeviceInfo& info() const override { return info_; }
  void configure(uint32_t, uint16_t) override {}
  void submit(uint32_t slot, const DeviceJob& job) override {
    std::lock_guard lock(mutex_);
    taken_.push_back({slot, job.token, job.start_ns, job.call.workload});
    submitted_.notify_all();
  }
  void poll(int64_t now, std::vector<DeviceCompletion>& out) override {
    arrived_.clear();
    inbox_.take(arrived_);
    for (const DeviceCompletion& c : arrived_) held_.push_back(c);
    next_ = INT64_MAX;
    std::vector<DeviceCompletion> keep;
    for (const DeviceCompletion& c : held_) {
      if (c.not_before <= now) {
        out.push_back(c);
      } else {
        keep.push_back(c);
        next_ = std::min(next_, c.not_before);
      }
    }
    held_.swap(keep);
  }
  int64_t next_deadline() const override { return next_; }
  const uint32_t* wake_word() const override { return inbox_.wake_word(); }

  // Test side: waits until `n` jobs were submitted.
  bool wait_for_jobs(size_t n, int64_t timeout_ns = 5'000'000'000) {
    std::unique_lock lock(mutex_);
    return submitted_.wait_for(lock, std::chrono::nanoseconds(timeout_ns), [&] { return taken_.size() >= n; });
  }
  // Completes the jobs taken so far, last taken first, from a thread of its own.
  void complete_in_reverse() {
    std::vector<Taken> jobs;
    {
      std::lock_guard lock(mutex_);
      jobs.swap(taken_);
    }
    std::thread([this, jobs] {
      for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
        DeviceCompletion c;
        c.token = it->token;
        c.slot = it->slot;
        c.value = static_cast<int64_t>(3 * it->workload);
        c.device_ns = static_cast<int64_t>(it->workload);
        c.not_before = it->start_ns + hold_ns_;
        inbox_.push(c);
      }
    }).join();
  }
  std::vector<uint32_t> slots_taken() {
    std::lock_guard lock(mutex_);
    std::vector<uint32_t> s;
    for (const Taken& t : taken_) s.push_back(t.slot);
    return s;
  }

 private:
  struct Taken {
    uint32_t slot;
    uint64_t token;
    int64_t start_ns;
    uint64_t workload;
  };
  devices::DeviceInfo info_;
  int64_t hold_ns_;
  std::mutex mutex_;
  std::condition_variable submitted_;
  std::vector<Taken> taken_;
  devices::CompletionInbox inbox_;
  std::vector<DeviceCompletion> arrived_, held_;  // dispatcher thread
  int64_t next_ = INT64_MAX;
};

// A dispatcher over [emu x2, fake x3] with one ring in one session.
struct Rig {
  explicit Rig(int64_t hold_ns, int64_t monitor_period_ns = 1'000'000) {
    auto fake_device = std::make_unique<FakeDevice>(3, hold_ns);
    fake = fake_device.get();
    const config::Config config = config::parse_config("[device.emu]\nslots = 2\nresident = [\"nop\", \"work2\"]\n", "t");
    std::vector<std::unique_ptr<devices::Device>> devices;
    devices.push_back(std::make_unique<devices::EmuDevice>(2, devices::emu_models(config)));
    devices.push_back(std::move(fake_device));
    engine::EngineConfig ec;
    for (const funcs::FunctionInfo* fn : funcs::all_functions()) ec.known.set(fn->id);
    rt::DispatcherOptions options;
    options.idle_spin_ns = 10'000;  // sleep soon: completions must wake it
    options.monitor.period_ns = monitor_period_ns;
    dispatcher = std::make_unique<rt::Dispatcher>(ec, std::move(devices), options);
    EXPECT_TRUE(dispatcher->preload(0, TANDEM_FN_NOP));
    EXPECT_TRUE(dispatcher->preload(1, TANDEM_FN_WORK_BASE + 2));
    for (uint32_t s = 2; s < 5; ++s) EXPECT_TRUE(dispatcher->preload(s, static_cast<uint16_t>(TANDEM_FN_WORK_BASE + s % 2)));
    dispatcher->start();
    session = dispatcher->open_session(std::make_shared<rt::IdentityAddressSpace>());
    const size_t bytes = TANDEM_RING_BYTES(kCapacity);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memory = std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, bytes); });
    abi::format_ring(p, bytes, kCapacity, 0);
    EXPECT_TRUE(dispatcher->attach_ring(session, p, kCapacity, memory).ok());
    producer = abi::RingProducer(p);
  }
  ~Rig() { dispatcher->stop(); }

  void dispatch(uint16_t function, uint64_t units, tandem_completion_t& record) {
    rt::reset_record(&record);
    const uint64_t index = producer.reserve();
    while (!producer.has_space(index)) std::this_thread::yield();
    tandem_packet_t& p = producer.packet(index);
    p.flags = 0;
    p.body.dispatch.workload = units;
    p.body.dispatch.args[0] = units;
    for (uint32_t i = 1; i < TANDEM_INLINE_ARGS; ++i) p.body.dispatch.args[i] = 0;
    p.user_data = 0;
    p.completion = reinterpret_cast<uintptr_t>(&record);
    producer.submit(index, abi::make_header(TANDEM_PACKET_DISPATCH, function, false));
  }

  static constexpr uint32_t kCapacity = 64;
  FakeDevice* fake = nullptr;
  std::unique_ptr<rt::Dispatcher> dispatcher;
  engine::SessionId session = 0;
  std::shared_ptr<void> memory;
  abi::RingProducer producer;
};

Status wait(const tandem_completion_t& record) {
  rt::WaitPolicy p;
  p.timeout_ns = 5'000'000'000;
  return rt::wait_record(&record, p, nullptr);
}

TEST(DeviceLayer, OutOfOrderCompletionsReachTheirOwnRecords) {
  Rig rig(0);
  // Three jobs on the fake device's slots (work0 on two of them, work1 on one) and one emulated job.
  tandem_completion_t recs[4];
  rig.dispatch(TANDEM_FN_WORK_BASE, 100, recs[0]);
  rig.dispatch(TANDEM_FN_WORK_BASE + 1, 200, recs[1]);
  rig.dispatch(TANDEM_FN_WORK_BASE, 300, recs[2]);
  rig.dispatch(TANDEM_FN_WORK_BASE + 2, 1000, recs[3]);
  ASSERT_TRUE(rig.fake->wait_for_jobs(3));
  // The emulated job completes on its own while the fake device holds its three.
  ASSERT_EQ(wait(recs[3]), Status::ok);
  EXPECT_EQ(recs[3].value, 1000u) << "work's accelerator returns the units it processed";
  EXPECT_EQ(recs[3].slot, 1u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rt::record_status(&recs[i]), TANDEM_PENDING) << i;
  // The fake device's slots are the engine's 2-4: it was handed its own numbers 0-2.
  std::vector<uint32_t> slots = rig.fake->slots_taken();
  std::sort(slots.begin(), slots.end());
  EXPECT_EQ(slots, (std::vector<uint32_t>{0, 1, 2}));
  rig.fake->complete_in_reverse();
  const uint64_t units[3] = {100, 200, 300};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(wait(recs[i]), Status::ok) << i;
    EXPECT_EQ(recs[i].value, 3 * units[i]) << i;
    EXPECT_EQ(recs[i].device_ns, units[i]) << i << ": the device's time reaches the record";
    EXPECT_GE(recs[i].slot, 2u) << i;
    EXPECT_LE(recs[i].slot, 4u) << i;
  }
  const rt::Snapshot snap = rig.dispatcher->snapshot();
  EXPECT_EQ(snap.stats.completions, 4u);
  EXPECT_EQ(snap.jobs_in_flight, 0u);
  ASSERT_EQ(snap.devices.size(), 2u);
  EXPECT_EQ(snap.devices[1].info.kind, "fake");
  EXPECT_EQ(snap.devices[1].first_slot, 2u);
}

TEST(DeviceLayer, HeldCompletionsAreNotDeliveredBeforeTheirModelledEnd) {
  constexpr int64_t kHold = 30'000'000;  // 30 ms after the job started
  // A 10 s monitor period: only the held completion's own deadline can wake a sleeping dispatcher in time.
  Rig rig(kHold, 10'000'000'000);
  tandem_completion_t rec;
  const int64_t before = now_ns();
  rig.dispatch(TANDEM_FN_WORK_BASE, 10, rec);
  ASSERT_TRUE(rig.fake->wait_for_jobs(1));
  rig.fake->complete_in_reverse();  // finished at once, but not to be delivered for 30 ms
  ASSERT_EQ(wait(rec), Status::ok);
  const int64_t waited = now_ns() - before;
  EXPECT_GE(waited, kHold) << "delivered before its not_before";
  // Far below the 10 s period, far above a loaded machine's scheduling delays (up to ~1 s seen at load 30).
  EXPECT_LT(waited, kHold + 5'000'000'000) << "the dispatcher slept through the deadline";
}

// The monitor's period (1 s here) would otherwise wake the dispatcher: only the device's wake word can
// bring a completion that arrives while it sleeps to its record quickly.
TEST(DeviceLayer, ACompletionFromAnotherThreadWakesTheSleepingDispatcher) {
  Rig rig(0, 1'000'000'000);
  tandem_completion_t rec;
  rig.dispatch(TANDEM_FN_WORK_BASE + 1, 10, rec);
  ASSERT_TRUE(rig.fake->wait_for_jobs(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // long past idle_spin: it sleeps now
  const uint64_t sleeps_before = rig.dispatcher->snapshot().stats.sleeps;
  EXPECT_GT(sleeps_before, 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int64_t pushed = now_ns();
  rig.fake->complete_in_reverse();
  ASSERT_EQ(wait(rec), Status::ok);
  EXPECT_LT(now_ns() - pushed, 200'000'000) << "the completion waited for something else to wake the dispatcher";
  EXPECT_EQ(rec.value, 30u);
}

// Many jobs over both devices at once, completed in batches in reverse: none lost, none twice.
TEST(DeviceLayer, ManyJobsOverTwoDevicesNoneLostNoneTwice) {
  Rig rig(0);
  constexpr int kRounds = 50;
  for (int round = 0; round < kRounds; ++round) {
    tandem_completion_t recs[5];
    for (int i = 0; i < 3; ++i) rig.dispatch(static_cast<uint16_t>(TANDEM_FN_WORK_BASE + i % 2), 10 + i, recs[i]);
    rig.dispatch(TANDEM_FN_WORK_BASE + 2, 7, recs[3]);
    rig.dispatch(TANDEM_FN_NOP, 0, recs[4]);
    ASSERT_TRUE(rig.fake->wait_for_jobs(3)) << round;
    rig.fake->complete_in_reverse();
    for (int i = 0; i < 5; ++i) ASSERT_EQ(wait(recs[i]), Status::ok) << round << " " << i;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(recs[i].value, 3u * (10 + i));
    EXPECT_EQ(recs[3].value, 7u);
  }
  EXPECT_EQ(rig.dispatcher->snapshot().stats.completions, 5u * kRounds);
}

}  // namespace
}  // namespace tandem
