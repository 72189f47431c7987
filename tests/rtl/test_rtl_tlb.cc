// The Verilog TLB (rtl/common/tandem_tlb.sv, 16 entries, 2 ways) against a reference model of the
// same policy: set = page mod 8, round-robin victim per set, no fill on a fault. Every lookup's
// hit/miss decision, the page walked, the translation, the fault flag and the counters must agree.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "Vtandem_tlb.h"
#include "verilated.h"

namespace {

class ReferenceTlb {
 public:
  bool Holds(uint64_t page) const {
    const size_t set = page % kSets;
    for (size_t way = 0; way < kWays; ++way) {
      if (tags_[set * kWays + way] == static_cast<int64_t>(page)) return true;
    }
    return false;
  }
  void Fill(uint64_t page) {
    const size_t set = page % kSets;
    tags_[set * kWays + victim_[set]] = static_cast<int64_t>(page);
    victim_[set] = (victim_[set] + 1) % kWays;
  }
  void Flush() { tags_.assign(kSets * kWays, -1); }

 private:
  static constexpr size_t kSets = 8;
  static constexpr size_t kWays = 2;
  std::vector<int64_t> tags_ = std::vector<int64_t>(kSets * kWays, -1);
  std::vector<size_t> victim_ = std::vector<size_t>(kSets, 0);
};

class TlbBench {
 public:
  TlbBench() {
    tlb_.clk_i = 0;
    tlb_.rst_ni = 0;
    tlb_.eval();
    tlb_.rst_ni = 1;
    tlb_.eval();
  }
  void Tick() {
    tlb_.clk_i = 0;
    tlb_.eval();
    tlb_.clk_i = 1;
    tlb_.eval();
  }
  Vtandem_tlb& tlb() { return tlb_; }

 private:
  Vtandem_tlb tlb_;
};

uint32_t PhysicalOf(uint64_t page) { return static_cast<uint32_t>(page * 3 + 1); }

void RunSequence(uint32_t seed, uint64_t pages, uint64_t faulting_page, int flush_every) {
  TlbBench bench;
  Vtandem_tlb& tlb = bench.tlb();
  ReferenceTlb model;
  std::mt19937 rng(seed);
  uint64_t hits = 0;
  uint64_t misses = 0;
  for (int i = 0; i < 5000; ++i) {
    if (flush_every > 0 && i % flush_every == flush_every - 1) {
      tlb.flush_i = 1;
      bench.Tick();
      tlb.flush_i = 0;
      model.Flush();
    }
    const uint64_t page = rng() % pages;
    const bool fault = page == faulting_page;
    const bool expect_hit = model.Holds(page);

    tlb.req_valid_i = 1;
    tlb.req_vpn_i = page;
    tlb.eval();
    ASSERT_TRUE(tlb.req_ready_o) << "lookup " << i;
    bench.Tick();
    tlb.req_valid_i = 0;
    tlb.eval();

    bool walked = false;
    for (int cycle = 0; cycle < 8 && !tlb.resp_valid_o; ++cycle) {
      if (tlb.miss_valid_o) {
        ASSERT_FALSE(walked) << "lookup " << i << ": a second walk";
        ASSERT_EQ(tlb.miss_vpn_o, page) << "lookup " << i;
        tlb.miss_ready_i = 1;
        bench.Tick();
        tlb.miss_ready_i = 0;
        tlb.fill_valid_i = 1;
        tlb.fill_ppn_i = PhysicalOf(page);
        tlb.fill_fault_i = fault;
        bench.Tick();
        tlb.fill_valid_i = 0;
        tlb.eval();
        walked = true;
      } else {
        bench.Tick();
      }
    }
    ASSERT_TRUE(tlb.resp_valid_o) << "lookup " << i << ": no answer";
    ASSERT_EQ(walked, !expect_hit) << "lookup " << i << " page " << page;
    ASSERT_EQ(static_cast<bool>(tlb.resp_fault_o), fault && !expect_hit) << "lookup " << i;
    if (!tlb.resp_fault_o) {
      ASSERT_EQ(tlb.resp_ppn_o, PhysicalOf(page)) << "lookup " << i;
    }
    if (expect_hit) {
      ++hits;
    } else {
      ++misses;
      if (!fault) model.Fill(page);
    }
    bench.Tick();
  }
  EXPECT_EQ(tlb.hits_o, hits);
  EXPECT_EQ(tlb.misses_o, misses);
  EXPECT_GT(hits, 0u);
  EXPECT_GT(misses, 0u);
}

TEST(RtlTlb, MatchesModelWhenWorkingSetFits) { RunSequence(1, 12, 1000, 0); }

TEST(RtlTlb, MatchesModelWhenThrashing) { RunSequence(2, 64, 1000, 0); }

TEST(RtlTlb, FaultIsNotCachedAndFlushEmpties) { RunSequence(3, 24, 5, 500); }

}  // namespace
