// The Verilog list_walk (rtl/list_walk: its reads translated by the Verilog TLB, page walks served by
// the slot): results equal funcs::ref::list_walk for random lists spread over many pages, in both
// address modes, on the fabric and through the embedded runtime; a pointer outside the session ends
// the job with TRANSLATION_FAULT and the slot's next job is right; the Verilog TLB's hits and misses
// equal the C++ DeviceTlb model's for the same geometry (64 entries, direct mapped) and pages.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "client/embedded.hpp"
#ifdef TANDEM_TANDEMD_PATH
#include "daemon_harness.hpp"
#endif
#include "devices/device_tlb.hpp"
#include "devices/rtl/rtl_catalog.hpp"
#include "devices/rtl/rtl_fabric.hpp"
#include "funcs/ref/list_walk_ref.hpp"
#include "rt/address_space.hpp"
#include "rt/completion.hpp"
#include "rtl_test_util.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

namespace rtl = devices::rtl;
using testing::TestRng;

constexpr uint64_t kPage = 4096;

// Nodes scattered over `pages` pages of one page-aligned arena, linked in a random order with random
// values (negative ones too: the sum wraps). Every 16th node starts in the last 8 bytes of a page, so
// its value word lies on the next page.
class ScatteredList {
 public:
  // In a heap arena of its own, or in `arena` (at least (pages + 1) pages, page-aligned, not freed here).
  ScatteredList(size_t nodes, size_t pages, uint64_t seed, char* arena = nullptr)
      : pages_(pages), owned_(arena == nullptr) {
    arena_ = owned_ ? static_cast<char*>(std::aligned_alloc(kPage, (pages + 1) * kPage)) : arena;
    std::memset(arena_, 0, (pages + 1) * kPage);
    TestRng rng(seed);
    std::vector<bool> used((pages + 1) * kPage / 8, false);
    for (size_t i = 0; i < nodes; ++i) {
      for (int attempt = 0;; ++attempt) {
        const uint64_t page = rng.below(static_cast<uint32_t>(pages));
        const bool straddle = i % 16 == 15 && attempt < 8;
        const uint64_t offset = straddle ? kPage - 8 : 8 * rng.below(kPage / 8 - 1);
        const uint64_t at = page * kPage + offset;
        if (used[at / 8] || used[at / 8 + 1]) continue;
        used[at / 8] = used[at / 8 + 1] = true;
        nodes_.push_back(reinterpret_cast<tandem_list_node_t*>(arena_ + at));
        break;
      }
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      tandem_list_node_t n;
      n.next = i + 1 < nodes_.size() ? reinterpret_cast<uintptr_t>(nodes_[i + 1]) : 0;
      n.value = static_cast<int64_t>(rng.next());
      std::memcpy(nodes_[i], &n, sizeof n);
    }
  }
  ~ScatteredList() {
    if (owned_) std::free(arena_);
  }
  ScatteredList(const ScatteredList&) = delete;
  ScatteredList& operator=(const ScatteredList&) = delete;

  uint64_t head() const { return nodes_.empty() ? 0 : reinterpret_cast<uintptr_t>(nodes_[0]); }
  tandem_list_node_t* node(size_t i) { return nodes_[i]; }
  int64_t reference(uint64_t max_nodes) const {
    return funcs::ref::list_walk(reinterpret_cast<const tandem_list_node_t*>(head()), max_nodes);
  }
  // The TLB lookups the walk makes: every page each visited node's 16 bytes touch, in order.
  std::vector<uint64_t> pages_touched(uint64_t max_nodes) const {
    std::vector<uint64_t> out;
    for (size_t i = 0; i < nodes_.size() && i < max_nodes; ++i) {
      const uint64_t a = reinterpret_cast<uintptr_t>(nodes_[i]);
      for (uint64_t p = a / kPage; p <= (a + 15) / kPage; ++p) out.push_back(p * kPage);
    }
    return out;
  }

 private:
  size_t pages_;
  bool owned_;
  char* arena_ = nullptr;
  std::vector<tandem_list_node_t*> nodes_;
};

funcs::Call list_call(uint64_t head, uint64_t max_nodes, funcs::MemoryPort* port) {
  funcs::Call call;
  call.function = TANDEM_FN_LIST_WALK;
  call.arg_count = 2;
  call.args[0] = head;
  call.args[1] = max_nodes;
  call.workload = head == 0 ? 0 : max_nodes;
  call.memory = port;
  return call;
}

struct Walked {
  rtl::ExecResult result;
  std::string error;
};

