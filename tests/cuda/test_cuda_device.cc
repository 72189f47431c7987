// The CUDA device behind the Device interface and end to end, in both modes (a launch per job; a
// resident block per slot) and with both access methods: completions announced by the wake word,
// every catalog kernel on its own slot at once, through the embedded runtime and through tandemd
// (several client processes, results checked against the references), chained jobs on device-local
// memory, and a job past its time limit. Needs a GPU: without one every test skips and prints why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
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
#include "devices/cuda/cuda_device.hpp"
#include "kernel_cases.hpp"
#include "mp/mp_util.hpp"
#include "require_gpu.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

using devices::DeviceCompletion;
using devices::cuda::CudaDevice;
using testing::KernelCase;
using testing::run_one;
using testing::submit_job;
using testing::wait_for;

config::CudaSettings settings(uint32_t slots, const std::string& mode = "launch", const std::string& access = "copy",
                              double timeout_s = 10) {
  config::CudaSettings s;
  s.slots = slots;
  s.mode = mode;
  s.access = access;
  s.job_timeout_s = timeout_s;
  return s;
}

TEST(CudaDevice, DescribesItselfAndItsMemory) {
  TANDEM_REQUIRE_GPU();
  CudaDevice d(settings(2));
  const devices::DeviceInfo& info = d.info();
  EXPECT_EQ(info.kind, "cuda");
  EXPECT_NE(info.description.find("launch mode"), std::string::npos) << info.description;
  EXPECT_TRUE(info.loadable[TANDEM_FN_ACCUMULATE] && info.loadable[TANDEM_FN_DCT_QUANT] && info.loadable[TANDEM_FN_WORK + 20]);
  EXPECT_FALSE(info.loadable[TANDEM_FN_PRIORITY_QUEUE]);
  EXPECT_EQ(info.memory.local_bytes, uint64_t{256} << 20);
  EXPECT_EQ(info.memory.copy_engines, 2u);
  EXPECT_GT(info.memory.copy_engine_bps, 0);
  // The cost model, measured at start on a slot of the device's mode.
  EXPECT_GT(info.models[TANDEM_FN_ACCUMULATE].throughput, 0);
  EXPECT_GT(info.models[TANDEM_FN_SOBEL].throughput, 0);
  EXPECT_GT(info.models[TANDEM_FN_NOP].latency_s, 0);
  EXPECT_EQ(info.models[TANDEM_FN_WORK_BASE + 3].throughput, info.models[TANDEM_FN_WORK].throughput) << "the variants share work's";
  // Discovery's list, for `tandem status` ("found on this machine:"), names the GPU chosen.
  const auto& chosen = d.context().device();
  const std::string line = "device " + std::to_string(chosen.index) + ": " + devices::cuda::describe_cuda_device(chosen);
  EXPECT_NE(std::find(info.found.begin(), info.found.end(), line), info.found.end()) << line;
  EXPECT_EQ(d.activity(), "launch mode, copy access") << "nothing failed yet";
  std::printf("%s\n  copy engines: %.3g B/s, set-up %.1f us\n", info.description.c_str(), info.memory.copy_engine_bps,
              info.memory.copy_engine_setup_s * 1e6);
}

