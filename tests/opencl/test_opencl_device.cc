// The OpenCL device (PoCL) behind the Device interface and end to end: submit/poll with the wake word,
// every catalog kernel through the embedded runtime and through tandemd (several client processes at
// once, results checked), with both access methods; and faults: a job past its time limit, a kernel
// that does not build; small accumulate jobs batched into one launch; chained jobs on device-local
// memory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "abi/atomics.hpp"
#include "base/clock.hpp"
#include "config/config.hpp"
#include "daemon_harness.hpp"
#include "device_end_to_end.hpp"
#include "devices/device_factory.hpp"
#include "devices/opencl/opencl_device.hpp"
#include "client/embedded.hpp"
#include "kernel_cases.hpp"
#include "mp/mp_util.hpp"
#include "random_calls.hpp"
#include "rt/completion.hpp"
#include "rtl/rtl_cases.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

using client::AccessChoice;
using devices::DeviceCompletion;
using devices::DeviceJob;
using devices::opencl::OpenclDevice;
using testing::KernelCase;
using testing::catalog_cases;
using testing::host_window_untouched;
using testing::run_call;
using testing::run_cases_through;
using testing::run_clients;
using testing::run_one;
using testing::sobel_chain_on_device;
using testing::submit_job;
using testing::wait_for;

config::OpenclSettings settings(uint32_t slots, double timeout_s = 10) {
  config::OpenclSettings s;
  s.slots = slots;
  s.job_timeout_s = timeout_s;
  return s;
}

TEST(OpenclDevice, DescribesItselfWithMeasuredModels) {
  OpenclDevice d(settings(2));
  const devices::DeviceInfo& info = d.info();
  EXPECT_EQ(info.kind, "opencl");
  EXPECT_NE(info.description.find("Portable Computing Language"), std::string::npos) << info.description;
  EXPECT_TRUE(info.loadable[TANDEM_FN_ACCUMULATE] && info.loadable[TANDEM_FN_DCT_QUANT] && info.loadable[TANDEM_FN_WORK + 20]);
  EXPECT_FALSE(info.loadable[TANDEM_FN_PRIORITY_QUEUE]);
  EXPECT_GT(info.models[TANDEM_FN_ACCUMULATE].throughput, 0);
  EXPECT_GT(info.models[TANDEM_FN_NOP].latency_s, 0);
  EXPECT_GT(info.models[TANDEM_FN_SOBEL].reconfig_s, 0);
  std::printf("%s\n  accumulate: X_a %.3g B/s, D_a %.1f us\n", info.description.c_str(),
              info.models[TANDEM_FN_ACCUMULATE].throughput, info.models[TANDEM_FN_ACCUMULATE].latency_s * 1e6);
}

// With access = "job" each job's method picks the API, so each function is measured in place and with
// copies, and a client chooses between the two with both (model::DeviceCopyCosts). With one access for
// every job, one model serves every method.
TEST(OpenclDevice, WithPerJobAccessEveryFunctionIsMeasuredInPlaceAndWithCopies) {
  config::OpenclSettings per_job = settings(2);
  per_job.access = "job";
  OpenclDevice d(per_job);
  const devices::DeviceInfo& info = d.info();
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    if (!info.loadable[fn->id]) {
      EXPECT_EQ(info.copy_models[fn->id].latency_s, 0) << fn->name;
      continue;
    }
    SCOPED_TRACE(std::string(fn->name));
    const model::AccelModel& in_place = info.models[fn->id];
    const model::AccelModel& copied = info.copy_models[fn->id];
    EXPECT_GT(copied.latency_s, 0);
    EXPECT_TRUE(model::DeviceCopyCosts::between(in_place, copied).measured);
    if (fn->id != TANDEM_FN_NOP) {  // the large probes take 1-2 ms more than the small ones
      EXPECT_GT(copied.throughput, 0);
    }
    if (fn->id == TANDEM_FN_ACCUMULATE || fn->id == TANDEM_FN_SOBEL || fn->id == TANDEM_FN_MATMUL || fn->id == TANDEM_FN_DCT_QUANT) {
      std::printf("  %-10s in place: X_a %.3g units/s, D_a %.1f us; copied: X_a %.3g units/s, D_a %.1f us\n",
                  std::string(fn->name).c_str(), in_place.throughput, in_place.latency_s * 1e6, copied.throughput,
                  copied.latency_s * 1e6);
    }
  }
  for (const char* one_way : {"copy", "zero_copy"}) {
    config::OpenclSettings s = settings(1);
    s.access = one_way;
    OpenclDevice single(s);
    for (uint16_t f = 0; f < TANDEM_FN_MAX; ++f) EXPECT_EQ(single.info().copy_models[f].latency_s, 0) << one_way << " " << f;
  }
}

TEST(OpenclDevice, SubmitReturnsAtOnceAndTheWakeWordAnnouncesCompletions) {
  OpenclDevice d(settings(3));
  auto cases = catalog_cases();
  for (uint32_t slot = 0; slot < 3; ++slot) d.configure(slot, TANDEM_FN_ACCUMULATE);
  const uint32_t word_before = abi::load_acquire(*d.wake_word());
  auto big = KernelCase::accumulate(4'000'000, 0, 11);
  submit_job(d, 1, 42, big->device_call());
  auto done = wait_for(d, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].token, 42u);
  EXPECT_EQ(done[0].slot, 1u);
  EXPECT_EQ(done[0].status, Status::ok);
  EXPECT_EQ(done[0].value, big->reference_value());
  EXPECT_GT(done[0].device_ns, 0);
  EXPECT_NE(abi::load_acquire(*d.wake_word()), word_before);
  EXPECT_TRUE(d.slot_health(1).in_service);
}

class OpenclDeviceAccess : public ::testing::TestWithParam<devices::opencl::ClAccess> {};

TEST_P(OpenclDeviceAccess, EveryKernelOnItsOwnSlotConcurrently) {
  OpenclDevice d(settings(11));
  d.set_access(GetParam());
  auto cases = catalog_cases();
  for (uint32_t i = 0; i < cases.size(); ++i) {
    d.configure(i, cases[i]->function);
    submit_job(d, i, 100 + i, cases[i]->device_call());
  }
  auto done = wait_for(d, cases.size());
  ASSERT_EQ(done.size(), cases.size());
  for (const DeviceCompletion& c : done) {
    KernelCase& kc = *cases[c.token - 100];
    EXPECT_EQ(c.status, Status::ok) << kc.name << ": " << d.slot_health(c.slot).last_error;
    EXPECT_EQ(c.value, kc.reference_value()) << kc.name;
    EXPECT_TRUE(kc.outputs_match());
  }
}

INSTANTIATE_TEST_SUITE_P(Access, OpenclDeviceAccess,
                         ::testing::Values(devices::opencl::ClAccess::copy, devices::opencl::ClAccess::zero_copy),
                         [](const auto& p) { return std::string(devices::opencl::access_name(p.param)); });

TEST(OpenclDevice, AJobPastItsTimeLimitTimesOutAndOnlyItsSlotLeavesService) {
  // 20 ms; one work-group per reduction job, so that the long job holds one of PoCL's threads and the
  // other slot's job finds a free core (jobs on a CPU device share its cores).
  config::OpenclSettings s = settings(2, 0.02);
  s.reduction_groups = 1;
  OpenclDevice d(s);
  d.configure(0, TANDEM_FN_WORK);
  d.configure(1, TANDEM_FN_ACCUMULATE);
  testing::expect_timeout_and_recovery(d, 0, 1, 400'000'000, 1);  // ~0.4 s of chains on one core
}

TEST(OpenclDevice, AKernelThatDoesNotBuildIsNotLoadableAndTheOthersWork) {
  devices::opencl::ClOptions extra;
  extra.source_overrides[static_cast<size_t>(devices::KernelId::sobel)] = "__kernel void tandem_sobel( { }";
  OpenclDevice d(settings(2), extra);
  EXPECT_FALSE(d.info().loadable[TANDEM_FN_SOBEL]);
  EXPECT_TRUE(d.info().loadable[TANDEM_FN_MATMUL]);
  // `tandem status` says so (the activity line) with the build log's first line.
  const std::string activity = d.activity();
  const size_t said = activity.find("; kernels that did not build: sobel (opencl: building sobel.cl on ");
  EXPECT_NE(said, std::string::npos) << activity;
  EXPECT_EQ(activity.find("matmul", said), std::string::npos) << activity;
  d.configure(0, TANDEM_FN_SOBEL);  // what a misbehaving engine would do: the slot says why
  EXPECT_NE(d.slot_health(0).last_error.find("sobel did not build"), std::string::npos) << d.slot_health(0).last_error;
  auto s = KernelCase::sobel(16, 16, false, false, 1);
  EXPECT_EQ(run_one(d, 0, 9, s->device_call()).status, Status::device_error);
  d.configure(1, TANDEM_FN_MATMUL);
  auto m = KernelCase::matmul(20, 20, 20, 2);
  EXPECT_EQ(run_one(d, 1, 10, m->device_call()).status, Status::ok);
  EXPECT_TRUE(m->outputs_match());
}

