// Data access methods through the embedded runtime (docs/access.md): every method gives the reference's
// result for every function, at every size class, on aligned and unaligned buffers; device-local chains
// move their data once; methods that cannot serve a buffer, and device memory running out, get their
// own statuses.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "client/embedded.hpp"
#include "rtl/rtl_cases.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

using client::AccessChoice;
using testing::Case;

constexpr const char* kAllKernels =
    "[device.emu]\nslots = 6\nresident = [\"accumulate\", \"sobel\", \"matmul\", \"dct_quant\", \"priority_queue\", "
    "\"nop\"]\nlocal_memory_mib = 64\n";

uint8_t method_of(AccessChoice c) {
  switch (c) {
    case AccessChoice::zero_copy: return TANDEM_ACCESS_ZERO_COPY;
    case AccessChoice::copy: return TANDEM_ACCESS_COPY;
    case AccessChoice::scatter_gather: return TANDEM_ACCESS_SCATTER_GATHER;
    default: return TANDEM_ACCESS_DEVICE_LOCAL;
  }
}

// Runs `hw` through the runtime's high-level path and `sw` in software; values and outputs must agree.
void expect_reference(client::Runtime& rt, Case& hw, Case& sw, const std::string& what, client::CallReport* report) {
  const int64_t want = testing::run_software(sw);
  funcs::Call call = testing::call_of(hw);
  int64_t value = -1;
  ASSERT_EQ(rt.run(*funcs::find_function(hw.function), call, value, report), Status::ok) << what;
  EXPECT_EQ(value, want) << what;
  if (sw.output != SIZE_MAX) {
    EXPECT_TRUE(sw.out() == hw.out()) << what << ": output differs";
  }
}

std::vector<std::pair<std::string, std::function<Case(uint64_t)>>> cases_of_every_size() {
  std::vector<std::pair<std::string, std::function<Case(uint64_t)>>> cases;
  for (uint32_t n : {1u, 100u, 5000u, 300'000u}) {  // bytes from 4 to 1.2 MB: smaller and larger than a page
    cases.emplace_back("accumulate " + std::to_string(n), [n](uint64_t s) { return testing::accumulate_case(s, n); });
  }
  for (auto [w, h] : {std::pair{3u, 3u}, {64u, 48u}, {641u, 371u}}) {
    cases.emplace_back("sobel " + std::to_string(w) + "x" + std::to_string(h),
                       [w, h](uint64_t s) { return testing::sobel_case(s, w, h); });
  }
  for (uint32_t d : {1u, 17u, 96u}) {
    cases.emplace_back("matmul " + std::to_string(d), [d](uint64_t s) { return testing::matmul_case(s, d, d + 1, d); });
  }
  for (uint32_t blocks : {1u, 40u, 3000u}) {
    cases.emplace_back("dct_quant " + std::to_string(blocks),
                       [blocks](uint64_t s) { return testing::dct_case(s, blocks, TANDEM_DCT_MODE_DCT_QUANTIZE); });
  }
  // An invalid table: the call returns 1 and leaves the output as it was, with every method.
  cases.emplace_back("dct_quant 40, invalid table",
                     [](uint64_t s) { return testing::dct_case(s, 40, TANDEM_DCT_MODE_DCT_QUANTIZE, 0); });
  for (uint32_t n : {1u, 700u}) {
    cases.emplace_back("priority_queue " + std::to_string(n), [n](uint64_t s) { return testing::pq_case(s, n); });
  }
  return cases;
}

TEST(Access, EveryMethodGivesTheReferenceForEveryFunction) {
  auto rt = testing::open_embedded(kAllKernels, client::Mode::hw);
  ASSERT_TRUE(rt);
  for (AccessChoice choice : {AccessChoice::zero_copy, AccessChoice::copy, AccessChoice::scatter_gather}) {
    rt->set_access_choice(choice);
    for (auto& [name, make] : cases_of_every_size()) {
      Case hw = make(7), sw = make(7);
      client::CallReport report;
      expect_reference(*rt, hw, sw, name + " / method " + std::to_string(method_of(choice)), &report);
      if (report.counters.jobs_submitted > 0) {
        EXPECT_EQ(report.access_method, method_of(choice)) << name;
      }
    }
  }
  EXPECT_GT(rt->stats().hw_jobs.load(), 0u);
}

// Unaligned buffers (an odd byte offset into the allocation) with every method, in automatic mode too.
TEST(Access, UnalignedBuffersWithEveryMethod) {
  auto rt = testing::open_embedded(kAllKernels, client::Mode::alpha);
  ASSERT_TRUE(rt);
  rt->set_mode(client::Mode::alpha, 0.5);
  const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_SOBEL);
  for (AccessChoice choice : {AccessChoice::automatic, AccessChoice::zero_copy, AccessChoice::copy, AccessChoice::scatter_gather}) {
    rt->set_access_choice(choice);
    constexpr uint32_t w = 333, h = 77;
    std::vector<uint8_t> in(w * h + 3), out(w * h + 5, 0), want(w * h, 0);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 31 + 7);
    const uint64_t args[4] = {testing::address(in.data() + 3), testing::address(out.data() + 5), w, h};
    funcs::Call call, ref;
    funcs::BufferList buffers;
    ASSERT_EQ(funcs::describe_call(*fn, args, call, buffers), Status::ok);
    ref = call;
    call.buffers[0] = in.data() + 3;
    call.buffers[1] = out.data() + 5;
    ref.buffers[0] = in.data() + 3;
    ref.buffers[1] = want.data();
    (void)funcs::run_sw(*fn, ref);
    int64_t value = -1;
    ASSERT_EQ(rt->run(*fn, call, value), Status::ok);
    EXPECT_EQ(std::memcmp(out.data() + 5, want.data(), want.size()), 0) << "method choice " << static_cast<int>(choice);
  }
}

