// Virtual memory for accelerators (issue 12): the device TLB, list_walk's reference and catalog entry,
// demand paging through a PagedPort, and the emulated fabric charging page walks under PHASE/V.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <numeric>
#include <random>
#include <vector>

#include "devices/device_tlb.hpp"
#include "devices/emu/emu_device.hpp"
#include "funcs/function.hpp"
#include "funcs/ref/list_walk_ref.hpp"
#include "rt/address_space.hpp"
#include "rt/paged_port.hpp"

namespace tandem {
namespace {

using devices::DeviceTlb;
using devices::TlbSettings;

constexpr uint64_t kPage = 4096;

TEST(DeviceTlb, WorkingSetThatFitsHitsAfterTheFirstPass) {
  DeviceTlb tlb(TlbSettings{}, 1);  // 64 entries, direct mapped (seed 004)
  const uint64_t base = 0x7f0000000000;
  uint64_t misses = 0;
  for (int pass = 0; pass < 3; ++pass) {
    for (uint64_t p = 0; p < 64; ++p) misses += tlb.lookup(0, 1, base + p * kPage + 100) ? 0 : 1;
  }
  EXPECT_EQ(misses, 64u) << "64 contiguous pages fill the 64 sets once";
}

TEST(DeviceTlb, ThrashesBeyondItsReachAndAssociativityHelpsConflicts) {
  const uint64_t base = 0x7f0000000000;
  // 128 pages at random: about half the lookups of a direct-mapped 64-entry TLB miss.
  DeviceTlb direct(TlbSettings{}, 1);
  std::mt19937_64 rng(1);
  uint64_t hits = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) hits += direct.lookup(0, 1, base + (rng() % 128) * kPage) ? 1 : 0;
  EXPECT_NEAR(static_cast<double>(hits) / n, 0.5, 0.05);
  // Two pages that conflict in a direct-mapped TLB (64 pages apart) coexist in a 2-way one.
  TlbSettings two_way;
  two_way.ways = 2;
  DeviceTlb assoc(two_way, 1), conflicting(TlbSettings{}, 1);
  for (int i = 0; i < 10; ++i) {
    for (uint64_t p : {uint64_t{0}, uint64_t{64}}) {
      assoc.lookup(0, 1, base + p * kPage);
      conflicting.lookup(0, 1, base + p * kPage);
    }
  }
  EXPECT_TRUE(assoc.lookup(0, 1, base));
  EXPECT_FALSE(conflicting.lookup(0, 1, base)) << "direct mapped: page 64 evicted page 0";
}

TEST(DeviceTlb, EntriesAreTaggedPerSessionPerSlotAndShotDown) {
  TlbSettings per_slot;
  per_slot.per_slot = true;
  DeviceTlb tlb(per_slot, 2);
  const uint64_t a = 0x10000;
  EXPECT_FALSE(tlb.lookup(0, 7, a));
  EXPECT_TRUE(tlb.lookup(0, 7, a));
  EXPECT_FALSE(tlb.lookup(1, 7, a)) << "slot 1 has its own TLB";
  EXPECT_FALSE(tlb.lookup(0, 8, a)) << "another session's same address is another translation";
  EXPECT_FALSE(tlb.lookup(0, 7, a)) << "direct mapped: session 8's entry replaced session 7's";
  tlb.shoot_down(7, a, kPage);
  EXPECT_FALSE(tlb.lookup(0, 7, a));
  tlb.shoot_down(7);
  EXPECT_FALSE(tlb.lookup(1, 7, a));
}

TEST(ListWalk, ReferenceSumsEveryNodeOnceAndStopsAtMaxNodes) {
  std::vector<tandem_list_node_t> nodes(1000);
  const tandem_list_node_t* head = funcs::ref::link_random_list(nodes, 3);
  EXPECT_EQ(funcs::ref::list_walk(head, 1000), 1000 * 1001 / 2);
  EXPECT_EQ(funcs::ref::list_walk(head, 1), head->value);
  EXPECT_EQ(funcs::ref::list_walk(head, 5000), 1000 * 1001 / 2) << "a next of 0 ends the list";
  EXPECT_EQ(funcs::ref::list_walk(nullptr, 10), 0);
}

TEST(ListWalk, CatalogEntryFollowsPointersAndIsNotSplit) {
  const funcs::FunctionInfo* fn = funcs::find_function("list_walk");
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn->id, TANDEM_FN_LIST_WALK);
  EXPECT_TRUE(fn->follows_pointers);
  EXPECT_EQ(fn->granularity, funcs::kNotSplittable);
  std::vector<tandem_list_node_t> nodes(100);
  const tandem_list_node_t* head = funcs::ref::link_random_list(nodes, 9);
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(head), 100};
  funcs::Call call;
  funcs::BufferList buffers;
  ASSERT_EQ(funcs::describe_call(*fn, args, call, buffers), Status::ok);
  EXPECT_EQ(call.workload, 100u);
  EXPECT_EQ(buffers.count, 0u) << "its nodes are found by walking, not named up front";
  EXPECT_EQ(funcs::run_sw(*fn, call), 5050);
  EXPECT_EQ(fn->run_accel(call, 0, call.workload), 0) << "without a port the accelerator follows nothing";
  const uint64_t too_many[2] = {reinterpret_cast<uintptr_t>(head), (uint64_t{1} << 32) + 1};
  EXPECT_EQ(funcs::describe_call(*fn, too_many, call, buffers), Status::invalid_argument);
}