// A job whose buffers find no device memory (fail_allocations_over_kib: a staging buffer over 256 KiB
// fails as the driver's CL_MEM_OBJECT_ALLOCATION_FAILURE would) completes at once with NO_MEMORY, and
// says why; its slot stays in service and serves a job that fits; `tandem status` counts it.
TEST(OpenclDevice, AJobWithoutDeviceMemoryFailsAtOnceAndItsSlotServesOn) {
  config::OpenclSettings s = settings(2);
  s.fail_allocations_over_kib = 256;
  OpenclDevice d(s);
  d.configure(1, TANDEM_FN_ACCUMULATE);  // slot 1: the start-up measurements' staging is slot 0's
  auto big = KernelCase::accumulate(1 << 18, 0, 51);  // 1 MiB of int32: too large for a batch
  const DeviceCompletion failed = run_one(d, 1, 20, big->device_call());
  EXPECT_EQ(failed.status, Status::no_memory);
  EXPECT_NE(d.slot_health(1).last_error.find("CL_MEM_OBJECT_ALLOCATION_FAILURE"), std::string::npos)
      << d.slot_health(1).last_error;
  EXPECT_TRUE(d.slot_health(1).in_service);
  EXPECT_NE(d.activity().find("; 1 jobs found no device memory for their buffers"), std::string::npos) << d.activity();
  auto fits = KernelCase::accumulate(1 << 15, 0, 52);  // 128 KiB
  const DeviceCompletion ok = run_one(d, 1, 21, fits->device_call());
  EXPECT_EQ(ok.status, Status::ok);
  EXPECT_EQ(ok.value, fits->reference_value());
}

