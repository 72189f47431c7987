// Data access methods through tandemd (docs/access.md): a malloc'd buffer is accelerated (copy or
// scatter-gather, gathered from the client's own pages), session memory goes zero-copy, device-local
// buffers work across the process boundary; and the bad cases: a page list naming memory the client
// does not have, a buffer unmapped before its job runs, a forced method that cannot serve the buffer.
// Each gets its own status and the session keeps working.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstring>
#include <vector>

#include "daemon_harness.hpp"
#include "rt/completion.hpp"
#include "rtl/rtl_cases.hpp"

namespace tandem {
namespace {

using client::AccessChoice;
using testing::DaemonProcess;

constexpr const char* kConfig =
    "[device.emu]\nresident = [\"accumulate\", \"sobel\", \"matmul\", \"dct_quant\", \"nop\"]\nlocal_memory_mib = 16\n";

int64_t run_call(client::Runtime& rt, testing::Case& c, client::CallReport* report, Status expect = Status::ok) {
  funcs::Call call = testing::call_of(c);
  int64_t value = -1;
  EXPECT_EQ(rt.run(*funcs::find_function(c.function), call, value, report), expect);
  return value;
}

TEST(AccessDaemon, MallocdBuffersAreAcceleratedWithEveryMethodThatReachesThem) {
  DaemonProcess d(kConfig);
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  for (AccessChoice choice : {AccessChoice::automatic, AccessChoice::copy, AccessChoice::scatter_gather}) {
    rt->set_access_choice(choice);
    for (uint32_t n : {1000u, 50'000u, 400'000u}) {  // ordinary heap memory, not tandem_alloc'd
      testing::Case hw = testing::accumulate_case(n, n), sw = testing::accumulate_case(n, n);
      client::CallReport report;
      EXPECT_EQ(run_call(*rt, hw, &report), testing::run_software(sw)) << n;
      EXPECT_GT(report.counters.hw_units, 0u) << "the accelerator reached the malloc'd buffer";
      const uint8_t expected = choice == AccessChoice::copy             ? uint8_t{TANDEM_ACCESS_COPY}
                               : choice == AccessChoice::scatter_gather ? uint8_t{TANDEM_ACCESS_SCATTER_GATHER}
                                                                        : report.access_method;
      EXPECT_EQ(report.access_method, expected);
      EXPECT_NE(report.access_method, TANDEM_ACCESS_ZERO_COPY) << "the heap is not session memory";
    }
    // Outputs come back too: sobel and matmul writing into the heap.
    testing::Case s = testing::sobel_case(3, 301, 77), s_ref = testing::sobel_case(3, 301, 77);
    testing::run_software(s_ref);
    client::CallReport report;
    run_call(*rt, s, &report);
    EXPECT_TRUE(s.out() == s_ref.out()) << "sobel output through method " << static_cast<int>(report.access_method);
    testing::Case m = testing::matmul_case(4, 40, 30, 50), m_ref = testing::matmul_case(4, 40, 30, 50);
    testing::run_software(m_ref);
    run_call(*rt, m, &report);
    EXPECT_TRUE(m.out() == m_ref.out());
    // A dct_quant call that refuses its table writes nothing: the heap output stays as it was.
    testing::Case bad = testing::dct_case(5, 300, TANDEM_DCT_MODE_DCT_QUANTIZE, 0), bad_ref = bad;
    EXPECT_EQ(run_call(*rt, bad, &report), 1);
    EXPECT_GT(report.counters.hw_units, 0u);
    EXPECT_TRUE(bad.out() == bad_ref.out()) << "the invalid table's output through method " << int{report.access_method};
  }
  // Zero-copy cannot map the heap: forced, it says so; the session still works afterwards.
  rt->set_access_choice(AccessChoice::zero_copy);
  testing::Case hw = testing::accumulate_case(1, 50'000);
  run_call(*rt, hw, nullptr, Status::access_unsupported);
  // Session memory: zero-copy, chosen by the runtime.
  rt->set_access_choice(AccessChoice::automatic);
  auto* data = static_cast<int32_t*>(rt->alloc(200'000 * 4));
  for (int i = 0; i < 200'000; ++i) data[i] = i % 1000 - 500;
  const uint64_t args[2] = {testing::address(data), 200'000};
  funcs::Call call;
  funcs::BufferList buffers;
  ASSERT_EQ(funcs::describe_call(*funcs::find_function(TANDEM_FN_ACCUMULATE), args, call, buffers), Status::ok);
  call.buffers[0] = data;
  int64_t value = 0;
  client::CallReport report;
  ASSERT_EQ(rt->run(*funcs::find_function(TANDEM_FN_ACCUMULATE), call, value, &report), Status::ok);
  EXPECT_EQ(value, -100'000) << "-500 + ... + 499 = -500, 200 times";
  EXPECT_EQ(report.access_method, TANDEM_ACCESS_ZERO_COPY);
  rt->free(data);
}

TEST(AccessDaemon, DeviceLocalBuffersAcrossTheProcessBoundary) {
  DaemonProcess d(kConfig);
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  testing::Case c = testing::accumulate_case(5, 30'000), ref = testing::accumulate_case(5, 30'000);
  const int64_t want = testing::run_software(ref);
  auto buffer = rt->alloc_local(120'000);
  ASSERT_TRUE(buffer) << buffer.message();
  // Written from the heap (scatter-gather to the copy engine), read back into the heap.
  ASSERT_EQ(rt->copy_local(buffer.value(), testing::address(c.buffers[0].data()), 120'000), Status::ok);
  std::vector<uint8_t> back(120'000, 0);
  ASSERT_EQ(rt->copy_local(testing::address(back.data()), buffer.value(), back.size()), Status::ok);
  EXPECT_TRUE(back == c.buffers[0]);
  const uint64_t args[2] = {buffer.value(), 30'000};
  funcs::Call call;
  funcs::BufferList buffers;
  ASSERT_EQ(funcs::describe_call(*funcs::find_function(TANDEM_FN_ACCUMULATE), args, call, buffers), Status::ok);
  call.buffers[0] = reinterpret_cast<void*>(buffer.value());
  int64_t value = 0;
  ASSERT_EQ(rt->run(*funcs::find_function(TANDEM_FN_ACCUMULATE), call, value), Status::ok);
  EXPECT_EQ(value, want);
  // Another session cannot name it.
  auto other = d.open(client::Mode::hw);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->free_local(buffer.value()), Status::invalid_argument);
  EXPECT_EQ(rt->free_local(buffer.value()), Status::ok);
}

// Raw packets: the bad cases of scatter-gather reach the status they deserve, nothing else changes.
TEST(AccessDaemon, BadPageListsAndUnmappedBuffersFailAloneWithTheirStatus) {
  DaemonProcess d(kConfig);
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  auto* rec = static_cast<tandem_completion_t*>(rt->alloc(sizeof(tandem_completion_t)));
  const auto send = [&](uint64_t address, uint64_t count) {
    rt::reset_record(rec);
    const uint64_t args[2] = {address, count};
    EXPECT_EQ(rt->default_queue().dispatch(TANDEM_FN_ACCUMULATE, args, 2, count * 4, rec, false,
                                           TANDEM_FLAG_ACCESS(TANDEM_ACCESS_SCATTER_GATHER)),
              Status::ok);
    rt::WaitPolicy p;
    p.timeout_ns = 10'000'000'000;
    const Status s = rt->wait(rec, p);
    return s;
  };
  // Memory the client does not own: not a user-space address at all.
  EXPECT_EQ(send(uint64_t{1} << 48, 16), Status::translation_fault);
  // A buffer unmapped before the job runs: the daemon cannot reach its pages.
  void* gone = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(gone, MAP_FAILED);
  munmap(gone, 1 << 16);
  EXPECT_EQ(send(testing::address(gone), 1000), Status::buffer_unmapped);
  // Partly mapped: the first page is there, the rest is not.
  char* half = static_cast<char*>(mmap(nullptr, 2 << 12, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(half, MAP_FAILED);
  munmap(half + 4096, 4096);
  EXPECT_EQ(send(testing::address(half), 2000), Status::buffer_unmapped);
  munmap(half, 4096);
  // The session is unharmed: a good scatter-gather job right after.
  std::vector<int32_t> ok(5000, 3);
  EXPECT_EQ(send(testing::address(ok.data()), ok.size()), Status::ok);
  EXPECT_EQ(static_cast<int64_t>(rec->value), 15'000);
  EXPECT_TRUE(d.alive());
  rt->free(rec);
}

}  // namespace
}  // namespace tandem
