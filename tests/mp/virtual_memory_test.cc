// Virtual memory through tandemd (issue 12): AISLE sessions reach only their registered windows,
// PHASE/V sessions any page of their own process, faulted in on demand (process_vm_readv of the
// pid the kernel named) and translated through the device TLB; a page the client does not have ends
// only that job with TRANSLATION_FAULT, and tandem status shows the TLB's work per session and function.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "daemon_harness.hpp"
#include "funcs/ref/list_walk_ref.hpp"
#include "mp_util.hpp"

namespace tandem {
namespace {

using testing::DaemonProcess;

constexpr const char* kConfig = "[device.emu]\nslots = 2\nresident = [\"list_walk\", \"accumulate\"]\n";

struct Outcome {
  Status status = Status::ok;
  int64_t value = 0;
};

Outcome dispatch_wait(client::Runtime& rt, client::Queue& q, uint16_t function, const uint64_t* args, uint64_t workload) {
  auto* rec = static_cast<tandem_completion_t*>(rt.alloc(sizeof(tandem_completion_t)));
  rt::reset_record(rec);
  Outcome o;
  EXPECT_EQ(q.dispatch(function, args, 2, workload, rec), Status::ok);
  rt::WaitPolicy policy;
  policy.timeout_ns = 10'000'000'000;
  o.status = rt.wait(rec, policy);
  o.value = rec->value;
  rt.free(rec);
  return o;
}

Outcome walk(client::Runtime& rt, client::Queue& q, const tandem_list_node_t* head, uint64_t n) {
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(head), n};
  return dispatch_wait(rt, q, TANDEM_FN_LIST_WALK, args, head == nullptr ? 0 : n);
}

TEST(VirtualMemoryDaemon, AisleReachesWindowsOnlyPhasevFaultsInTheRest) {
  DaemonProcess d(kConfig);
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  auto q = rt->create_queue(64);
  ASSERT_TRUE(q);
  constexpr uint64_t n = 20000;  // 320 KB: 79 pages, beyond the 64-entry TLB
  const int64_t sum = static_cast<int64_t>(n * (n + 1) / 2);
  std::vector<tandem_list_node_t> heap(n);
  const tandem_list_node_t* heap_head = funcs::ref::link_random_list(heap, 11);
  auto* window = static_cast<tandem_list_node_t*>(rt->alloc(n * sizeof(tandem_list_node_t)));
  ASSERT_NE(window, nullptr);
  const tandem_list_node_t* window_head = funcs::ref::link_random_list({window, n}, 12);

  // AISLE (the default): the registered window only.
  EXPECT_EQ(walk(*rt, *q.value(), window_head, n).value, sum);
  EXPECT_EQ(walk(*rt, *q.value(), heap_head, n).status, Status::translation_fault);

  // PHASE/V: the heap too, faulted in page by page; and the window, through the TLB.
  ASSERT_EQ(rt->set_address_mode(TANDEM_ADDRESS_PHASEV), Status::ok);
  EXPECT_EQ(walk(*rt, *q.value(), heap_head, n).value, sum);
  EXPECT_EQ(walk(*rt, *q.value(), window_head, n).value, sum);
  // The client changes its list between jobs: the next job sees it (frames live for one job only).
  heap[0].value += 1000;
  EXPECT_EQ(walk(*rt, *q.value(), heap_head, n).value, sum + 1000);

  // A node pointing at a page the client does not have: that job fails, the session carries on.
  void* hole = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  munmap(hole, 4096);
  std::vector<tandem_list_node_t> broken(3);
  funcs::ref::link_random_list(broken, 1);
  broken[0].next = reinterpret_cast<uintptr_t>(hole);
  broken[1].next = 0xffff888000000000ull;  // a kernel address: never the session's
  EXPECT_EQ(walk(*rt, *q.value(), &broken[0], 3).status, Status::translation_fault);
  EXPECT_EQ(walk(*rt, *q.value(), &broken[1], 3).status, Status::translation_fault);
  EXPECT_EQ(walk(*rt, *q.value(), heap_head, n).value, sum + 1000);
  EXPECT_EQ(rt->set_address_mode(7), Status::invalid_argument);

  const auto status = testing::daemon_status(d);
  ASSERT_TRUE(status.contains("device_tlb"));
  const auto& sessions = status["device_tlb"]["sessions"];
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0]["address_mode"], "phasev");
  EXPECT_GT(sessions[0]["walks"].get<uint64_t>(), 0u) << "79 pages at random thrash 64 entries";
  EXPECT_GE(sessions[0]["faults"].get<uint64_t>(), 3u * 79) << "the heap list's pages, once per job";
  bool found = false;
  for (const auto& f : status["device_tlb"]["functions"]) found = found || f["function"] == "list_walk";
  EXPECT_TRUE(found);
  rt->free(window);
}

TEST(VirtualMemoryDaemon, PhasevFaultsInTheBuffersOfStreamingFunctions) {
  DaemonProcess d(kConfig);
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  auto q = rt->create_queue(16);
  ASSERT_TRUE(q);
  std::vector<int32_t> data(50'000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i % 1000) - 300;
  int64_t expected = 0;
  for (int32_t v : data) expected += v;
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data.data()), data.size()};
  // Zero-copy names the heap directly: outside AISLE's windows.
  EXPECT_EQ(dispatch_wait(*rt, *q.value(), TANDEM_FN_ACCUMULATE, args, data.size() * 4).status, Status::translation_fault);
  ASSERT_EQ(rt->set_address_mode(TANDEM_ADDRESS_PHASEV), Status::ok);
  const Outcome o = dispatch_wait(*rt, *q.value(), TANDEM_FN_ACCUMULATE, args, data.size() * 4);
  EXPECT_EQ(o.status, Status::ok);
  EXPECT_EQ(o.value, expected);
  // A buffer running into unmapped memory is not the session's: TRANSLATION_FAULT.
  char* two = static_cast<char*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(two, MAP_FAILED);
  munmap(two + 4096, 4096);
  const uint64_t torn[2] = {reinterpret_cast<uintptr_t>(two), 2048};
  EXPECT_EQ(dispatch_wait(*rt, *q.value(), TANDEM_FN_ACCUMULATE, torn, 8192).status, Status::translation_fault);
  munmap(two, 4096);
  const auto status = testing::daemon_status(d);
  uint64_t faults = 0;
  for (const auto& f : status["device_tlb"]["functions"]) {
    if (f["function"] == "accumulate") faults = f["faults"].get<uint64_t>();
  }
  EXPECT_GE(faults, 49u) << "the 200 KB buffer's pages were faulted in";
}