// A DCT -> quantiser chain on device-local buffers: the input goes to the device once, the
// coefficients never leave it, the result comes back once, however often the chain runs.
TEST(Access, ChainedDeviceLocalJobsMoveTheirDataOnce) {
  auto rt = testing::open_embedded(kAllKernels, client::Mode::hw);
  ASSERT_TRUE(rt);
  auto& dispatcher = dynamic_cast<client::EmbeddedRuntime&>(*rt).dispatcher();
  constexpr uint32_t kBlocks = 500;
  Case dct = testing::dct_case(3, kBlocks, TANDEM_DCT_MODE_DCT_QUANTIZE);  // for its samples and table
  Case ref = testing::dct_case(3, kBlocks, TANDEM_DCT_MODE_DCT_QUANTIZE);
  testing::run_software(ref);
  auto in = rt->alloc_local(kBlocks * 64), coeffs = rt->alloc_local(kBlocks * 128), out = rt->alloc_local(kBlocks * 128),
       table = rt->alloc_local(128);
  ASSERT_TRUE(in && coeffs && out && table) << in.message();
  ASSERT_EQ(rt->copy_local(in.value(), testing::address(dct.buffers[0].data()), kBlocks * 64), Status::ok);
  ASSERT_EQ(rt->copy_local(table.value(), testing::address(dct.buffers[2].data()), 128), Status::ok);
  const devices::CopyStats before = dispatcher.copy_stats();
  EXPECT_EQ(before.bytes_to_device, kBlocks * 64u + 128u);
  const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_DCT_QUANT);
  for (int round = 0; round < 3; ++round) {
    for (auto [mode, src, dst] : {std::tuple{TANDEM_DCT_MODE_DCT, in.value(), coeffs.value()},
                                  std::tuple{TANDEM_DCT_MODE_QUANTIZE, coeffs.value(), out.value()}}) {
      const uint64_t args[4] = {src, dst, TANDEM_DCT_ARG(kBlocks, mode), table.value()};
      funcs::Call call;
      funcs::BufferList buffers;
      ASSERT_EQ(funcs::describe_call(*fn, args, call, buffers), Status::ok);
      for (uint32_t i = 0; i < buffers.count; ++i) call.buffers[i] = reinterpret_cast<void*>(call.args[buffers.items[i].arg]);
      int64_t value = -1;
      client::CallReport report;
      ASSERT_EQ(rt->run(*fn, call, value, &report), Status::ok);
      EXPECT_EQ(value, 0);
      EXPECT_EQ(report.access_method, TANDEM_ACCESS_DEVICE_LOCAL);
      EXPECT_EQ(report.counters.sw_units, 0u) << "device-local data has no CPU share";
    }
  }
  std::vector<uint8_t> result(kBlocks * 128);
  ASSERT_EQ(rt->copy_local(testing::address(result.data()), out.value(), result.size()), Status::ok);
  EXPECT_TRUE(result == ref.out()) << "DCT then quantiser on the device equals the chained reference";
  const devices::CopyStats after = dispatcher.copy_stats();
  EXPECT_EQ(after.bytes_to_device, before.bytes_to_device) << "three chains moved nothing more to the device";
  EXPECT_EQ(after.bytes_from_device, kBlocks * 128u) << "only the result came back";
  EXPECT_EQ(after.bytes_on_device, 0u);
  for (auto& b : {in, coeffs, out, table}) EXPECT_EQ(rt->free_local(b.value()), Status::ok);
  EXPECT_EQ(rt->free_local(in.value()), Status::invalid_argument) << "freed twice";
}