Walked walk(rtl::RtlFabric& fabric, rt::AddressSpace& space, uint8_t mode, uint64_t head, uint64_t max_nodes,
            uint32_t asid = 1) {
  auto port = space.open_port(mode);
  Walked w;
  w.result = fabric.execute(0, list_call(head, max_nodes, port.get()), rtl::MemoryContext{asid, mode, false});
  w.error = fabric.last_error(0);
  return w;
}

std::unique_ptr<rtl::RtlFabric> list_walk_fabric() {
  auto fabric = std::make_unique<rtl::RtlFabric>(1, rtl::RtlFabricOptions{});
  fabric->configure(0, TANDEM_FN_LIST_WALK);
  EXPECT_EQ(fabric->loaded(0), TANDEM_FN_LIST_WALK) << fabric->last_error(0);
  return fabric;
}

TEST(RtlListWalk, EqualsTheReferenceInBothAddressModes) {
  auto fabric = list_walk_fabric();
  rt::IdentityAddressSpace space;
  struct Size {
    size_t nodes, pages;
  };
  for (const Size size : {Size{1, 1}, Size{40, 8}, Size{300, 200}, Size{1200, 400}}) {
    ScatteredList list(size.nodes, size.pages, size.nodes * 7 + 1);
    for (uint8_t mode : {uint8_t{TANDEM_ADDRESS_AISLE}, uint8_t{TANDEM_ADDRESS_PHASEV}}) {
      for (uint64_t max_nodes : {uint64_t{size.nodes}, uint64_t{size.nodes} / 2 + 1, uint64_t{size.nodes} + 5}) {
        const Walked w = walk(*fabric, space, mode, list.head(), max_nodes);
        ASSERT_EQ(w.result.status, Status::ok) << size.nodes << " nodes: " << w.error;
        EXPECT_EQ(w.result.value, list.reference(max_nodes)) << size.nodes << " nodes, mode " << int{mode};
        EXPECT_EQ(w.result.nodes, std::min<uint64_t>(max_nodes, size.nodes));
        EXPECT_EQ(w.result.tlb.hits + w.result.tlb.misses, list.pages_touched(max_nodes).size());
        EXPECT_GT(w.result.device_ns, 0);
        if (size.pages > 64) {
          EXPECT_GT(w.result.tlb.misses, 64u) << "a list over many pages misses in the TLB";
        }
      }
    }
  }
  EXPECT_EQ(walk(*fabric, space, TANDEM_ADDRESS_AISLE, 0, 10).result.value, 0) << "an empty list";
}

// A page walk costs walk_reads (1.5) reads of 20 cycles under PHASE/V, the window lookup 2 cycles under
// AISLE: from an empty TLB each (another asid), the same lookups differ by exactly 28 cycles per miss.
TEST(RtlListWalk, PageWalksCostCyclesOnlyUnderPhaseV) {
  auto fabric = list_walk_fabric();
  rt::IdentityAddressSpace space;
  ScatteredList list(400, 300, 5);
  const uint64_t c0 = fabric->stats(0).cycles;
  const Walked aisle = walk(*fabric, space, TANDEM_ADDRESS_AISLE, list.head(), 400, 1);
  const uint64_t c1 = fabric->stats(0).cycles;
  const Walked phasev = walk(*fabric, space, TANDEM_ADDRESS_PHASEV, list.head(), 400, 2);  // empty TLB again
  const uint64_t c2 = fabric->stats(0).cycles;
  ASSERT_EQ(aisle.result.status, Status::ok);
  ASSERT_EQ(phasev.result.status, Status::ok);
  EXPECT_EQ(aisle.result.tlb.misses, phasev.result.tlb.misses) << "the same lookups from an empty TLB";
  EXPECT_EQ((c2 - c1) - (c1 - c0), phasev.result.tlb.misses * (30 - 2));
}

