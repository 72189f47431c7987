// A real device's slot bookkeeping (devices/slot_job.hpp), shared by the OpenCL and CUDA devices: a
// job past its limit, a rebuild that fails and is tried again with a growing wait, and the fault
// clauses of `tandem status`'s activity line.
#include "devices/slot_job.hpp"

#include <gtest/gtest.h>

namespace tandem::devices {
namespace {

TEST(SlotJob, AJobPastItsLimitTimesOutOnceAndItsSlotReturnsWhenTheDeviceFinishesIt) {
  SlotJob job;
  std::vector<DeviceCompletion> out;
  job.start(7, 1'000);
  job.expire(3, 1'000 + 999, 1'000, out);
  EXPECT_TRUE(out.empty()) << "not yet past the limit";
  job.expire(3, 2'000, 1'000, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].token, 7u);
  EXPECT_EQ(out[0].slot, 3u);
  EXPECT_EQ(out[0].status, Status::timeout);
  EXPECT_FALSE(job.health.in_service);
  job.expire(3, 5'000, 1'000, out);
  EXPECT_EQ(out.size(), 1u) << "completed once";
  EXPECT_TRUE(job.finished(3'000'000)) << "already completed: nothing more to report";
  EXPECT_TRUE(job.health.in_service);
  EXPECT_NE(job.health.last_error.find("back in service"), std::string::npos) << job.health.last_error;
  job.start(8, 4'000'000);
  EXPECT_FALSE(job.finished(4'000'100)) << "a job on time is reported by its device";
}

TEST(SlotJob, AFailedRebuildIsTriedAgainWaitingTwiceAsLongEachTime) {
  SlotJob job;
  DeviceFaults faults;
  int tries = 0;
  const auto failing = [&] {
    ++tries;
    throw Error(Status::device_error, "no queue today");
  };
  rebuild_slot(job, faults, "slot 0: a job failed", 0, "its queue was rebuilt", failing);
  EXPECT_FALSE(job.health.in_service);
  EXPECT_EQ(job.rebuild_at_ns, SlotJob::kFirstRebuildWaitNs);
  EXPECT_FALSE(job.rebuild_due(SlotJob::kFirstRebuildWaitNs - 1));
  EXPECT_TRUE(job.rebuild_due(SlotJob::kFirstRebuildWaitNs));
  EXPECT_EQ(job.deadline(1'000), SlotJob::kFirstRebuildWaitNs) << "the dispatcher wakes for the next try";
  rebuild_slot(job, faults, job.rebuild_reason, 100, "its queue was rebuilt", failing);
  EXPECT_EQ(job.rebuild_at_ns, 100 + 2 * SlotJob::kFirstRebuildWaitNs);
  EXPECT_NE(job.health.last_error.find("slot 0: a job failed; rebuilding the slot failed 2 time(s) (last: no queue today)"),
            std::string::npos)
      << job.health.last_error;
  for (int i = 0; i < 20; ++i) rebuild_slot(job, faults, job.rebuild_reason, 0, "its queue was rebuilt", failing);
  EXPECT_EQ(job.rebuild_at_ns, SlotJob::kMaxRebuildWaitNs) << "the wait is bounded";
  rebuild_slot(job, faults, job.rebuild_reason, 0, "its queue was rebuilt", [&] { ++tries; });
  EXPECT_TRUE(job.health.in_service);
  EXPECT_EQ(job.health.last_error, "slot 0: a job failed; its queue was rebuilt after 22 failed tries");
  EXPECT_FALSE(job.rebuild_due(INT64_MAX - 1));
  EXPECT_EQ(tries, 23);
  EXPECT_EQ(faults.rebuilds, 1u);
  EXPECT_EQ(faults.failed_rebuilds, 22u);
}

TEST(DeviceFaults, TheActivityLineNamesOnlyWhatHappened) {
  DeviceFaults faults;
  EXPECT_EQ(faults.describe("streams"), "");
  faults.out_of_memory = 2;
  EXPECT_EQ(faults.describe("streams"), "; 2 jobs found no device memory for their buffers");
  faults.failed_launches = 3;
  faults.rebuilds = 2;
  faults.failed_rebuilds = 1;
  faults.lost = "cudaErrorIllegalAddress";
  EXPECT_EQ(faults.describe("command queues"),
            "; 2 jobs found no device memory for their buffers; faults: 3 launches failed on the device, 2 command queues "
            "rebuilt (1 rebuilds failed); device lost: cudaErrorIllegalAddress");
}

// One launch at a time, each failed or not, ended at `now`.
void one_launch(DeviceBreaker& b, DeviceFaults& f, bool failed, int64_t now = 0, std::string_view why = "CL_OUT_OF_RESOURCES") {
  b.launch_ended(b.launch_started(), failed, why, now, f);
}

TEST(DeviceBreaker, EightFailuresInARowTakeTheDeviceOutUntilItsWaitIsOver) {
  DeviceBreaker breaker;
  DeviceFaults faults;
  breaker.poll(INT64_MAX - 1, faults);
  EXPECT_TRUE(faults.lost.empty()) << "nothing to end";
  for (int i = 0; i < 7; ++i) one_launch(breaker, faults, true);
  one_launch(breaker, faults, false);
  EXPECT_EQ(breaker.failures_in_a_row, 0u) << "a success between failures: the device works";
  for (int i = 0; i < 7; ++i) one_launch(breaker, faults, true);
  EXPECT_TRUE(faults.lost.empty());
  const uint64_t in_flight = breaker.launch_started();  // in flight when the device leaves service
  one_launch(breaker, faults, true, 1'000);
  EXPECT_EQ(faults.lost,
            "8 launches in a row failed (the last: CL_OUT_OF_RESOURCES); every slot is out of service for 100 ms, then serves "
            "on probation");
  EXPECT_EQ(faults.losses, 1u);
  EXPECT_EQ(breaker.retry_at_ns, 1'000 + SlotJob::kFirstRebuildWaitNs);
  breaker.launch_ended(in_flight, false, "", 2'000, faults);  // the wait runs its course all the same
  EXPECT_EQ(breaker.wait_ns, SlotJob::kFirstRebuildWaitNs);
  breaker.poll(breaker.retry_at_ns - 1, faults);
  EXPECT_FALSE(faults.lost.empty());
  breaker.poll(1'000 + SlotJob::kFirstRebuildWaitNs, faults);
  EXPECT_TRUE(faults.lost.empty()) << "serves again, on probation";
  EXPECT_EQ(faults.describe("queues"), "; device lost 1 time(s), serving again (the last: 8 launches in a row failed (the last: "
                                       "CL_OUT_OF_RESOURCES); every slot is out of service for 100 ms, then serves on probation)");
}

// Launches in flight together that fail together (one event check finds them all) count once: a
// working device with many slots is not taken out by one burst.
TEST(DeviceBreaker, LaunchesThatFailTogetherCountOnce) {
  DeviceBreaker breaker;
  DeviceFaults faults;
  std::vector<uint64_t> burst;
  for (int i = 0; i < 16; ++i) burst.push_back(breaker.launch_started());
  for (uint64_t l : burst) breaker.launch_ended(l, true, "terminated", 0, faults);
  EXPECT_EQ(breaker.failures_in_a_row, 1u);
  EXPECT_TRUE(faults.lost.empty());
  // A dead device: each round of launches after the last failure seen counts once.
  for (int round = 1; round < 8; ++round) {
    burst.clear();
    for (int i = 0; i < 4; ++i) burst.push_back(breaker.launch_started());
    for (uint64_t l : burst) breaker.launch_ended(l, true, "terminated", 0, faults);
  }
  EXPECT_EQ(breaker.failures_in_a_row, 8u);
  EXPECT_FALSE(faults.lost.empty());
}

TEST(DeviceBreaker, OnProbationOneFailureTakesItOutAgainForTwiceAsLong) {
  DeviceBreaker breaker;
  DeviceFaults faults;
  const auto lose = [&](int64_t now) {
    for (uint32_t i = 0; i < DeviceBreaker::kFailuresInARow; ++i) one_launch(breaker, faults, true, now, "lost");
  };
  lose(0);
  const uint64_t before_probation = breaker.launch_started();
  breaker.poll(SlotJob::kFirstRebuildWaitNs, faults);
  ASSERT_TRUE(faults.lost.empty());
  breaker.launch_ended(before_probation, true, "launched before", 400'000'000, faults);
  EXPECT_TRUE(faults.lost.empty()) << "only launches since the probation began judge it";
  one_launch(breaker, faults, true, 500'000'000, "still lost");
  EXPECT_EQ(faults.lost,
            "a launch on probation failed (the last: still lost); every slot is out of service for 200 ms, then serves on "
            "probation");
  EXPECT_EQ(breaker.retry_at_ns, 500'000'000 + 2 * SlotJob::kFirstRebuildWaitNs);
  for (int i = 0; i < 10; ++i) {  // the wait is bounded
    breaker.poll(breaker.retry_at_ns, faults);
    one_launch(breaker, faults, true, 0, "still lost");
  }
  EXPECT_EQ(breaker.wait_ns, SlotJob::kMaxRebuildWaitNs);
  breaker.poll(breaker.retry_at_ns, faults);
  one_launch(breaker, faults, false);  // it works again: the probation ends
  one_launch(breaker, faults, true, 0, "a single fault");
  EXPECT_TRUE(faults.lost.empty()) << "one failure after the probation is a slot's own affair";
  lose(0);
  EXPECT_EQ(breaker.wait_ns, SlotJob::kFirstRebuildWaitNs) << "a new loss waits as the first did";
  EXPECT_EQ(faults.losses, 13u);
}

}  // namespace
}  // namespace tandem::devices