TEST(PagedPort, FaultsPagesInFromTheProcessAndRefusesUnmappedOnes) {
  rt::IdentityAddressSpace self;
  std::vector<tandem_list_node_t> nodes(3000);  // 48 KB: 12 or 13 pages
  funcs::ref::link_random_list(nodes, 5);
  auto port = self.open_port(TANDEM_ADDRESS_PHASEV);
  uint64_t sum = 0;
  for (const tandem_list_node_t& n : nodes) {
    tandem_list_node_t copy;
    ASSERT_TRUE(port->read(reinterpret_cast<uintptr_t>(&n), &copy, sizeof copy));
    sum += static_cast<uint64_t>(copy.value);
  }
  EXPECT_EQ(sum, 3000u * 3001 / 2);
  EXPECT_GE(port->faults(), 12u);
  EXPECT_LE(port->faults(), 13u) << "each page faulted in once";
  EXPECT_GT(port->fault_ns(), 0);
  // A page the process does not have mapped: TRANSLATION_FAULT, and the port reads nothing more.
  void* hole = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  munmap(hole, kPage);
  tandem_list_node_t copy;
  EXPECT_FALSE(port->read(reinterpret_cast<uintptr_t>(hole), &copy, sizeof copy));
  EXPECT_EQ(port->status(), Status::translation_fault);
  EXPECT_FALSE(port->read(reinterpret_cast<uintptr_t>(&nodes[0]), &copy, sizeof copy));
  // Kernel addresses and null are never the session's.
  auto other = self.open_port(TANDEM_ADDRESS_PHASEV);
  EXPECT_FALSE(other->read(0xffff800000000000ull, &copy, sizeof copy));
  EXPECT_EQ(other->status(), Status::translation_fault);
  // Embedded AISLE reads the same way but its reads are not the job's faults.
  auto aisle = self.open_port(TANDEM_ADDRESS_AISLE);
  ASSERT_TRUE(aisle->read(reinterpret_cast<uintptr_t>(&nodes[7]), &copy, sizeof copy));
  EXPECT_EQ(aisle->faults(), 0u);
}

TEST(PagedPort, AisleWindowsOnlyWithoutDemandPaging) {
  // A window of one page: reads inside it translate, a read outside is refused, never faulted in.
  struct OnePage final : rt::AddressSpace {
    std::vector<char> bytes = std::vector<char>(kPage, 'x');
    uint64_t base = 0x40000000;
    void* translate(uint64_t address, uint64_t n, bool) override {
      if (address < base || address + n > base + kPage) return nullptr;
      return bytes.data() + (address - base);
    }
  } space;
  auto port = space.open_port(TANDEM_ADDRESS_AISLE);
  char buf[8];
  EXPECT_TRUE(port->read(space.base + 8, buf, 8));
  EXPECT_EQ(buf[0], 'x');
  EXPECT_FALSE(port->read(space.base + kPage, buf, 8));
  EXPECT_EQ(port->status(), Status::translation_fault);
  EXPECT_EQ(port->faults(), 0u);
}