// Unmapping a range while a job runs on it: the translation is shot down at once, the job finishes on
// the pages it holds (tandemd retires the mapping only when no job of the session can use it) or fails
// cleanly, the daemon never reads freed memory, and a job sent afterwards faults. Both modes: an AISLE
// window unregistered, and PHASE/V heap pages unmapped by the client.
TEST(VirtualMemoryDaemon, UnmappingARangeWhileAJobRunsOnItNeverReadsFreedMemory) {
  // Slow accumulate (1e8 bytes/s): a 4 MiB job is held about 42 ms, long enough to unmap under it.
  DaemonProcess d("[device.emu]\nslots = 2\nresident = [\"accumulate\", \"accumulate\"]\n"
                  "[functions.accumulate]\nthroughput = 1e8\nlatency_us = 1\n");
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  auto q = rt->create_queue(16);
  ASSERT_TRUE(q);
  constexpr size_t kCount = 1u << 20;  // int32: 4 MiB
  constexpr size_t kBytes = kCount * sizeof(int32_t);
  const auto fill = [](int32_t* p) {
    int64_t sum = 0;
    for (size_t i = 0; i < kCount; ++i) sum += p[i] = static_cast<int32_t>(i % 977) - 400;
    return sum;
  };
  const auto outcome_is_clean = [](const Outcome& o, int64_t sum) {
    return (o.status == Status::ok && o.value == sum) || o.status == Status::translation_fault ||
           o.status == Status::buffer_unmapped;
  };

  // AISLE: a registered memfd window, unregistered and unmapped while its job is held.
  const int fd = memfd_create("tandem-unmap-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, kBytes), 0);
  auto* window = static_cast<int32_t*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(window, MAP_FAILED);
  const int64_t sum = fill(window);
  std::string why;
  ASSERT_EQ(rt->register_memory(window, kBytes, fd, 0, &why), Status::ok) << why;
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(window), kCount};
  auto* rec = static_cast<tandem_completion_t*>(rt->alloc(sizeof(tandem_completion_t)));
  ASSERT_NE(rec, nullptr);
  rt::reset_record(rec);
  ASSERT_EQ(q.value()->dispatch(TANDEM_FN_ACCUMULATE, args, 2, kBytes, rec), Status::ok);
  ASSERT_EQ(rt->unregister_memory(window), Status::ok);
  ASSERT_EQ(munmap(window, kBytes), 0);
  close(fd);
  rt::WaitPolicy policy;
  policy.timeout_ns = 10'000'000'000;
  Outcome held;
  held.status = rt->wait(rec, policy);
  held.value = rec->value;
  EXPECT_TRUE(outcome_is_clean(held, sum)) << "status " << static_cast<int>(held.status) << " value " << held.value;
  EXPECT_EQ(dispatch_wait(*rt, *q.value(), TANDEM_FN_ACCUMULATE, args, kBytes).status, Status::translation_fault)
      << "the window is gone: nothing translates it";

  // PHASE/V: heap pages the daemon faulted in, unmapped by the client under a running job.
  ASSERT_EQ(rt->set_address_mode(TANDEM_ADDRESS_PHASEV), Status::ok);
  auto* heap = static_cast<int32_t*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(heap, MAP_FAILED);
  const int64_t heap_sum = fill(heap);
  const uint64_t heap_args[2] = {reinterpret_cast<uintptr_t>(heap), kCount};
  rt::reset_record(rec);
  ASSERT_EQ(q.value()->dispatch(TANDEM_FN_ACCUMULATE, heap_args, 2, kBytes, rec), Status::ok);
  ASSERT_EQ(munmap(heap, kBytes), 0);
  held.status = rt->wait(rec, policy);
  held.value = rec->value;
  EXPECT_TRUE(outcome_is_clean(held, heap_sum)) << "status " << static_cast<int>(held.status) << " value " << held.value;
  EXPECT_EQ(dispatch_wait(*rt, *q.value(), TANDEM_FN_ACCUMULATE, heap_args, kBytes).status, Status::translation_fault)
      << "the pages are gone from the client: the fault-in finds nothing";

  // The daemon and the session carry on.
  auto* alive = static_cast<int32_t*>(rt->alloc(64 * sizeof(int32_t)));
  ASSERT_NE(alive, nullptr);
  for (int i = 0; i < 64; ++i) alive[i] = i;
  const uint64_t alive_args[2] = {reinterpret_cast<uintptr_t>(alive), 64};
  const Outcome after = dispatch_wait(*rt, *q.value(), TANDEM_FN_ACCUMULATE, alive_args, 64 * sizeof(int32_t));
  EXPECT_EQ(after.status, Status::ok);
  EXPECT_EQ(after.value, 64 * 63 / 2);
  rt->free(alive);
  rt->free(rec);
}

}  // namespace
}  // namespace tandem