// Every lookup a hit (one page, the TLB warm): exactly the catalog's cycles per node, which the rtl
// device's timing model uses; a miss adds the walk and one cycle.
TEST(RtlListWalk, CyclesPerNodeAreTheNominalFit) {
  auto fabric = list_walk_fabric();
  rt::IdentityAddressSpace space;
  auto* page = static_cast<tandem_list_node_t*>(std::aligned_alloc(kPage, kPage));
  std::span<tandem_list_node_t> nodes(page, kPage / sizeof(tandem_list_node_t));
  const uint64_t head = reinterpret_cast<uintptr_t>(funcs::ref::link_random_list(nodes, 4));
  auto cycles_of = [&](uint64_t n) {
    const uint64_t before = fabric->stats(0).cycles;
    const Walked w = walk(*fabric, space, TANDEM_ADDRESS_PHASEV, head, n);
    EXPECT_EQ(w.result.status, Status::ok) << w.error;
    return std::pair{fabric->stats(0).cycles - before, w.result.tlb.misses};
  };
  const auto [cold, cold_misses] = cycles_of(100);  // the first lookup misses (and the TLB is flushed)
  const auto [warm, warm_misses] = cycles_of(100);
  const auto [longer, longer_misses] = cycles_of(200);
  EXPECT_EQ(cold_misses, 1u);
  EXPECT_EQ(warm_misses, 0u);
  EXPECT_EQ(longer_misses, 0u);
  const double per_node = rtl::kListWalkAccelerator.cycles_per_unit;
  EXPECT_EQ(longer - warm, static_cast<uint64_t>(100 * per_node));
  EXPECT_EQ(warm, static_cast<uint64_t>(100 * per_node + rtl::kListWalkAccelerator.fixed_cycles));
  EXPECT_EQ(cold - warm, 1u + 30 + 1) << "the flush cycle, the walk and its extra cycle";
  std::free(page);
}

// The Verilog TLB against devices::DeviceTlb (the emulated device's model) in the geometry both use by
// default: 64 entries, direct mapped (where LRU and round-robin replacement agree). Two jobs in a row
// of the same address space: the second starts with what the first left.
TEST(RtlListWalk, TlbCountsEqualTheDeviceTlbModel) {
  auto fabric = list_walk_fabric();
  rt::IdentityAddressSpace space;
  devices::DeviceTlb model(devices::TlbSettings{}, 1);
  ASSERT_EQ(model.entries(), 64u);
  ASSERT_EQ(model.ways(), 1u);
  for (const auto& [nodes, pages, seed] : {std::tuple{500, 100, 11}, std::tuple{700, 40, 12}}) {
    ScatteredList list(nodes, pages, seed);
    uint64_t hits = 0, misses = 0;
    for (uint64_t page : list.pages_touched(nodes)) (model.lookup(0, 1, page) ? hits : misses) += 1;
    const Walked w = walk(*fabric, space, TANDEM_ADDRESS_PHASEV, list.head(), nodes, 1);
    ASSERT_EQ(w.result.status, Status::ok) << w.error;
    EXPECT_EQ(w.result.tlb.hits, hits) << nodes << " nodes over " << pages << " pages";
    EXPECT_EQ(w.result.tlb.misses, misses) << nodes << " nodes over " << pages << " pages";
    EXPECT_GT(hits, 0u);
    EXPECT_GT(misses, 0u);
  }
}

TEST(RtlListWalk, BadPointersFailTheJobAndTheSlotServesTheNext) {
  auto fabric = list_walk_fabric();
  rt::IdentityAddressSpace space;
  ScatteredList list(50, 20, 3);
  for (uint8_t mode : {uint8_t{TANDEM_ADDRESS_AISLE}, uint8_t{TANDEM_ADDRESS_PHASEV}}) {
    const uint64_t saved = list.node(20)->next;
    list.node(20)->next = 0x10;  // the zero page: never mapped
    const Walked bad = walk(*fabric, space, mode, list.head(), 50);
    EXPECT_EQ(bad.result.status, Status::translation_fault) << bad.error;
    EXPECT_EQ(bad.result.nodes, 21u) << "the walk stopped at the bad pointer";
    list.node(20)->next = saved;
    const Walked good = walk(*fabric, space, mode, list.head(), 50);
    ASSERT_EQ(good.result.status, Status::ok) << good.error;
    EXPECT_EQ(good.result.value, list.reference(50));
    // A node address that is not 8-byte aligned: refused, nothing read beyond.
    const Walked odd = walk(*fabric, space, mode, list.head() + 4, 50);
    EXPECT_EQ(odd.result.status, Status::invalid_argument) << odd.error;
    EXPECT_EQ(walk(*fabric, space, mode, list.head(), 50).result.value, list.reference(50));
  }
  EXPECT_EQ(fabric->stats(0).models_built, 1u) << "no reconfiguration was needed";
}

// ---------------- end to end: the embedded runtime with an rtl slot loaded with list_walk ----------------

constexpr const char* kListWalkConfig = "[device]\nkinds = [\"rtl\"]\n[device.rtl]\nslots = 1\nresident = [\"list_walk\"]\n";

Status walk_packet(client::Runtime& rt, uint64_t head, uint64_t max_nodes, tandem_completion_t& rec) {
  rt::reset_record(&rec);
  const uint64_t args[2] = {head, max_nodes};
  const Status s = rt.default_queue().dispatch(TANDEM_FN_LIST_WALK, args, 2, head == 0 ? 0 : max_nodes, &rec);
  if (s != Status::ok) return s;
  return rt.wait(&rec, {});
}