// The emulated fabric: list_walk through a port, with and without the TLB.
struct EmuListRun {
  int64_t value = 0;
  int64_t device_ns = 0;
  devices::TlbCounts tlb;
  Status status = Status::ok;
};

EmuListRun run_emu_list_walk(devices::EmuDevice& emu, rt::AddressSpace& space, const tandem_list_node_t* head,
                             uint64_t count, uint8_t mode) {
  devices::DeviceJob job;
  job.token = 1;
  job.start_ns = 1;
  job.call.function = TANDEM_FN_LIST_WALK;
  job.call.arg_count = 2;
  job.call.args[0] = reinterpret_cast<uintptr_t>(head);
  job.call.args[1] = count;
  job.call.workload = count;
  auto port = space.open_port(mode);
  job.call.memory = port.get();
  job.address_mode = mode;
  job.asid = 1;
  emu.submit(0, job);
  std::vector<devices::DeviceCompletion> out;
  emu.poll(INT64_MAX, out);
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? EmuListRun{} : EmuListRun{out[0].value, out[0].device_ns, out[0].tlb, out[0].status};
}

TEST(EmuDevice, ListWalkPaysPageWalksUnderPhasevOnlyOnceTheListOutgrowsTheTlb) {
  std::array<model::AccelModel, TANDEM_FN_MAX> models{};
  models[TANDEM_FN_LIST_WALK] = model::AccelModel{1e8, 0, 0, 0};  // 10 ns per node
  devices::EmuDevice emu(1, models);
  emu.configure(0, TANDEM_FN_LIST_WALK);
  rt::IdentityAddressSpace self;
  for (uint64_t n : {uint64_t{16 * 1024}, uint64_t{128 * 1024}}) {  // 64 pages (fits), 512 pages (thrashes)
    std::vector<tandem_list_node_t> nodes(n);
    const tandem_list_node_t* head = funcs::ref::link_random_list(nodes, n);
    const int64_t expected = static_cast<int64_t>(n * (n + 1) / 2);
    const EmuListRun aisle = run_emu_list_walk(emu, self, head, n, TANDEM_ADDRESS_AISLE);
    const EmuListRun phasev = run_emu_list_walk(emu, self, head, n, TANDEM_ADDRESS_PHASEV);
    EXPECT_EQ(aisle.value, expected);
    EXPECT_EQ(phasev.value, expected);
    EXPECT_EQ(aisle.tlb.hits + aisle.tlb.misses, 0u) << "AISLE translates with an offset: no TLB";
    EXPECT_EQ(phasev.tlb.hits + phasev.tlb.misses, n) << "one lookup per node";
    EXPECT_GT(phasev.tlb.faults, 0u) << "the list's pages were faulted in";
    const double walks_per_node = static_cast<double>(phasev.tlb.misses) / static_cast<double>(n);
    if (n == 16 * 1024) {
      EXPECT_LT(walks_per_node, 0.02) << "the 64 pages fit the 64-entry TLB (seed 004: PHASE/V ~ AISLE)";
    } else {
      EXPECT_GT(walks_per_node, 0.8) << "512 pages thrash it";
      EXPECT_GT(phasev.device_ns, aisle.device_ns + static_cast<int64_t>(n) * 10) << "walks cost device time";
    }
  }
}