TEST(CudaDevice, ALongJobIsAnnouncedByTheWakeWord) {
  TANDEM_REQUIRE_GPU();
  CudaDevice d(settings(3));
  for (uint32_t slot = 0; slot < 3; ++slot) d.configure(slot, TANDEM_FN_ACCUMULATE);
  const uint32_t word_before = abi::load_acquire(*d.wake_word());
  // Milliseconds of arithmetic on the GPU (a copy from pageable memory would block in submit instead).
  auto big = KernelCase::work(40'000'000'000);
  d.configure(1, TANDEM_FN_WORK);
  submit_job(d, 1, 42, big->device_call());
  auto done = wait_for(d, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].token, 42u);
  EXPECT_EQ(done[0].slot, 1u);
  EXPECT_EQ(done[0].status, Status::ok) << d.slot_health(1).last_error;
  EXPECT_EQ(done[0].value, 40'000'000'000) << "work's value is the units it ran (the CPU reference would take a minute)";
  EXPECT_GT(done[0].device_ns, 0);
  // A job that ran past the polled while is announced by a host function, which runs on CUDA's thread
  // just after the job.
  const int64_t until = now_ns() + 1'000'000'000;
  while (abi::load_acquire(*d.wake_word()) == word_before && now_ns() < until) std::this_thread::yield();
  EXPECT_NE(abi::load_acquire(*d.wake_word()), word_before) << "launch mode: a host function announces a long job";
  EXPECT_TRUE(d.slot_health(1).in_service);
  // A short job (a no-op: microseconds) is polled while young and never announced: no wake-up.
  d.configure(0, TANDEM_FN_NOP);
  const uint32_t before_short = abi::load_acquire(*d.wake_word());
  auto nop = KernelCase::nop();
  EXPECT_EQ(run_one(d, 0, 43, nop->device_call()).status, Status::ok);
  EXPECT_EQ(abi::load_acquire(*d.wake_word()), before_short) << "a short job pays for no host function";
}

class CudaDeviceModes : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(CudaDeviceModes, EveryKernelOnItsOwnSlotConcurrently) {
  TANDEM_REQUIRE_GPU();
  auto cases = testing::catalog_cases();
  CudaDevice d(settings(static_cast<uint32_t>(cases.size()), std::get<0>(GetParam()), std::get<1>(GetParam())));
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
    EXPECT_TRUE(kc.outputs_match()) << kc.name;
  }
}

INSTANTIATE_TEST_SUITE_P(ModesAndAccess, CudaDeviceModes,
                         ::testing::Combine(::testing::Values("launch", "persistent"), ::testing::Values("copy", "zero_copy")),
                         [](const auto& p) { return std::string(std::get<0>(p.param)) + "_" + std::get<1>(p.param); });