// A job whose last command the driver terminates (fail_every_launches: it waits on an event set to an
// error status once the job runs) fails, and its slot's queue is rebuilt and serves again. PoCL never
// calls the callback of a terminated command (pocl/pocl#1430): the device finds the failure by asking
// the event. With a 5 s limit, a failure not seen would end as TIMEOUT instead.
TEST(OpenclDevice, AJobWhoseCommandTheDriverTerminatesFailsAndItsSlotIsRebuilt) {
  OpenclDevice d(settings(3, 5));
  d.configure(0, TANDEM_FN_ACCUMULATE);
  d.configure(1, TANDEM_FN_NOP);
  d.configure(2, TANDEM_FN_SOBEL);
  d.context().fail_every_launches(1);
  // accumulate over 100k elements (too large for a batch): a write, the kernel, a read; nop: the
  // kernel alone; sobel: a write, the kernel, a read of the image.
  auto big = KernelCase::accumulate(100'000, 0, 41);
  auto nop = KernelCase::nop();
  auto image = KernelCase::sobel(64, 64, false, false, 42);
  for (uint32_t slot = 0; slot < 3; ++slot) {
    const KernelCase& kc = slot == 0 ? *big : slot == 1 ? *nop : *image;
    SCOPED_TRACE(kc.name);
    const DeviceCompletion failed = run_one(d, slot, 10 + slot, kc.device_call());
    EXPECT_TRUE(failed.status == Status::device_error || failed.status == Status::no_memory) << to_string(failed.status);
    const devices::SlotHealth h = d.slot_health(slot);
    EXPECT_TRUE(h.in_service);
    EXPECT_NE(h.last_error.find("terminated on the device"), std::string::npos) << h.last_error;
    EXPECT_NE(h.last_error.find("its command queue was rebuilt"), std::string::npos) << h.last_error;
  }
  d.context().fail_every_launches(0);
  EXPECT_EQ(run_one(d, 0, 20, big->device_call()).value, big->reference_value()) << "the rebuilt slot works";
  EXPECT_EQ(run_one(d, 1, 21, nop->device_call()).status, Status::ok);
  EXPECT_EQ(run_one(d, 2, 22, image->device_call()).status, Status::ok);
  EXPECT_TRUE(image->outputs_match());
}

// A device whose every launch fails (every job terminated by the driver, as after a GPU reset) leaves
// service as a whole after 8 failures in a row: a job is then refused at once without a launch (one that
// would now succeed: the fault is off), the slots and `tandem status` say why, and after 100 ms the
// slots serve again on probation and a job succeeds.
TEST(OpenclDevice, ADeviceWhoseEveryLaunchFailsLeavesServiceAndServesAgainAfterAWait) {
  OpenclDevice d(settings(2, 5));
  d.configure(0, TANDEM_FN_ACCUMULATE);
  d.configure(1, TANDEM_FN_ACCUMULATE);
  auto big = KernelCase::accumulate(100'000, 0, 43);  // too large for a batch: one launch per job
  d.context().fail_every_launches(1);
  for (uint32_t i = 0; i < devices::DeviceBreaker::kFailuresInARow; ++i) {
    EXPECT_TRUE(d.slot_in_service(i % 2)) << i;
    const Status st = run_one(d, i % 2, 100 + i, big->device_call()).status;
    EXPECT_TRUE(st == Status::device_error || st == Status::no_memory) << i << ": " << to_string(st);
  }
  EXPECT_FALSE(d.slot_in_service(0));
  EXPECT_FALSE(d.slot_in_service(1));
  const std::string why = d.slot_health(1).last_error;
  EXPECT_EQ(why.rfind("the device is lost: 8 launches in a row failed (the last: ", 0), 0u) << why;
  EXPECT_NE(why.find("terminated on the device"), std::string::npos) << why;
  EXPECT_NE(d.activity().find("; device lost: 8 launches in a row failed"), std::string::npos) << d.activity();
  EXPECT_LE(d.next_deadline(), now_ns() + 100'000'000) << "the dispatcher wakes when the wait is over";
  d.context().fail_every_launches(0);
  EXPECT_EQ(run_one(d, 0, 200, big->device_call()).status, Status::device_error) << "refused, not launched";
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  std::vector<DeviceCompletion> none;
  d.poll(now_ns(), none);
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(d.slot_in_service(0));
  EXPECT_TRUE(d.slot_in_service(1));
  const DeviceCompletion ok = run_one(d, 1, 201, big->device_call());
  EXPECT_EQ(ok.status, Status::ok) << d.slot_health(1).last_error;
  EXPECT_EQ(ok.value, big->reference_value());
  EXPECT_NE(d.activity().find("; device lost 1 time(s), serving again (the last: 8 launches in a row failed"), std::string::npos)
      << d.activity();
}

// The fault-injection settings are for tests: a device started with one says so on stderr.
TEST(OpenclDevice, FaultInjectionSettingsAreAnnouncedAtStart) {
  const auto start_output = [](const config::OpenclSettings& s) {
    ::testing::internal::CaptureStderr();
    { OpenclDevice d(s); }
    return ::testing::internal::GetCapturedStderr();
  };
  config::OpenclSettings s = settings(1);
  EXPECT_EQ(start_output(s).find("fault injection"), std::string::npos);
  s.fail_every_launches = 7;
  s.fail_allocations_over_kib = 64;
  const std::string said = start_output(s);
  EXPECT_NE(said.find("tandem: opencl: fault injection is on (fail_every_launches = 7, fail_allocations_over_kib = 64)"),
            std::string::npos)
      << said;
}

// A failed launch found by asking its event completes at once; a conforming driver may still run its
// callback later (PoCL never does). That late callback is dropped by its event: nothing completes a
// second time, the kept event is released, the callback no longer counts as pending (the device's end
// need not keep its sink for it), and the slot's next job completes once, with its own result.
TEST(OpenclDevice, ALateCallbackOfAFailedLaunchIsDroppedByItsEvent) {
  OpenclDevice d(settings(1, 5));
  d.configure(0, TANDEM_FN_ACCUMULATE);
  auto big = KernelCase::accumulate(100'000, 0, 41);  // too large for a batch
  d.context().fail_every_launches(1);
  const DeviceCompletion failed = run_one(d, 0, 10, big->device_call());
  EXPECT_TRUE(failed.status == Status::device_error || failed.status == Status::no_memory) << to_string(failed.status);
  d.context().fail_every_launches(0);
  ASSERT_EQ(d.unannounced_events(), 1u);
  EXPECT_EQ(d.callbacks_pending(), 1) << "its callback never came";
  EXPECT_FALSE(d.deliver_late_callback(7, CL_COMPLETE)) << "no such slot";
  ASSERT_TRUE(d.deliver_late_callback(0, -5));  // CL_OUT_OF_RESOURCES: as a terminated command reports
  EXPECT_EQ(d.callbacks_pending(), 0);
  std::vector<DeviceCompletion> seen;
  const int64_t until = now_ns() + 50'000'000;
  while (now_ns() < until) d.poll(now_ns(), seen);
  EXPECT_TRUE(seen.empty()) << "completed twice: token " << seen[0].token;
  EXPECT_EQ(d.unannounced_events(), 0u) << "its event released";
  EXPECT_TRUE(d.slot_health(0).in_service);
  const DeviceCompletion next = run_one(d, 0, 11, big->device_call());
  EXPECT_EQ(next.token, 11u);
  EXPECT_EQ(next.status, Status::ok);
  EXPECT_EQ(next.value, big->reference_value());
  EXPECT_FALSE(d.deliver_late_callback(0, CL_COMPLETE)) << "nothing kept any more";
}

// A batch whose commands the driver terminates fails every job in it; its first slot is rebuilt.
TEST(OpenclDevice, ABatchWhoseCommandIsTerminatedFailsEveryMember) {
  for (const char* staging : {"svm", "copies"}) {  // the kernel alone, or between a write and a read
    SCOPED_TRACE(staging);
    config::OpenclSettings s = settings(4, 5);
    s.batch_staging = staging;
    OpenclDevice d(s);
    ASSERT_TRUE(d.batching());
    std::vector<std::unique_ptr<KernelCase>> cases;
    for (uint32_t i = 0; i < 4; ++i) {
      d.configure(i, TANDEM_FN_ACCUMULATE);
      cases.push_back(KernelCase::accumulate(100 + i, 0, 50 + i));
    }
    d.context().fail_every_launches(1);
    for (uint32_t i = 0; i < 4; ++i) submit_job(d, i, 30 + i, cases[i]->device_call());
    const auto done = wait_for(d, 4);
    ASSERT_EQ(done.size(), 4u);
    ASSERT_EQ(d.batch_stats().batches, 1u);
    for (const DeviceCompletion& c : done) {
      EXPECT_TRUE(c.status == Status::device_error || c.status == Status::no_memory) << c.token << ": " << to_string(c.status);
    }
    const std::string& why = d.slot_health(0).last_error;
    EXPECT_NE(why.find("a batch of 4 jobs failed on the device"), std::string::npos) << why;
    EXPECT_NE(why.find("terminated on the device"), std::string::npos) << why;
    d.context().fail_every_launches(0);
    for (uint32_t i = 0; i < 4; ++i) submit_job(d, i, 40 + i, cases[i]->device_call());
    for (const DeviceCompletion& c : wait_for(d, 4)) {
      EXPECT_EQ(c.status, Status::ok);
      EXPECT_EQ(c.value, cases[c.token - 40]->reference_value());
    }
  }
}

// A slot whose queue cannot be rebuilt stays out of service, refuses jobs at once, and is rebuilt
// later (after 100 ms, then 200 ms: the test hook fails two rebuilds); then it serves again.
TEST(OpenclDevice, ASlotWhoseRebuildFailsIsTriedAgainUntilItServes) {
  devices::opencl::ClOptions extra;
  extra.failing_rebuilds = 2;
  OpenclDevice d(settings(2, 5), extra);
  d.configure(0, TANDEM_FN_ACCUMULATE);
  d.configure(1, TANDEM_FN_ACCUMULATE);
  auto big = KernelCase::accumulate(100'000, 0, 61);
  d.context().fail_every_launches(1);
  const DeviceCompletion failed = run_one(d, 0, 1, big->device_call());
  d.context().fail_every_launches(0);
  EXPECT_NE(failed.status, Status::ok);
  devices::SlotHealth h = d.slot_health(0);
  EXPECT_FALSE(h.in_service);
  EXPECT_NE(h.last_error.find("rebuilding the slot failed 1 time(s)"), std::string::npos) << h.last_error;
  EXPECT_FALSE(d.slot_in_service(0));
  EXPECT_LE(d.next_deadline(), now_ns() + 100'000'000) << "the next try wakes the dispatcher";
  EXPECT_EQ(run_one(d, 0, 2, big->device_call()).status, Status::device_error) << "refused while out of service";
  d.configure(0, TANDEM_FN_ACCUMULATE);  // a misbehaving engine: the slot has no queue, nothing breaks
  EXPECT_EQ(run_one(d, 1, 3, big->device_call()).value, big->reference_value()) << "the other slot works";
  std::vector<DeviceCompletion> nothing;
  const int64_t deadline = now_ns() + 30'000'000'000;
  while (!d.slot_in_service(0) && now_ns() < deadline) d.poll(now_ns(), nothing);
  EXPECT_TRUE(nothing.empty());
  h = d.slot_health(0);
  ASSERT_TRUE(h.in_service);
  EXPECT_NE(h.last_error.find("its command queue was rebuilt after 2 failed tries"), std::string::npos) << h.last_error;
  EXPECT_NE(d.activity().find("; faults: 1 launches failed on the device, 1 command queues rebuilt (2 rebuilds failed)"),
            std::string::npos)
      << d.activity();
  EXPECT_NE(h.last_error.find("terminated on the device"), std::string::npos) << "the original fault is kept: " << h.last_error;
  EXPECT_EQ(run_one(d, 0, 4, big->device_call()).value, big->reference_value());
}

// Small accumulate jobs handed over in one turn run as one batch (one launch), each with its own value.
TEST(OpenclDevice, SmallAccumulateJobsHandedOverTogetherRunAsOneBatch) {
  OpenclDevice d(settings(8));
  ASSERT_TRUE(d.batching());
  // Sizes from one element to the largest a batch takes (64 KiB), and one too large for a batch.
  const uint64_t counts[] = {1, 256, 255, 1000, 4097, 16384, 3, 16385};
  std::vector<std::unique_ptr<KernelCase>> cases;
  for (uint32_t i = 0; i < 8; ++i) {
    cases.push_back(KernelCase::accumulate(counts[i], i % 2, 20 + i));
    d.configure(i, TANDEM_FN_ACCUMULATE);
  }
  for (uint32_t i = 0; i < 8; ++i) {
    submit_job(d, i, 200 + i, cases[i]->device_call());
  }
  auto done = wait_for(d, cases.size());
  ASSERT_EQ(done.size(), cases.size());
  for (const DeviceCompletion& c : done) {
    KernelCase& kc = *cases[c.token - 200];
    EXPECT_EQ(c.slot, c.token - 200);
    EXPECT_EQ(c.status, Status::ok) << kc.name << ": " << d.slot_health(c.slot).last_error;
    EXPECT_EQ(c.value, kc.reference_value()) << kc.name;
  }
  // The large job ran on its own (at once, and it holds nothing back); the seven small ones, held until
  // the device's next poll, ran as one batch.
  EXPECT_EQ(d.batch_stats().batches, 1u);
  EXPECT_EQ(d.batch_stats().jobs, 7u);
  // batch_staging "auto": SVM on a host-unified device with fine-grain buffer SVM (PoCL: both).
  const bool svm = (d.context().device().svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0 && d.context().device().host_unified_memory;
  EXPECT_EQ(d.activity().rfind(std::string("batching: 7 small jobs ran in 1 batches (7.0 per batch), staged ") +
                                    (svm ? "in SVM" : "by copies") + "; host buffers: ", 0),
            0u) << d.activity();  // `tandem status`
  // A lone small job on an idle device runs on its own.
  auto lone = KernelCase::accumulate(77, 0, 30);
  const DeviceCompletion c = run_one(d, 3, 300, lone->device_call());
  EXPECT_EQ(c.value, lone->reference_value());
  EXPECT_EQ(d.batch_stats().batches, 1u);
}

// [device.opencl] batch_staging chooses where a device's batches stage, and each choice sums right.
TEST(OpenclDevice, BatchStagingFollowsTheSetting) {
  for (const char* staging : {"svm", "copies"}) {
    SCOPED_TRACE(staging);
    config::OpenclSettings s = settings(4);
    s.batch_staging = staging;
    OpenclDevice d(s);
    ASSERT_TRUE(d.batching());
    std::vector<std::unique_ptr<KernelCase>> cases;
    for (uint32_t i = 0; i < 4; ++i) {
      cases.push_back(KernelCase::accumulate(100 + 300 * i, i % 2, 40 + i));
      d.configure(i, TANDEM_FN_ACCUMULATE);
      submit_job(d, i, 500 + i, cases[i]->device_call());
    }
    auto done = wait_for(d, cases.size());
    ASSERT_EQ(done.size(), cases.size());
    for (const DeviceCompletion& c : done) EXPECT_EQ(c.value, cases[c.token - 500]->reference_value());
    EXPECT_EQ(d.batch_stats().jobs, 4u);
    const bool svm = std::string(staging) == "svm" && (d.context().device().svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;
    EXPECT_NE(d.activity().find(svm ? "staged in SVM" : "staged by copies"), std::string::npos) << d.activity();
  }
}

// The batch object on both of its paths: SVM staging (the kernel its one command) where the device
// offers fine-grain buffer SVM, as PoCL does, and the copy path's write / launch / read. The first round
// grows the staging buffer from the table's size several times (its contents kept), and a second round
// after clear() reuses it.
TEST(OpenclBatch, SumsAreRightOnTheSvmAndTheCopyPaths) {
  devices::opencl::ClContext context{devices::opencl::ClOptions{}};
  devices::opencl::ClSlot slot{context, 0};
  const bool has_svm = (context.device().svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;
  for (const bool allow_svm : {true, false}) {
    SCOPED_TRACE(allow_svm ? "svm allowed" : "copy path");
    devices::opencl::ClAccumulateBatch batch(context, 6, allow_svm);
    EXPECT_EQ(batch.uses_svm(), allow_svm && has_svm);
    for (int round = 0; round < 2; ++round) {
      const uint64_t counts[] = {1, 2000, 7, 16384, 255, 9000};
      std::vector<std::unique_ptr<KernelCase>> cases;
      batch.clear();
      for (uint32_t i = 0; i < 6; ++i) {
        cases.push_back(KernelCase::accumulate(counts[(i + round) % 6], i % 2, 60 + i + 10 * round));
        devices::KernelJob plan;
        ASSERT_EQ(devices::plan_kernel_job(cases.back()->device_call(), plan), Status::ok);
        ASSERT_TRUE(batch.add(cases.back()->device_call(), plan)) << i;
      }
      devices::KernelJob plan;
      ASSERT_EQ(devices::plan_kernel_job(cases[0]->device_call(), plan), Status::ok);
      EXPECT_FALSE(batch.add(cases[0]->device_call(), plan));  // full: max_jobs
      cl_event done = nullptr;
      ASSERT_EQ(batch.enqueue(slot.queue(), &done), Status::ok) << batch.last_error();
      devices::opencl::EventPtr owner(done);
      ASSERT_EQ(clWaitForEvents(1, &done), CL_SUCCESS);
      for (uint32_t i = 0; i < 6; ++i) EXPECT_EQ(batch.value(i), cases[i]->reference_value()) << cases[i]->name;
    }
  }
}

// batch_max_jobs caps a batch: a full one goes at once, even behind another launch.
TEST(OpenclDevice, ABatchHoldsAtMostBatchMaxJobs) {
  config::OpenclSettings s = settings(7);
  s.batch_max_jobs = 3;
  OpenclDevice d(s);
  std::vector<std::unique_ptr<KernelCase>> cases;
  for (uint32_t i = 0; i < 7; ++i) {
    cases.push_back(KernelCase::accumulate(100 + 37 * i, 0, 40 + i));
    d.configure(i, TANDEM_FN_ACCUMULATE);
    submit_job(d, i, i, cases[i]->device_call());
  }
  auto done = wait_for(d, cases.size());
  ASSERT_EQ(done.size(), cases.size());
  for (const DeviceCompletion& c : done) EXPECT_EQ(c.value, cases[c.token]->reference_value()) << c.token;
  EXPECT_EQ(d.batch_stats().batches, 2u);  // 3 + 3, then the seventh alone
  EXPECT_EQ(d.batch_stats().jobs, 6u);
}

// An accumulate program without the batch kernel (here: a source override) runs every job on its own.
TEST(OpenclDevice, WithoutTheBatchKernelEveryJobRunsOnItsOwn) {
  devices::opencl::ClOptions extra;
  const std::string_view text = devices::opencl::kernel_source(devices::KernelId::accumulate).text;
  extra.source_overrides[static_cast<size_t>(devices::KernelId::accumulate)] =
      std::string(text.substr(0, text.find("// Many small accumulate jobs in one launch")));
  ASSERT_EQ(extra.source_overrides[1].find("tandem_accumulate_batch("), std::string::npos);
  OpenclDevice d(settings(4), extra);
  EXPECT_FALSE(d.batching());
  std::vector<std::unique_ptr<KernelCase>> cases;
  for (uint32_t i = 0; i < 4; ++i) {
    cases.push_back(KernelCase::accumulate(500 + i, 1, 60 + i));
    d.configure(i, TANDEM_FN_ACCUMULATE);
    submit_job(d, i, i, cases[i]->device_call());
  }
  auto done = wait_for(d, cases.size());
  ASSERT_EQ(done.size(), cases.size());
  for (const DeviceCompletion& c : done) EXPECT_EQ(c.value, cases[c.token]->reference_value()) << c.token;
  EXPECT_EQ(d.batch_stats().batches, 0u);
  EXPECT_EQ(d.activity().rfind("batching off; host buffers: ", 0), 0u) << d.activity();
}

// The accumulate program with a lone kernel that spins for about a second when the job's first value
// is kHang (the batch kernel as shipped): a small launch that hangs.
constexpr int32_t kHang = 123456789;
devices::opencl::ClOptions hanging_accumulate() {
  const std::string_view text = devices::opencl::kernel_source(devices::KernelId::accumulate).text;
  const size_t helper = text.find("// The sum of every work-item"), lone = text.find("__kernel", helper);
  const std::string group_sum(text.substr(helper, lone - helper));
  const std::string batch(text.substr(text.find("// Many small accumulate jobs in one launch")));
  devices::opencl::ClOptions o;
  o.source_overrides[static_cast<size_t>(devices::KernelId::accumulate)] =
      group_sum + "__kernel __attribute__((reqd_work_group_size(TANDEM_WG, 1, 1)))\n"
      "void tandem_accumulate(__global const int* data, ulong count, ulong chunk, __global long* partials) {\n"
      "  ulong x = (ulong)(long)data[0];\n"
      "  if (data[0] == " + std::to_string(kHang) + " && get_local_id(0) == 0) {\n"
      "    for (ulong i = 0; i < 400000000UL; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;\n"
      "  }\n"
      "  if (get_local_id(0) == 0) partials[get_group_id(0)] = (long)x;\n"
      "}\n" + batch;
  return o;
}

// Starts a lone small job that hangs on slot 0 (launched at the first poll: nothing else is on the device).
std::unique_ptr<KernelCase> start_hanging_job(OpenclDevice& d, std::vector<DeviceCompletion>& out) {
  auto hang = KernelCase::accumulate(16, 0, 70);
  funcs::Call call = hang->device_call();
  static_cast<int32_t*>(call.buffers[0])[0] = kHang;
  submit_job(d, 0, 900, call);
  d.poll(now_ns(), out);
  return hang;
}

// A small launch that hangs holds the jobs behind it back at most kMaxHoldNs, not until its time limit.
TEST(OpenclDevice, AHungSmallLaunchHoldsTheNextBatchBackOnlyBriefly) {
  config::OpenclSettings s = settings(3, 0.5);  // 500 ms; the hung job takes 1-2 s
  s.reduction_groups = 1;
  OpenclDevice d(s, hanging_accumulate());
  ASSERT_TRUE(d.batching());
  for (uint32_t i = 0; i < 3; ++i) d.configure(i, TANDEM_FN_ACCUMULATE);
  std::vector<DeviceCompletion> early;
  auto hang = start_hanging_job(d, early);
  EXPECT_TRUE(early.empty());
  auto a = KernelCase::accumulate(300, 0, 71), b = KernelCase::accumulate(500, 1, 72);
  for (uint32_t i = 1; i < 3; ++i) {
    submit_job(d, i, i, (i == 1 ? a : b)->device_call());
  }
  // Both complete within their 500 ms (held for 1 ms at most, then one batch beside the hung job);
  // the hung job times out.
  auto done = wait_for(d, 3);
  ASSERT_EQ(done.size(), 3u);
  for (const DeviceCompletion& c : done) {
    if (c.token == 900) {
      EXPECT_EQ(c.status, Status::timeout);
      continue;
    }
    EXPECT_EQ(c.status, Status::ok) << c.token << ": " << d.slot_health(c.slot).last_error;
    EXPECT_EQ(c.value, (c.token == 1 ? a : b)->reference_value());
  }
  EXPECT_EQ(d.batch_stats().batches, 1u);
  // The hung job's slot serves again once the device has finished it.
  std::vector<DeviceCompletion> late;
  const int64_t deadline = now_ns() + 30'000'000'000;
  while (!d.slot_health(0).in_service && now_ns() < deadline) d.poll(now_ns(), late);
  EXPECT_TRUE(late.empty());
  EXPECT_TRUE(d.slot_health(0).in_service);
}

// A held job whose time limit passes before it is launched reports TIMEOUT once, is never launched
// (its caller's buffers may be gone), and its slot serves again at once.
TEST(OpenclDevice, AJobThatTimesOutWhileHeldIsNeverLaunched) {
  config::OpenclSettings s = settings(3, 0.0005);  // 0.5 ms: shorter than the 1 ms a job may be held
  s.reduction_groups = 1;
  OpenclDevice d(s, hanging_accumulate());
  for (uint32_t i = 0; i < 3; ++i) d.configure(i, TANDEM_FN_ACCUMULATE);
  std::vector<DeviceCompletion> out;
  auto hang = start_hanging_job(d, out);
  auto a = KernelCase::accumulate(300, 0, 73), b = KernelCase::accumulate(500, 1, 74);
  for (uint32_t i = 1; i < 3; ++i) {
    submit_job(d, i, i, (i == 1 ? a : b)->device_call());
  }
  // Until the hung job's slot is back (about a second): every job times out exactly once.
  const int64_t deadline = now_ns() + 30'000'000'000;
  do {
    d.poll(now_ns(), out);
  } while ((out.size() < 3 || !d.slot_health(0).in_service) && now_ns() < deadline);
  ASSERT_EQ(out.size(), 3u);
  for (const DeviceCompletion& c : out) EXPECT_EQ(c.status, Status::timeout) << c.token;
  EXPECT_EQ(d.batch_stats().batches, 0u) << "the held jobs were never launched";
  for (uint32_t i = 1; i < 3; ++i) {
    EXPECT_TRUE(d.slot_health(i).in_service);
    EXPECT_NE(d.slot_health(i).last_error.find("never launched"), std::string::npos) << d.slot_health(i).last_error;
  }
  EXPECT_TRUE(d.slot_health(0).in_service) << "back once the device finished the hung job";
}

TEST(OpenclDevice, TheFactoryRefusesAResidentFunctionWithoutKernel) {
  config::Config c = config::parse_config(
      "[device]\nkinds = [\"opencl\"]\n[device.opencl]\nslots = 2\nresident = [\"priority_queue\"]\n", "test");
  try {
    (void)devices::make_devices(c);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("priority_queue"), std::string::npos) << e.what();
  }
  EXPECT_THROW(config::parse_config("[device.opencl]\naccess = \"svm\"\n", "test"), Error);
  EXPECT_THROW(config::parse_config("[device.opencl]\nplatfrom = \"0\"\n", "test"), Error);
}

// No bound on a job's modelled time: the device's timing is measured at start-up, and on a loaded machine a
// slow measurement made the bound refuse the larger cases (job_too_large) that these tests must run.
constexpr const char* kAllResident =
    "[fabric]\nmax_job_ms = 0\n[device]\nkinds = [\"opencl\"]\n[device.opencl]\nslots = 6\n"
    "resident = [\"nop\", \"accumulate\", \"work\", \"sobel\", \"matmul\", \"dct_quant\"]\n";

// `clients` processes of tandemd `d`, each making `calls` random calls (seeds from `seed`) on its heap
// and local buffers; every call must give the reference (a failure prints the client's report).
void random_calls_of_clients(testing::DaemonProcess& d, int clients, uint64_t seed, int calls) {
  run_clients(d.socket(), clients, [seed, calls](int i, client::Runtime& rt) {
    std::string report;
    const int failures = testing::run_random_calls(rt, seed + static_cast<uint64_t>(i), calls, {},
                                                   {.zero_copy_reaches = false, .device_local = true}, report, nullptr);
    if (failures > 0) std::fprintf(stderr, "client %d:\n%s", i, report.c_str());
    return failures;
  });
}

TEST(OpenclRuntime, EveryKernelThroughTheEmbeddedRuntime) {
  for (const char* access : {"copy", "zero_copy", "job"}) {
    auto rt = testing::open_embedded(std::string(kAllResident) + "access = \"" + access + "\"\n", client::Mode::hw);
    ASSERT_TRUE(rt);
    std::string report;
    EXPECT_EQ(run_cases_through(*rt, &report), 0) << access << "\n" << report;
  }
}

// The high-level calls with every method a client may force (docs/access.md), on both of the device's
// own ways to reach host memory: each call reaches the device with the client's method and gives the
// reference. zero_copy needs session memory under tandemd; the embedded runtime reaches the heap too.
TEST(OpenclRuntime, EveryFunctionWithEveryClientAccessMethod) {
  for (const char* access : {"copy", "zero_copy", "job"}) {
    SCOPED_TRACE(std::string("device access ") + access);
    testing::expect_every_client_method_embedded(std::string(kAllResident) + "access = \"" + access + "\"\n");
  }
}

// access = "job": each call's method picks the API. A forced copy (or scatter-gather) call's buffers are
// copied (clEnqueueWriteBuffer/ReadBuffer), a zero-copy call's used in place (CL_MEM_USE_HOST_PTR);
// with "copy" every buffer is copied whatever the method. The device's activity line counts them.
TEST(OpenclRuntime, WithPerJobAccessEachCallsMethodPicksTheApi) {
  const auto counts = [](client::Runtime& rt) {
    const rt::Snapshot snap = dynamic_cast<client::EmbeddedRuntime&>(rt).dispatcher().snapshot();
    std::string activity;
    for (const auto& d : snap.devices) activity += d.activity;
    uint64_t in_place = 0, copied = 0;
    const size_t at = activity.find("host buffers: ");
    EXPECT_NE(at, std::string::npos) << activity;
    if (at != std::string::npos) {
      EXPECT_EQ(std::sscanf(activity.c_str() + at, "host buffers: %lu in place (CL_MEM_USE_HOST_PTR), %lu copied",
                            &in_place, &copied), 2) << activity;
    }
    return std::pair{in_place, copied};
  };
  for (const char* access : {"job", "copy"}) {
    SCOPED_TRACE(access);
    auto rt = testing::open_embedded(std::string(kAllResident) + "access = \"" + access + "\"\nbatch_max_jobs = 1\n",
                                     client::Mode::hw);
    ASSERT_TRUE(rt);
    auto c = KernelCase::accumulate(200'000, 0, 41);  // 800 KB: several jobs, none batched
    const funcs::FunctionInfo& fn = *funcs::find_function(TANDEM_FN_ACCUMULATE);
    const auto run_with = [&](AccessChoice choice) {
      rt->set_access_choice(choice);
      funcs::Call call = c->device_call();
      int64_t value = 0;
      client::CallReport report;
      ASSERT_EQ(rt->run(fn, call, value, &report), Status::ok);
      EXPECT_EQ(value, c->reference_value());
      EXPECT_GT(report.counters.jobs_completed, 0u);
    };
    const auto job_samples = [&] { return rt->learned().samples(TANDEM_FN_ACCUMULATE).jobs; };
    const auto before = counts(*rt);
    const uint64_t learnt_before = job_samples();
    run_with(AccessChoice::zero_copy);
    const auto after_zero_copy = counts(*rt);
    const uint64_t learnt_in_place = job_samples();
    run_with(AccessChoice::copy);
    const auto after_copy = counts(*rt);
    const uint64_t learnt_copied = job_samples();
    EXPECT_GT(learnt_in_place, learnt_before) << "jobs in place teach the estimates";
    EXPECT_GT(learnt_copied, learnt_in_place) << "copied jobs teach them too (with \"job\": as in place)";
    // The embedded runtime's memory is all session memory: with "job" the device copies it itself and
    // nothing is staged on this thread; with "copy" (one model for every method) the library stages.
    const size_t staged_chunks = rt->thread_staging()->chunks();
    if (std::string(access) == "job") {
      EXPECT_EQ(staged_chunks, 0u);
    } else {
      EXPECT_GT(staged_chunks, 0u);
    }
    if (std::string(access) == "job") {
      EXPECT_GT(after_zero_copy.first, before.first) << "zero-copy jobs in place";
      EXPECT_EQ(after_zero_copy.second, before.second);
      EXPECT_EQ(after_copy.first, after_zero_copy.first);
      EXPECT_GT(after_copy.second, after_zero_copy.second) << "copy jobs copied";
    } else {
      EXPECT_EQ(after_copy.first, before.first) << "nothing in place with access = copy";
      EXPECT_GT(after_zero_copy.second, before.second);
      EXPECT_GT(after_copy.second, after_zero_copy.second);
    }
  }
}

// Random calls in every mode with every method (tests/random_calls.hpp), byte for byte against the
// references, on both device access settings: embedded, and through tandemd on heap and session memory.
TEST(OpenclRuntime, RandomCallsInEveryModeWithEveryMethodGiveTheReference) {
  for (const char* access : {"copy", "zero_copy", "job"}) {
    auto rt = testing::open_embedded(std::string(kAllResident) + "access = \"" + access + "\"\n");
    ASSERT_TRUE(rt);
    std::string report;
    int accelerated = 0;
    EXPECT_EQ(testing::run_random_calls(*rt, 1521, 150, {}, {.device_local = true}, report, &accelerated), 0) << access << ":\n" << report;
    EXPECT_GT(accelerated, 40) << access;
  }
}

// Jobs that the driver terminates now and then (fail_every_launches): each failed job's units run on
// the CPU instead, so every call still gives the reference, whatever its mode, method and memory
// (device-local data is bounced), and the device keeps serving: each failed slot is rebuilt.
TEST(OpenclRuntime, RandomCallsGiveTheReferenceWhileKernelsFail) {
  auto rt = testing::open_embedded(std::string(kAllResident) + "fail_every_launches = 7\n");
  ASSERT_TRUE(rt);
  std::string report;
  int accelerated = 0;
  EXPECT_EQ(testing::run_random_calls(*rt, 1531, 150, {}, {.device_local = true}, report, &accelerated), 0) << report;
  EXPECT_GT(accelerated, 30);
  EXPECT_GT(rt->stats().jobs_failed.load(), 5u) << "the faults struck jobs of these calls";
}

// Calls whose jobs find no device memory (every staging buffer over 64 KiB) still give the reference:
// the failed jobs' units run on the CPU, and the smaller jobs run on the device.
TEST(OpenclRuntime, CallsGiveTheReferenceWhenTheirJobsFindNoDeviceMemory) {
  auto rt = testing::open_embedded(std::string(kAllResident) + "fail_allocations_over_kib = 64\n", client::Mode::hw);
  ASSERT_TRUE(rt);
  const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_ACCUMULATE);
  for (uint64_t count : {uint64_t{1} << 20, uint64_t{1} << 12}) {  // 4 MiB (its jobs fail), 16 KiB (fit)
    auto kc = KernelCase::accumulate(count, 0, 60 + count);
    for (int i = 0; i < 3; ++i) {
      funcs::Call call = kc->device_call();
      int64_t value = 0;
      ASSERT_EQ(rt->run(*fn, call, value), Status::ok) << count;
      EXPECT_EQ(value, kc->reference_value()) << count;
    }
  }
  EXPECT_GT(rt->stats().jobs_failed.load(), 0u) << "the 4 MiB calls' jobs found no memory";
  EXPECT_GT(rt->stats().hw_jobs.load(), rt->stats().jobs_failed.load()) << "the small calls' jobs ran on the device";
}

TEST(OpenclDaemon, RandomCallsInEveryModeWithEveryMethodGiveTheReference) {
  for (const char* access : {"copy", "zero_copy", "job"}) {
    testing::DaemonProcess d(std::string(kAllResident) + "access = \"" + access + "\"\n");
    ASSERT_TRUE(d.alive());
    auto rt = d.open(client::Mode::auto_mode);
    ASSERT_TRUE(rt);
    std::string report;
    int accelerated = 0;
    EXPECT_EQ(testing::run_random_calls(*rt, 1522, 100, {}, {.zero_copy_reaches = false, .device_local = true}, report, &accelerated), 0) << access << ", heap:\n" << report;
    testing::RandomCall::Memory session{[&](size_t n) { return rt->alloc(n); }, [&](void* p) { rt->free(p); }};
    EXPECT_EQ(testing::run_random_calls(*rt, 1523, 100, session, {.device_local = true}, report, &accelerated), 0)
        << access << ", session memory:\n" << report;
    EXPECT_GT(accelerated, 50) << access;
    EXPECT_TRUE(d.alive());
  }
}

// A job past its time limit (100 ms) takes its slot out of service until the device has finished it
// (OpenCL cannot cancel a kernel; ~1 s here). Meanwhile the engine starts every job on the other slot of
// the function, so none fails; once the kernel ends, the slot serves again.
TEST(OpenclRuntime, JobsAvoidASlotOutOfServiceAndItServesAgainOnceFree) {
  auto rt = testing::open_embedded(
      "[device]\nkinds = [\"opencl\"]\n[device.opencl]\nslots = 2\nresident = [\"work\", \"work\"]\n"
      "job_timeout_ms = 100\nreduction_groups = 1\n[fabric]\nmax_job_ms = 0\n",
      client::Mode::hw);
  ASSERT_TRUE(rt);
  auto* rec = static_cast<tandem_completion_t*>(rt->alloc(sizeof(tandem_completion_t)));
  const auto run_work = [&](uint64_t units) {
    rt::reset_record(rec);
    const uint64_t args[1] = {units};
    Status s = rt->default_queue().dispatch(TANDEM_FN_WORK, args, 1, units, rec);
    if (s == Status::ok) s = rt->wait(rec, {});
    return s;
  };
  ASSERT_EQ(run_work(1'000'000'000), Status::timeout);  // ~1 s of chains on one core
  const uint32_t slow_slot = rec->slot;
  int on_slow = 0, failed = 0;
  const int64_t deadline = now_ns() + 30'000'000'000;
  int jobs = 0;
  // Small jobs until one runs on the slow slot again: it must be back in service by then. (Only
  // DEVICE_ERROR, a job sent to the slot out of service, counts: on a loaded machine a small job beside
  // the long kernel on PoCL's threads may itself pass the limit.)
  for (; now_ns() < deadline; ++jobs) {
    const Status s = run_work(1000);
    if (s == Status::device_error || (s == Status::ok && static_cast<int64_t>(rec->value) != 1000)) ++failed;
    if (rec->slot == slow_slot) {
      ++on_slow;
      break;
    }
  }
  EXPECT_EQ(failed, 0) << "of " << jobs << " jobs while slot " << slow_slot << " was out of service";
  EXPECT_EQ(on_slow, 1) << "the slot serves again once its kernel has ended";
  EXPECT_GT(jobs, 10) << "the kernel held the slot for a while";
  rt->free(rec);
}

// Data copied into the device's memory once stays there between chained jobs, and gives the chained
// reference. Buffers at offsets the device cannot make sub-buffers at (PoCL: 128-byte base alignment)
// are staged by copies on the device and give the reference too; so do copies within local memory, and
// dct_quant with its quantization table in device memory (valid and not).
TEST(OpenclRuntime, ChainedJobsOnDeviceLocalDataStayOnTheDevice) {
  auto rt = testing::open_embedded(std::string(kAllResident) + "local_memory_mib = 16\n", client::Mode::hw);
  ASSERT_TRUE(rt);
  auto& dispatcher = dynamic_cast<client::EmbeddedRuntime&>(*rt).dispatcher();
  EXPECT_EQ(sobel_chain_on_device(*rt, 11), "");
  const devices::CopyStats chain = dispatcher.copy_stats();
  EXPECT_EQ(chain.bytes_to_device, 301u * 97u) << "the image moved in once, whatever the chain";
  EXPECT_EQ(chain.bytes_from_device, 301u * 97u) << "only the result came back";

  // accumulate over device-local words at an aligned and an unaligned offset, and after a copy on the device.
  constexpr uint32_t kWords = 20'011;
  testing::Case words = testing::accumulate_case(12, kWords);
  const int64_t want = testing::run_software(words);
  auto sums = rt->alloc_local(kWords * 4 + 4), moved = rt->alloc_local(kWords * 4);
  ASSERT_TRUE(sums && moved);
  ASSERT_EQ(rt->copy_local(sums.value() + 4, testing::address(words.buffers[0].data()), kWords * 4), Status::ok);
  ASSERT_EQ(rt->copy_local(moved.value(), sums.value() + 4, kWords * 4), Status::ok);
  for (uint64_t address : {sums.value() + 4, moved.value()}) {  // staged by a copy on the device; a sub-buffer
    int64_t value = -1;
    ASSERT_EQ(run_call(*rt, TANDEM_FN_ACCUMULATE, {address, kWords}, value), Status::ok);
    EXPECT_EQ(value, want) << "offset " << TANDEM_DEVICE_OFFSET_OF(address);
  }
  // Overlapping, within device memory: as memmove (the words move down by one).
  ASSERT_EQ(rt->copy_local(sums.value(), sums.value() + 4, kWords * 4), Status::ok);
  int64_t value = -1;
  ASSERT_EQ(run_call(*rt, TANDEM_FN_ACCUMULATE, {sums.value(), kWords}, value), Status::ok);
  EXPECT_EQ(value, want) << "after an overlapping copy";
  EXPECT_EQ(dispatcher.copy_stats().bytes_on_device, 2u * kWords * 4u);

  // DCT then quantiser, the table in device memory too (the device validates a copy it reads back).
  constexpr uint32_t kBlocks = 300;
  testing::Case dct = testing::dct_case(3, kBlocks, TANDEM_DCT_MODE_DCT_QUANTIZE),
                ref = testing::dct_case(3, kBlocks, TANDEM_DCT_MODE_DCT_QUANTIZE),
                bad = testing::dct_case(3, kBlocks, TANDEM_DCT_MODE_DCT_QUANTIZE, 0);  // a zero entry: refused
  testing::run_software(ref);
  auto in = rt->alloc_local(kBlocks * 64), coeffs = rt->alloc_local(kBlocks * 128), out = rt->alloc_local(kBlocks * 128),
       table = rt->alloc_local(128), bad_table = rt->alloc_local(128);
  ASSERT_TRUE(in && coeffs && out && table && bad_table);
  ASSERT_EQ(rt->copy_local(in.value(), testing::address(dct.buffers[0].data()), kBlocks * 64), Status::ok);
  ASSERT_EQ(rt->copy_local(table.value(), testing::address(dct.buffers[2].data()), 128), Status::ok);
  ASSERT_EQ(rt->copy_local(bad_table.value(), testing::address(bad.buffers[2].data()), 128), Status::ok);
  for (auto [mode, src, dst] : {std::tuple{TANDEM_DCT_MODE_DCT, in.value(), coeffs.value()},
                                std::tuple{TANDEM_DCT_MODE_QUANTIZE, coeffs.value(), out.value()}}) {
    ASSERT_EQ(run_call(*rt, TANDEM_FN_DCT_QUANT, {src, dst, TANDEM_DCT_ARG(kBlocks, mode), table.value()}, value), Status::ok);
    EXPECT_EQ(value, 0);
  }
  std::vector<uint8_t> result(kBlocks * 128);
  ASSERT_EQ(rt->copy_local(testing::address(result.data()), out.value(), result.size()), Status::ok);
  EXPECT_TRUE(result == ref.out()) << "DCT then quantiser with a device-local table equals the reference";
  ASSERT_EQ(run_call(*rt, TANDEM_FN_DCT_QUANT,
                     {coeffs.value(), out.value(), TANDEM_DCT_ARG(kBlocks, TANDEM_DCT_MODE_QUANTIZE), bad_table.value()}, value),
            Status::ok);
  EXPECT_EQ(value, 1) << "a device-local table with a zero entry is refused, as the reference refuses it";
  std::vector<uint8_t> after(kBlocks * 128);
  ASSERT_EQ(rt->copy_local(testing::address(after.data()), out.value(), after.size()), Status::ok);
  EXPECT_TRUE(after == result) << "the refused call wrote nothing";

  EXPECT_TRUE(host_window_untouched(*rt)) << "device-local data lives on the device, not in the host window";
  for (auto& b : {sums, moved, in, coeffs, out, table, bad_table}) EXPECT_EQ(rt->free_local(b.value()), Status::ok);
}

// A setting beyond the device's largest allocation is capped to it (one allocation), and a buffer
// larger than that is refused with device_memory_full; no local memory at all: access_unsupported.
TEST(OpenclRuntime, DeviceLocalMemoryIsOneAllocationAtMostAndNoneIsRefused) {
  auto none = testing::open_embedded(std::string(kAllResident) + "local_memory_mib = 0\n", client::Mode::hw);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->alloc_local(64).status(), Status::access_unsupported);
  auto huge = testing::open_embedded(std::string(kAllResident) + "local_memory_mib = 1048576\n", client::Mode::hw);
  ASSERT_TRUE(huge) << "a setting of 1 TiB is capped at the device's largest allocation";
  const devices::LocalWindow w = dynamic_cast<client::EmbeddedRuntime&>(*huge).dispatcher().local_window();
  EXPECT_GT(w.bytes, uint64_t{64} << 20);
  EXPECT_LT(w.bytes, uint64_t{1} << 40);
  EXPECT_EQ(huge->alloc_local(w.bytes + 1).status(), Status::device_memory_full);
  testing::Case words = testing::accumulate_case(13, 1000);
  const int64_t want = testing::run_software(words);
  auto buffer = huge->alloc_local(4000);
  ASSERT_TRUE(buffer);
  ASSERT_EQ(huge->copy_local(buffer.value(), testing::address(words.buffers[0].data()), 4000), Status::ok);
  int64_t value = -1;
  ASSERT_EQ(run_call(*huge, TANDEM_FN_ACCUMULATE, {buffer.value(), 1000}, value), Status::ok);
  EXPECT_EQ(value, want);
}

// On the Device interface: small accumulate jobs on device-local data handed over together never go
// into a batch (a batch gathers host memory), and each sums its own words; the copy engines' transfer
// fills the device's memory.
TEST(OpenclDevice, SmallJobsOnDeviceLocalDataAreNeverBatched) {
  OpenclDevice device(settings(4));
  std::vector<char> window(uint64_t{1} << 20);  // host addresses standing for the device's memory
  device.attach_local_memory(window.data(), window.size());
  const devices::LocalTransfer transfer = device.local_transfer();
  for (uint32_t slot = 0; slot < 4; ++slot) device.configure(slot, TANDEM_FN_ACCUMULATE);
  std::vector<int64_t> want;
  for (uint32_t j = 0; j < 4; ++j) {
    testing::Case words = testing::accumulate_case(40 + j, 256);
    want.push_back(testing::run_software(words));
    ASSERT_EQ(transfer(j % 2, window.data() + j * 4096, words.buffers[0].data(), 1024).status, Status::ok);
  }
  for (uint32_t j = 0; j < 4; ++j) {
    DeviceJob job;
    job.token = 100 + j;
    job.start_ns = now_ns();
    job.access.local_bytes = 1024;
    job.call.function = TANDEM_FN_ACCUMULATE;
    job.call.args = {reinterpret_cast<uint64_t>(window.data() + j * 4096), 256};
    job.call.arg_count = 2;
    job.call.workload = 256;
    job.call.buffers[0] = window.data() + j * 4096;
    device.submit(j, job);
  }
  auto done = wait_for(device, 4);
  ASSERT_EQ(done.size(), 4u);
  for (const DeviceCompletion& c : done) {
    ASSERT_EQ(c.status, Status::ok);
    EXPECT_EQ(c.value, want[c.token - 100]) << "job " << c.token - 100;
  }
  EXPECT_EQ(device.batch_stats().jobs, 0u) << "device-local jobs run where their data is, never in a batch";
  for (char c : window) ASSERT_EQ(c, 0) << "the host window is never written";
}

// Through tandemd: client processes at once, each with its own device-local buffers, filled from its
// heap (the daemon gathers the pages) and chained on the device.
TEST(OpenclDaemon, ProcessesChainJobsOnTheirOwnDeviceLocalBuffers) {
  testing::DaemonProcess d(std::string(kAllResident) + "local_memory_mib = 32\n");
  ASSERT_TRUE(d.alive());
  run_clients(d.socket(), 3, [](int i, client::Runtime& rt) { return testing::sobel_chains_of_client(rt, i, 3); });
  // tandemd says where its device-local memory is and what the copy engines moved: each chain moved
  // its image in once and its result out once; every buffer was freed.
  testing::expect_local_memory_after_chains(testing::daemon_status(d), "opencl", uint64_t{32} << 20, 3 * 3);
  EXPECT_TRUE(d.alive());
}

TEST(OpenclDaemon, EveryFunctionWithEveryClientAccessMethod) {
  for (const char* access : {"copy", "zero_copy", "job"}) {
    SCOPED_TRACE(std::string("device access ") + access);
    testing::expect_every_client_method_through_tandemd(std::string(kAllResident) + "access = \"" + access + "\"\n");
  }
}

// tandemd hands its clients each function's models in place and with copies (protocol version 6), and
// a client chooses the method for session memory with both: on PoCL, where working in place is both
// quicker to start and faster per unit, every call stays in place.
TEST(OpenclDaemon, ClientsChooseBetweenInPlaceAndCopiedWithTheDevicesTwoModels) {
  for (const char* access : {"job", "copy"}) {
    SCOPED_TRACE(std::string("device access ") + access);
    testing::DaemonProcess d(std::string(kAllResident) + "access = \"" + access + "\"\n");
    ASSERT_TRUE(d.alive());
    auto rt = d.open(client::Mode::hw);
    ASSERT_TRUE(rt);
    const client::DeviceSummary* found = rt->host_device(TANDEM_FN_ACCUMULATE);
    ASSERT_NE(found, nullptr);
    ASSERT_EQ(found->kind, "opencl");
    const client::DeviceSummary& dev = *found;
    const bool job = std::string(access) == "job";
    for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
      if (!dev.loadable[fn->id]) continue;
      const model::DeviceCopyCosts c = model::DeviceCopyCosts::between(dev.models[fn->id], dev.copy_models[fn->id]);
      EXPECT_EQ(c.measured, job) << fn->name;
    }
    // `tandem status` shows the same figures per function.
    const nlohmann::json status = testing::daemon_status(d);
    bool shown = false;
    for (const auto& device : status["devices"]) {
      if (device["kind"] != "opencl") continue;
      for (const auto& m : device["models"]) {
        if (m["function"] != "accumulate") continue;
        shown = true;
        EXPECT_DOUBLE_EQ(m["xa_units_per_s"].get<double>(), dev.models[TANDEM_FN_ACCUMULATE].throughput);
        EXPECT_EQ(m.contains("copied_da_us"), job);
        if (job) {
          EXPECT_NEAR(m["copied_da_us"].get<double>(), dev.copy_models[TANDEM_FN_ACCUMULATE].latency_s * 1e6, 1e-6);
        }
      }
    }
    EXPECT_TRUE(shown) << status.dump();
    // ... and what the discovery found, `clinfo -l` style: the selected device among them.
    const auto& device = status["devices"][0];
    ASSERT_TRUE(device.contains("found")) << device.dump(2);
    ASSERT_GE(device["found"].size(), 2u) << device.dump(2);
    EXPECT_EQ(device["found"][0].get<std::string>().rfind("platform 0: ", 0), 0u) << device.dump(2);
    std::string listed;
    for (const auto& line : device["found"]) listed += line.get<std::string>() + "\n";
    const std::string name = device["description"].get<std::string>();
    const size_t colon = name.find("device 0: ");
    ASSERT_NE(colon, std::string::npos) << name;
    EXPECT_NE(listed.find(name.substr(colon, name.find(" [", colon) - colon)), std::string::npos) << listed;
    if (!job) continue;
    rt->set_access_choice(AccessChoice::automatic);
    struct MemoryScope {  // cases in this runtime's session memory, until the scope ends
      explicit MemoryScope(client::Runtime& r) {
        KernelCase::memory() = {[&r](size_t n) { return r.alloc(n); }, [&r](void* p) { r.free(p); }};
      }
      ~MemoryScope() { KernelCase::memory() = {}; }
    } scope(*rt);
    auto session = KernelCase::accumulate(1'000'000, 0, 77);  // 4 MB of session memory
    const model::AccelModel& in_place = dev.models[TANDEM_FN_ACCUMULATE];
    const model::AccelModel& copied = dev.copy_models[TANDEM_FN_ACCUMULATE];
    funcs::Call call = session->device_call();
    int64_t value = 0;
    client::CallReport report;
    ASSERT_EQ(rt->run(*funcs::find_function(TANDEM_FN_ACCUMULATE), call, value, &report), Status::ok);
    EXPECT_EQ(value, session->reference_value());
    std::printf("  accumulate in place: X_a %.3g, D_a %.1f us; copied: X_a %.3g, D_a %.1f us; chosen: %s\n",
                in_place.throughput, in_place.latency_s * 1e6, copied.throughput, copied.latency_s * 1e6,
                std::string(client::access_name(report.access_method)).c_str());
    // Where working in place is at least as good in both figures it is chosen whatever the size; where
    // copying is much better in both, the copy (the start-up measurements of the two differ from one
    // run to the next on a busy machine, and a copy must win by model::kDeviceCopyMargin).
    if (in_place.throughput >= copied.throughput && in_place.latency_s <= copied.latency_s) {
      EXPECT_EQ(report.access_method, TANDEM_ACCESS_ZERO_COPY) << "in place is better both ways";
    } else if (copied.throughput > 1.5 * in_place.throughput && copied.latency_s < in_place.latency_s) {
      EXPECT_EQ(report.access_method, TANDEM_ACCESS_COPY) << "copying is much better both ways";
    }
    session.reset();
  }
}

// Likewise through tandemd, three client processes at once; `tandem status` says what happened to the
// slots, and every one is back in service.
TEST(OpenclDaemon, ProcessesGetTheReferenceWhileKernelsFail) {
  testing::DaemonProcess d(std::string(kAllResident) + "fail_every_launches = 5\n");
  ASSERT_TRUE(d.alive());
  random_calls_of_clients(d, 3, 1540, 80);
  ASSERT_TRUE(d.alive());
  const nlohmann::json status = testing::daemon_status(d);
  int rebuilt = 0;
  for (const auto& slot : status["devices"][0]["slots"]) {
    EXPECT_TRUE(slot["in_service"].get<bool>()) << slot.dump();
    const std::string why = slot.value("last_error", "");
    if (why.find("terminated on the device") != std::string::npos && why.find("rebuilt") != std::string::npos) ++rebuilt;
  }
  EXPECT_GT(rebuilt, 0) << status["devices"][0].dump(2);
  const std::string activity = status["devices"][0].value("activity", "");
  EXPECT_NE(activity.find(" launches failed on the device, "), std::string::npos) << activity;
}

// [device.opencl] kernel_dir: its sobel.cl replaces the embedded source and does not build. tandemd
// starts all the same: sobel, configured resident, is left out (its slot starts empty), the other
// functions serve, and every client's calls, sobel's included (on the CPU), give the reference.
// `tandem status` names the kernel. An empty file, a folder or a dangling link in the place of a file,
// a .cl file that names no kernel (hidden files aside), and a kernel_dir that is not a folder, are
// refused at start.
TEST(OpenclDaemon, AResidentKernelThatDoesNotBuildIsLeftOutAndTheOthersServe) {
  char tmpl[] = "/tmp/tandem-kernels-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr) << std::strerror(errno);
  const std::string dir = tmpl;
  const std::string file = dir + "/sobel.cl";
  struct Cleanup {
    const std::string& dir;
    const std::string& file;
    ~Cleanup() {
      std::remove(file.c_str());
      std::remove((dir + "/Sobel.cl").c_str());
      std::remove((dir + "/.#sobel.cl").c_str());
      rmdir(dir.c_str());
    }
  } cleanup{dir, file};
  const auto write = [&](const char* text) {
    FILE* f = std::fopen(file.c_str(), "w");
    if (f == nullptr) return false;
    std::fputs(text, f);
    return std::fclose(f) == 0;
  };
  ASSERT_TRUE(write("__kernel void tandem_sobel( { }\n"));
  {
    testing::DaemonProcess d(std::string(kAllResident) + "kernel_dir = \"" + dir + "\"\n");
    ASSERT_TRUE(d.alive()) << "a kernel that does not build must not stop the daemon";
    random_calls_of_clients(d, 2, 1560, 60);
    ASSERT_TRUE(d.alive());
    const nlohmann::json status = testing::daemon_status(d);
    const nlohmann::json& device = status["devices"][0];
    const std::string activity = device.value("activity", "");
    EXPECT_NE(activity.find("; kernels that did not build: sobel ("), std::string::npos) << activity;
    int accumulate_jobs = 0;
    for (const auto& slot : device["slots"]) {
      EXPECT_NE(slot["function"].get<std::string>(), "sobel") << slot.dump();
      if (slot["function"].get<std::string>() == "accumulate") accumulate_jobs += slot["jobs_done"].get<int>();
    }
    EXPECT_EQ(device["slots"][3]["state"].get<std::string>(), "empty") << "sobel's resident slot: " << device["slots"][3].dump();
    EXPECT_GT(accumulate_jobs, 0) << device.dump(2);
  }
  const auto refused = [](const config::OpenclSettings& s) {
    try {
      OpenclDevice d(s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("started");
  };
  config::OpenclSettings s = settings(1);
  s.kernel_dir = dir;
  ASSERT_TRUE(write(""));
  EXPECT_EQ(refused(s), "device.opencl.kernel_dir: " + file + " is empty");
  ASSERT_EQ(std::remove(file.c_str()), 0);
  ASSERT_EQ(mkdir(file.c_str(), 0700), 0);
  EXPECT_EQ(refused(s), "device.opencl.kernel_dir: " + file + " is not a regular file");
  ASSERT_EQ(rmdir(file.c_str()), 0);
  ASSERT_EQ(symlink((dir + "/nowhere.cl").c_str(), file.c_str()), 0);
  EXPECT_EQ(refused(s), "device.opencl.kernel_dir: " + file + " is a link to nothing");
  ASSERT_EQ(std::remove(file.c_str()), 0);
  const std::string misnamed = dir + "/Sobel.cl";  // a typo: the file would replace nothing
  const std::string hidden = dir + "/.#sobel.cl";   // an editor's lock file: not refused
  ASSERT_EQ(symlink("nobody@host.1234", hidden.c_str()), 0);
  {
    std::FILE* f = std::fopen(misnamed.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  EXPECT_EQ(refused(s).rfind("device.opencl.kernel_dir: " + misnamed + " names no kernel (the files it may hold: ", 0), 0u)
      << refused(s);
  EXPECT_NE(refused(s).find("sobel.cl"), std::string::npos) << refused(s);
  ASSERT_EQ(std::remove(misnamed.c_str()), 0);
  ASSERT_EQ(std::remove(hidden.c_str()), 0);
  ASSERT_TRUE(write("__kernel void tandem_sobel() {}\n"));
  s.kernel_dir = file;
  EXPECT_EQ(refused(s), "device.opencl.kernel_dir: '" + file + "' is not a folder");
}

// Every launch fails (the driver terminates each: a dead device). Clients still get the reference for
// every call, the device leaves service as a whole, and `tandem status` says so; the daemon lives on.
TEST(OpenclDaemon, ProcessesGetTheReferenceFromADeviceWhoseEveryLaunchFails) {
  testing::DaemonProcess d(std::string(kAllResident) + "fail_every_launches = 1\n");
  ASSERT_TRUE(d.alive());
  random_calls_of_clients(d, 2, 1580, 60);
  ASSERT_TRUE(d.alive());
  const nlohmann::json status = testing::daemon_status(d);
  const std::string activity = status["devices"][0].value("activity", "");
  EXPECT_NE(activity.find("; device lost"), std::string::npos) << activity;
  // The first loss, or (where the calls outlasted its 100 ms wait) a failure on probation.
  EXPECT_TRUE(activity.find(" launches in a row failed (the last: ") != std::string::npos ||
              activity.find("a launch on probation failed (the last: ") != std::string::npos)
      << activity;
}

TEST(OpenclDaemon, SeveralProcessesShareTheDeviceThroughTandemd) {
  testing::DaemonProcess d(kAllResident);
  ASSERT_TRUE(d.alive());
  // Four clients, each opening a runtime five times over (the first here, four more of its own).
  run_clients(d.socket(), 4, [&](int, client::Runtime& first) {
    int failures = run_cases_through(first, nullptr);
    for (int round = 1; round < 5; ++round) {
      client::RuntimeOptions o;
      o.socket_path = d.socket();
      o.mode = client::Mode::hw;
      auto rt = client::Runtime::open(o);
      if (!rt.ok()) return 100;
      failures += run_cases_through(*rt.value(), nullptr);
    }
    return failures;
  });
  EXPECT_TRUE(d.alive());
}

}  // namespace
}  // namespace tandem