TEST(EmuDevice, ListWalkThroughAnUnmappedNodeFailsWithTranslationFault) {
  std::array<model::AccelModel, TANDEM_FN_MAX> models{};
  models[TANDEM_FN_LIST_WALK] = model::AccelModel{1e8, 0, 0, 0};
  devices::EmuDevice emu(1, models);
  emu.configure(0, TANDEM_FN_LIST_WALK);
  rt::IdentityAddressSpace self;
  void* hole = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  munmap(hole, kPage);
  std::vector<tandem_list_node_t> nodes(10);
  funcs::ref::link_random_list(nodes, 1);
  tandem_list_node_t* head = &nodes[0];
  head->next = reinterpret_cast<uintptr_t>(hole);
  for (uint8_t mode : {uint8_t{TANDEM_ADDRESS_AISLE}, uint8_t{TANDEM_ADDRESS_PHASEV}}) {
    const EmuListRun r = run_emu_list_walk(emu, self, head, 10, mode);
    EXPECT_EQ(r.status, Status::translation_fault);
    EXPECT_EQ(r.value, 0);
  }
}

// Thesis Fig 5.6's TLB dimension: under PHASE/V the device fetches an indirect dispatch's argument
// block through its TLB (the CSR manager's read of the argument list), and a walk there costs
// walk_reads streaming reads of device time. AISLE and inline arguments do not touch the TLB.
TEST(EmuDevice, PhasevFetchesAnIndirectArgumentBlockThroughTheTlb) {
  std::array<model::AccelModel, TANDEM_FN_MAX> models{};  // nop: no device time of its own
  TlbSettings tlb;
  tlb.walk_reads = 2;
  tlb.read_s = 200e-9;
  devices::EmuDevice emu(1, models, {}, tlb);
  emu.configure(0, TANDEM_FN_NOP);
  const auto run = [&](uint8_t mode, uint64_t address, uint32_t bytes) {
    devices::DeviceJob job;
    job.token = 1;
    job.start_ns = 1;
    job.call.function = TANDEM_FN_NOP;
    job.call.arg_count = bytes / 8;
    job.address_mode = mode;
    job.asid = 3;
    job.args_address = address;
    job.args_bytes = bytes;
    emu.submit(0, job);
    std::vector<devices::DeviceCompletion> out;
    emu.poll(INT64_MAX, out);
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? devices::DeviceCompletion{} : out[0];
  };
  const uint64_t block = 0x7f0000005000;
  devices::DeviceCompletion c = run(TANDEM_ADDRESS_AISLE, block, 64);
  EXPECT_EQ(c.tlb.hits + c.tlb.misses, 0u) << "AISLE: no device TLB";
  EXPECT_EQ(c.device_ns, 0);
  c = run(TANDEM_ADDRESS_PHASEV, block, 64);
  EXPECT_EQ(c.status, Status::ok);
  EXPECT_EQ(c.tlb.misses, 1u) << "the block's page was not cached: one walk";
  EXPECT_EQ(c.tlb.hits, 0u);
  EXPECT_GE(c.device_ns, 400) << "a walk is 2 reads of 200 ns";
  EXPECT_LE(c.device_ns, 401);
  c = run(TANDEM_ADDRESS_PHASEV, block + 512, 256);
  EXPECT_EQ(c.tlb.hits, 1u) << "same page: the translation is cached";
  EXPECT_EQ(c.tlb.misses, 0u);
  EXPECT_EQ(c.device_ns, 0) << "a hit costs nothing extra";
  c = run(TANDEM_ADDRESS_PHASEV, block + kPage - 64, 128);
  EXPECT_EQ(c.tlb.hits, 1u) << "a block across a page boundary: both pages looked up";
  EXPECT_EQ(c.tlb.misses, 1u);
  c = run(TANDEM_ADDRESS_PHASEV, 0, 0);
  EXPECT_EQ(c.tlb.hits + c.tlb.misses, 0u) << "inline arguments are not fetched";
  EXPECT_EQ(c.device_ns, 0);
  // 64 entries direct mapped: a page 64 pages away evicts the block's translation.
  run(TANDEM_ADDRESS_PHASEV, block + 64 * kPage, 64);
  c = run(TANDEM_ADDRESS_PHASEV, block, 64);
  EXPECT_EQ(c.tlb.misses, 1u);
}

}  // namespace
}  // namespace tandem