// A persistent slot's staging is allocated before its block starts and never grows: a buffer larger
// than it is refused with job_too_large (the message names the setting), a smaller one runs, while the
// device's other persistent slots are resident.
TEST(CudaDevice, APersistentSlotRefusesABufferLargerThanItsStaging) {
  TANDEM_REQUIRE_GPU();
  config::CudaSettings s = settings(3, "persistent");
  s.persistent_staging_bytes = uint64_t{1} << 20;
  CudaDevice d(s);
  EXPECT_EQ(d.info().memory.max_job_buffer_bytes, uint64_t{1} << 20) << "the client's partitioner keeps jobs within it";
  for (uint32_t slot = 0; slot < 3; ++slot) d.configure(slot, TANDEM_FN_ACCUMULATE);
  auto large = KernelCase::accumulate(300'000, 0, 21);  // 1.2 MB
  EXPECT_EQ(run_one(d, 0, 1, large->device_call()).status, Status::job_too_large);
  EXPECT_NE(d.slot_health(0).last_error.find("persistent_staging_mib"), std::string::npos) << d.slot_health(0).last_error;
  auto fits = KernelCase::accumulate(200'000, 0, 22);  // 0.8 MB
  const DeviceCompletion c = run_one(d, 0, 2, fits->device_call());
  EXPECT_EQ(c.status, Status::ok) << d.slot_health(0).last_error;
  EXPECT_EQ(c.value, fits->reference_value());
}

// A work job sized (by measured ones) to run about half a second in one block, against a 20 ms limit:
// it completes with TIMEOUT, only its slot leaves service, and comes back once the GPU finishes it.
TEST(CudaDevice, AJobPastItsTimeLimitTimesOutAndOnlyItsSlotLeavesService) {
  TANDEM_REQUIRE_GPU();
  uint64_t units = 1'000'000;
  {
    // work(units) grows until one job takes 50 ms in one block (a launch takes microseconds).
    devices::cuda::CudaOptions one_block;
    one_block.reduction_groups = 1;
    devices::cuda::CudaContext context(one_block);
    devices::cuda::CudaSlot probe(context, 0, devices::cuda::CudaMode::launch);
    double took_s = 0;
    while (took_s < 0.05 && units < (uint64_t{1} << 42)) {
      units *= 4;
      auto job = KernelCase::work(units);
      const int64_t t0 = now_ns();
      ASSERT_TRUE(probe.run(job->device_call(), devices::cuda::CudaAccess::copy).ok()) << probe.last_error();
      took_s = static_cast<double>(now_ns() - t0) * 1e-9;
    }
    units = static_cast<uint64_t>(static_cast<double>(units) * 0.5 / took_s);
    std::printf("the slow job: work(%.3g), about 0.5 s in one block\n", static_cast<double>(units));
  }
  config::CudaSettings s = settings(2, "launch", "copy", 0.02);
  s.reduction_groups = 1;
  CudaDevice d(s);
  d.configure(0, TANDEM_FN_WORK);
  d.configure(1, TANDEM_FN_ACCUMULATE);
  testing::expect_timeout_and_recovery(d, 0, 1, units, 2);
}

// Faults injected through the real API (CudaSlot::inject). A launch the runtime refuses
// (cudaErrorInvalidConfiguration) and an allocation that fails (cudaErrorMemoryAllocation) fail only
// their job: the slot serves on and the activity line counts them.
TEST(CudaDevice, ARefusedLaunchOrAllocationFailsOnlyItsJob) {
  TANDEM_REQUIRE_GPU();
  CudaDevice d(settings(2));
  d.configure(0, TANDEM_FN_ACCUMULATE);
  d.configure(1, TANDEM_FN_ACCUMULATE);
  auto job = KernelCase::accumulate(100'000, 0, 61);
  d.inject(0, devices::cuda::CudaFault::bad_launch);
  EXPECT_EQ(run_one(d, 0, 1, job->device_call()).status, Status::device_error);
  EXPECT_NE(d.slot_health(0).last_error.find("cudaErrorInvalidConfiguration"), std::string::npos) << d.slot_health(0).last_error;
  d.inject(1, devices::cuda::CudaFault::no_memory);
  EXPECT_EQ(run_one(d, 1, 2, job->device_call()).status, Status::no_memory);
  for (uint32_t slot = 0; slot < 2; ++slot) {
    EXPECT_TRUE(d.slot_health(slot).in_service) << slot;
    const DeviceCompletion ok = run_one(d, slot, 10 + slot, job->device_call());
    EXPECT_EQ(ok.status, Status::ok) << d.slot_health(slot).last_error;
    EXPECT_EQ(ok.value, job->reference_value());
  }
  EXPECT_NE(d.activity().find("; 1 jobs found no device memory for their buffers"), std::string::npos) << d.activity();
  EXPECT_NE(d.activity().find("; faults: 1 launches failed on the device, 0 streams rebuilt"), std::string::npos) << d.activity();
}

// A kernel that traps loses the process's context (CUDA cannot recover it): its job completes with
// DEVICE_ERROR, every slot leaves service for good with the reason, a job on another slot is refused,
// nothing is rebuilt, and the idle device asks the dispatcher for no wake-ups. The context stays lost
// for the rest of the process: ctest runs each test in a process of its own, and
// scripts/cuda_device_check.sh runs this one apart from the others.
TEST(CudaDevice, AKernelThatTrapsLosesTheContextAndEverySlotLeavesService) {
  TANDEM_REQUIRE_GPU();
  CudaDevice d(settings(3));
  for (uint32_t slot = 0; slot < 3; ++slot) d.configure(slot, TANDEM_FN_ACCUMULATE);
  auto job = KernelCase::accumulate(100'000, 0, 62);
  ASSERT_EQ(run_one(d, 1, 1, job->device_call()).status, Status::ok);
  d.inject(0, devices::cuda::CudaFault::trap);
  EXPECT_EQ(run_one(d, 0, 2, job->device_call()).status, Status::device_error);
  for (uint32_t slot = 0; slot < 3; ++slot) {
    EXPECT_FALSE(d.slot_in_service(slot)) << slot;
    EXPECT_NE(d.slot_health(slot).last_error.find("the CUDA context is lost"), std::string::npos) << d.slot_health(slot).last_error;
  }
  EXPECT_NE(d.activity().find("; device lost: "), std::string::npos) << d.activity();
  EXPECT_NE(d.activity().find("restart tandemd"), std::string::npos) << d.activity();
  EXPECT_EQ(run_one(d, 2, 3, job->device_call()).status, Status::device_error) << "refused: the slot is out of service";
  EXPECT_EQ(d.next_deadline(), INT64_MAX) << "no rebuild is due, no job is polled";
}

// Every function of the catalog resident, no bound on a job's modelled time.
std::string all_resident(const std::string& mode, const std::string& access, uint32_t local_mib = 0) {
  return "[fabric]\nmax_job_ms = 0\n[device]\nkinds = [\"cuda\"]\n[device.cuda]\nslots = 6\n"
         "resident = [\"nop\", \"accumulate\", \"work\", \"sobel\", \"matmul\", \"dct_quant\"]\nmode = \"" +
         mode + "\"\naccess = \"" + access + "\"\nlocal_memory_mib = " + std::to_string(local_mib) + "\n";
}

// The client keeps every job of a call within a persistent slot's staging (the device's
// max_job_buffer_bytes): 16 MiB of accumulate in hw mode against 1 MiB of staging runs wholly on the GPU
// in sixteen or more jobs, none refused (six jobs of 2.8 MB would all be JOB_TOO_LARGE).
TEST(CudaRuntime, APersistentSlotsStagingBoundsTheJobsOfACall) {
  TANDEM_REQUIRE_GPU();
  auto rt = testing::open_embedded(all_resident("persistent", "copy") + "persistent_staging_mib = 1\n", client::Mode::hw);
  ASSERT_TRUE(rt);
  EXPECT_EQ(rt->max_job_buffer_bytes(TANDEM_FN_ACCUMULATE), uint64_t{1} << 20);
  auto c = KernelCase::accumulate(4 << 20, 0, 23);
  const funcs::FunctionInfo& fn = *funcs::find_function(TANDEM_FN_ACCUMULATE);
  int64_t value = 0;
  client::CallReport report;
  funcs::Call call = c->device_call();
  ASSERT_EQ(rt->run(fn, call, value, &report), Status::ok);
  EXPECT_EQ(value, c->reference_value());
  EXPECT_EQ(report.counters.jobs_failed, 0u);
  EXPECT_EQ(report.counters.hw_units, uint64_t{16} << 20);
  EXPECT_GE(report.counters.jobs_completed, 16u);
}

TEST(CudaRuntime, EveryKernelThroughTheEmbeddedRuntime) {
  TANDEM_REQUIRE_GPU();
  for (const char* mode : {"launch", "persistent"}) {
    for (const char* access : {"copy", "zero_copy"}) {
      auto rt = testing::open_embedded(all_resident(mode, access), client::Mode::hw);
      ASSERT_TRUE(rt);
      std::string report;
      EXPECT_EQ(testing::run_cases_through(*rt, &report), 0) << mode << ", " << access << "\n" << report;
    }
  }
}

// The high-level calls with every method a client can force, in both modes, on both of the device's
// access settings (docs/access.md).
TEST(CudaRuntime, EveryFunctionWithEveryClientAccessMethod) {
  TANDEM_REQUIRE_GPU();
  for (const char* mode : {"launch", "persistent"}) {
    for (const char* access : {"copy", "zero_copy"}) {
      SCOPED_TRACE(std::string(mode) + ", device access " + access);
      testing::expect_every_client_method_embedded(all_resident(mode, access));
    }
  }
}

TEST(CudaDaemon, EveryFunctionWithEveryClientAccessMethod) {
  TANDEM_REQUIRE_GPU();
  for (const char* access : {"copy", "zero_copy"}) {
    SCOPED_TRACE(std::string("persistent, device access ") + access);
    testing::expect_every_client_method_through_tandemd(all_resident("persistent", access));
  }
}

// Data copied into the GPU's memory once stays there between chained jobs (sobel of sobel, at an
// unaligned output offset; accumulate at an odd word), and a dct_quant table in device memory is read
// back and validated; the host window is never touched. In both modes.
TEST(CudaRuntime, ChainedJobsOnDeviceLocalDataStayOnTheDevice) {
  TANDEM_REQUIRE_GPU();
  for (const char* mode : {"launch", "persistent"}) {
    auto rt = testing::open_embedded(all_resident(mode, "copy", 16), client::Mode::hw);
    ASSERT_TRUE(rt);
    auto& dispatcher = dynamic_cast<client::EmbeddedRuntime&>(*rt).dispatcher();
    EXPECT_EQ(testing::sobel_chain_on_device(*rt, 11), "") << mode;
    const devices::CopyStats chain = dispatcher.copy_stats();
    EXPECT_EQ(chain.bytes_to_device, 301u * 97u) << mode << ": the image moved in once";
    EXPECT_EQ(chain.bytes_from_device, 301u * 97u) << mode << ": only the result came back";

    constexpr uint32_t kWords = 20'011;
    testing::Case words = testing::accumulate_case(12, kWords);
    const int64_t want = testing::run_software(words);
    auto sums = rt->alloc_local(kWords * 4 + 4);
    ASSERT_TRUE(sums);
    ASSERT_EQ(rt->copy_local(sums.value() + 4, testing::address(words.buffers[0].data()), kWords * 4), Status::ok);
    int64_t value = -1;
    ASSERT_EQ(testing::run_call(*rt, TANDEM_FN_ACCUMULATE, {sums.value() + 4, kWords}, value), Status::ok);
    EXPECT_EQ(value, want) << mode;
    ASSERT_EQ(rt->copy_local(sums.value(), sums.value() + 4, kWords * 4), Status::ok);  // overlapping: memmove
    ASSERT_EQ(testing::run_call(*rt, TANDEM_FN_ACCUMULATE, {sums.value(), kWords}, value), Status::ok);
    EXPECT_EQ(value, want) << mode << ": after an overlapping copy";

    constexpr uint32_t kBlocks = 300;
    testing::Case dct = testing::dct_case(3, kBlocks, TANDEM_DCT_MODE_DCT_QUANTIZE),
                  ref = testing::dct_case(3, kBlocks, TANDEM_DCT_MODE_DCT_QUANTIZE),
                  bad = testing::dct_case(3, kBlocks, TANDEM_DCT_MODE_DCT_QUANTIZE, 0);
    testing::run_software(ref);
    auto in = rt->alloc_local(kBlocks * 64), out = rt->alloc_local(kBlocks * 128), table = rt->alloc_local(128),
         bad_table = rt->alloc_local(128);
    ASSERT_TRUE(in && out && table && bad_table);
    ASSERT_EQ(rt->copy_local(in.value(), testing::address(dct.buffers[0].data()), kBlocks * 64), Status::ok);
    ASSERT_EQ(rt->copy_local(table.value(), testing::address(dct.buffers[2].data()), 128), Status::ok);
    ASSERT_EQ(rt->copy_local(bad_table.value(), testing::address(bad.buffers[2].data()), 128), Status::ok);
    ASSERT_EQ(testing::run_call(*rt, TANDEM_FN_DCT_QUANT,
                                {in.value(), out.value(), TANDEM_DCT_ARG(kBlocks, TANDEM_DCT_MODE_DCT_QUANTIZE), table.value()}, value),
              Status::ok);
    EXPECT_EQ(value, 0) << mode;
    std::vector<uint8_t> result(kBlocks * 128);
    ASSERT_EQ(rt->copy_local(testing::address(result.data()), out.value(), result.size()), Status::ok);
    EXPECT_TRUE(result == ref.out()) << mode << ": DCT and quantiser with a device-local table equal the reference";
    ASSERT_EQ(testing::run_call(*rt, TANDEM_FN_DCT_QUANT,
                                {in.value(), out.value(), TANDEM_DCT_ARG(kBlocks, TANDEM_DCT_MODE_DCT_QUANTIZE), bad_table.value()},
                                value),
              Status::ok);
    EXPECT_EQ(value, 1) << mode << ": a device-local table with a zero entry is refused";
    EXPECT_TRUE(testing::host_window_untouched(*rt)) << mode;
    for (auto& b : {sums, in, out, table, bad_table}) EXPECT_EQ(rt->free_local(b.value()), Status::ok);
  }
}

// Through tandemd in persistent mode: client processes at once, each running the catalog (results
// checked) and sobel chains on its own device-local buffers; the status says where the memory is.
TEST(CudaDaemon, SeveralProcessesShareTheGpuThroughTandemd) {
  TANDEM_REQUIRE_GPU();
  testing::DaemonProcess d(all_resident("persistent", "copy", 32));
  ASSERT_TRUE(d.alive());
  testing::run_clients(d.socket(), 4, [](int i, client::Runtime& rt) {
    return testing::run_cases_through(rt, nullptr) + testing::sobel_chains_of_client(rt, i, 2);
  });
  testing::expect_local_memory_after_chains(testing::daemon_status(d), "cuda", uint64_t{32} << 20, 4 * 2);
  EXPECT_TRUE(d.alive());
}

}  // namespace
}  // namespace tandem