// A call on device-local data whose function is not resident yet runs on the CPU (its data bounced through
// this process) until the reactive manager has loaded it, then on the fabric: only what the CPU wrote goes
// back from the bounce buffer, so the jobs' rows survive (the whole buffer went back before).
TEST(Access, ADeviceLocalCallPartlyInSoftwareKeepsWhatTheJobsWrote) {
  constexpr uint32_t w = 1024, h = 1500;
  Case ref = testing::sobel_case(12, w, h);
  testing::run_software(ref);
  // A descheduled dispatcher may load the function only after the CPU has done the whole call: then
  // try again with a fresh runtime (every attempt must still give the reference).
  bool split = false;
  for (int attempt = 0; attempt < 5 && !split; ++attempt) {
    auto rt = testing::open_embedded("[device.emu]\nslots = 2\nresident = [\"nop\"]\n[reconfig]\npolicy = \"reactive\"\n",
                                     client::Mode::hw);
    ASSERT_TRUE(rt);
    Case c = testing::sobel_case(12, w, h);
    std::vector<uint64_t> device;
    for (auto& b : c.buffers) {
      auto d = rt->alloc_local(b.size());
      ASSERT_TRUE(d);
      ASSERT_EQ(rt->copy_local(d.value(), testing::address(b.data()), b.size()), Status::ok);
      device.push_back(d.value());
    }
    const uint64_t args[4] = {device[0], device[1], w, h};
    funcs::Call call;
    funcs::BufferList buffers;
    ASSERT_EQ(funcs::describe_call(*funcs::find_function(TANDEM_FN_SOBEL), args, call, buffers), Status::ok);
    call.buffers[0] = reinterpret_cast<void*>(device[0]);
    call.buffers[1] = reinterpret_cast<void*>(device[1]);
    int64_t value = -1;
    client::CallReport report;
    ASSERT_EQ(rt->run(*funcs::find_function(TANDEM_FN_SOBEL), call, value, &report), Status::ok);
    split = report.counters.sw_units > 0 && report.counters.hw_units > 0;  // rows on the CPU, then on the fabric
    std::vector<uint8_t> out(c.buffers[1].size());
    ASSERT_EQ(rt->copy_local(testing::address(out.data()), device[1], out.size()), Status::ok);
    EXPECT_TRUE(out == ref.out()) << "sw " << report.counters.sw_units << ", hw " << report.counters.hw_units;
    for (uint64_t d : device) EXPECT_EQ(rt->free_local(d), Status::ok);
  }
  EXPECT_TRUE(split) << "no attempt ran rows both on the CPU (while the function loaded) and on the fabric";
}

// A software step of a call on device-local data (no accelerator resident) bounces it through this
// process and still gives the reference.
TEST(Access, DeviceLocalDataFallsBackToSoftwareThroughTheCopyEngines) {
  auto rt = testing::open_embedded("[device.emu]\nresident = [\"nop\"]\n", client::Mode::auto_mode);
  ASSERT_TRUE(rt);
  Case c = testing::accumulate_case(9, 10'000), ref = testing::accumulate_case(9, 10'000);
  const int64_t want = testing::run_software(ref);
  auto buffer = rt->alloc_local(40'000);
  ASSERT_TRUE(buffer);
  ASSERT_EQ(rt->copy_local(buffer.value(), testing::address(c.buffers[0].data()), 40'000), Status::ok);
  const uint64_t args[2] = {buffer.value(), 10'000};
  funcs::Call call;
  funcs::BufferList buffers;
  ASSERT_EQ(funcs::describe_call(*funcs::find_function(TANDEM_FN_ACCUMULATE), args, call, buffers), Status::ok);
  call.buffers[0] = reinterpret_cast<void*>(buffer.value());
  int64_t value = 0;
  ASSERT_EQ(rt->run(*funcs::find_function(TANDEM_FN_ACCUMULATE), call, value), Status::ok);
  EXPECT_EQ(value, want);
}

TEST(Access, MethodsThatCannotServeAndFullDeviceMemoryHaveTheirOwnStatus) {
  auto rt = testing::open_embedded("[device.emu]\nlocal_memory_mib = 1\n", client::Mode::hw);
  ASSERT_TRUE(rt);
  // Device-local forced on host memory: the data is not on the device.
  rt->set_access_choice(AccessChoice::device_local);
  Case c = testing::accumulate_case(1, 100'000);
  funcs::Call call = testing::call_of(c);
  int64_t value = 0;
  EXPECT_EQ(rt->run(*funcs::find_function(TANDEM_FN_ACCUMULATE), call, value), Status::access_unsupported);
  rt->set_access_choice(AccessChoice::automatic);
  EXPECT_EQ(rt->run(*funcs::find_function(TANDEM_FN_ACCUMULATE), call, value), Status::ok) << "nothing else affected";
  // Device memory running out.
  auto big = rt->alloc_local(900 << 10);
  ASSERT_TRUE(big);
  auto more = rt->alloc_local(200 << 10);
  EXPECT_EQ(more.status(), Status::device_memory_full);
  EXPECT_EQ(rt->free_local(big.value()), Status::ok);
  EXPECT_TRUE(rt->alloc_local(200 << 10)) << "freed memory serves again";
  // A runtime without local memory.
  auto none = testing::open_embedded("[device.emu]\nlocal_memory_mib = 0\n");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->alloc_local(64).status(), Status::access_unsupported);
}

}  // namespace
}  // namespace tandem