TEST(RtlListWalkRuntime, PacketsEqualTheReferenceInBothAddressModesAndFaultsAreContained) {
  auto rt = testing::open_embedded(kListWalkConfig, client::Mode::hw);
  ASSERT_TRUE(rt);
  for (uint8_t mode : {uint8_t{TANDEM_ADDRESS_AISLE}, uint8_t{TANDEM_ADDRESS_PHASEV}}) {
    ASSERT_EQ(rt->set_address_mode(mode), Status::ok);
    for (size_t nodes : {size_t{1}, size_t{257}, size_t{900}}) {
      ScatteredList list(nodes, 300, nodes + mode);
      tandem_completion_t rec;
      ASSERT_EQ(walk_packet(*rt, list.head(), nodes, rec), Status::ok) << nodes << " nodes, mode " << int{mode};
      EXPECT_EQ(rec.value, list.reference(nodes)) << nodes << " nodes, mode " << int{mode};
      EXPECT_EQ(rec.slot, 0u);
      EXPECT_GT(rec.device_ns, 0u);
    }
    ScatteredList list(60, 30, 9);
    const uint64_t saved = list.node(30)->next;
    list.node(30)->next = 0x10;  // outside the session's memory
    tandem_completion_t rec;
    EXPECT_EQ(walk_packet(*rt, list.head(), 60, rec), Status::translation_fault);
    list.node(30)->next = saved;
    ASSERT_EQ(walk_packet(*rt, list.head(), 60, rec), Status::ok) << "the slot serves the next job";
    EXPECT_EQ(rec.value, list.reference(60));
  }
  EXPECT_EQ(rt->stats().fallbacks.load(), 0u);
}

// ---------------- end to end: a client process and tandemd with an rtl slot loaded with list_walk ----------------

#ifdef TANDEM_TANDEMD_PATH
// AISLE: a list in the session's memory is walked; one on the client's heap is outside the window and
// faults. PHASE/V: the daemon pages the client's heap in as the Verilog TLB's walks reach it. A bad
// pointer ends only its job, the next is right, and nothing falls back to software.
TEST(RtlListWalkDaemon, PacketsThroughTandemdInBothAddressModes) {
  testing::DaemonProcess d(kListWalkConfig);
  auto rt = d.open();
  ASSERT_TRUE(rt);
  auto* rec = static_cast<tandem_completion_t*>(rt->alloc(sizeof(tandem_completion_t)));
  ASSERT_NE(rec, nullptr);
  constexpr size_t kPages = 80;  // more than the TLB's 64 entries: walks under PHASE/V
  void* session = rt->alloc((kPages + 2) * kPage);
  ASSERT_NE(session, nullptr);
  char* aligned = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(session) + kPage - 1) / kPage * kPage);

  ASSERT_EQ(rt->set_address_mode(TANDEM_ADDRESS_AISLE), Status::ok);
  {
    ScatteredList in_session(700, kPages, 21, aligned);
    ASSERT_EQ(walk_packet(*rt, in_session.head(), 700, *rec), Status::ok);
    EXPECT_EQ(rec->value, in_session.reference(700));
    EXPECT_GT(rec->device_ns, 0u);
    ScatteredList on_heap(50, 10, 22);
    EXPECT_EQ(walk_packet(*rt, on_heap.head(), 50, *rec), Status::translation_fault) << "outside the AISLE window";
  }

  ASSERT_EQ(rt->set_address_mode(TANDEM_ADDRESS_PHASEV), Status::ok);
  for (size_t nodes : {size_t{1}, size_t{257}, size_t{900}}) {
    ScatteredList on_heap(nodes, kPages, 30 + nodes);
    ASSERT_EQ(walk_packet(*rt, on_heap.head(), nodes, *rec), Status::ok) << nodes << " nodes on the heap";
    EXPECT_EQ(rec->value, on_heap.reference(nodes)) << nodes << " nodes on the heap";
  }
  ScatteredList list(60, 30, 9);
  const uint64_t saved = list.node(30)->next;
  list.node(30)->next = 0x10;  // the zero page: no client page there
  EXPECT_EQ(walk_packet(*rt, list.head(), 60, *rec), Status::translation_fault);
  list.node(30)->next = saved;
  ASSERT_EQ(walk_packet(*rt, list.head(), 60, *rec), Status::ok) << "the slot serves the next job";
  EXPECT_EQ(rec->value, list.reference(60));
  EXPECT_EQ(rt->stats().fallbacks.load(), 0u);
  rt->free(session);
  rt->free(rec);
}
#endif

}  // namespace
}  // namespace tandem
