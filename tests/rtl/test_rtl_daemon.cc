// The rtl device behind tandemd: a client process's buffers live in its session memory and are
// translated by the daemon (ASID-tagged TLB) before the Verilated accelerators read and write them.
// Bad jobs complete with a status and the daemon keeps serving.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "daemon_harness.hpp"
#include "rt/completion.hpp"
#include "rtl_cases.hpp"

namespace tandem {
namespace {

using testing::Case;
using testing::DaemonProcess;

// The case's buffers copied into session memory, its arguments pointed there.
struct Placed {
  client::Runtime& rt;
  std::vector<void*> memory;
  Placed(client::Runtime& runtime, Case& c) : rt(runtime) {
    for (auto& buffer : c.buffers) {
      void* p = rt.alloc(std::max<size_t>(buffer.size(), 1));
      std::memcpy(p, buffer.data(), buffer.size());
      for (uint64_t& a : c.args) {
        if (!buffer.empty() && a == testing::address(buffer.data())) a = testing::address(p);
      }
      memory.push_back(p);
    }
  }
  ~Placed() {
    for (void* p : memory) rt.free(p);
  }
  Placed(const Placed&) = delete;
  Placed& operator=(const Placed&) = delete;
};

Status run_packet(client::Runtime& rt, const Case& c, uint64_t workload, tandem_completion_t* rec) {
  rt::reset_record(rec);
  const Status s =
      rt.default_queue().dispatch(c.function, c.args.data(), static_cast<uint32_t>(c.args.size()), workload, rec);
  if (s != Status::ok) return s;
  rt::WaitPolicy policy;
  policy.timeout_ns = 30'000'000'000;
  return rt.wait(rec, policy);
}

TEST(RtlDaemon, SessionBuffersAreTranslatedForTheAccelerators) {
  DaemonProcess d("[device]\nkinds = [\"rtl\"]\n");
  auto rt = d.open();
  ASSERT_TRUE(rt);
  auto* rec = static_cast<tandem_completion_t*>(rt->alloc(sizeof(tandem_completion_t)));
  std::vector<std::pair<Case, Case>> cases;
  cases.emplace_back(testing::sobel_case(1, 50, 20), testing::sobel_case(1, 50, 20));
  cases.emplace_back(testing::matmul_case(2, 13, 17, 9), testing::matmul_case(2, 13, 17, 9));
  cases.emplace_back(testing::dct_case(3, 7, TANDEM_DCT_MODE_DCT_QUANTIZE),
                     testing::dct_case(3, 7, TANDEM_DCT_MODE_DCT_QUANTIZE));
  cases.emplace_back(testing::pq_case(4, 150), testing::pq_case(4, 150));
  cases.emplace_back(testing::accumulate_case(5, 999), testing::accumulate_case(5, 999));
  for (auto& [hw, sw] : cases) {
    const int64_t want = testing::run_software(sw);
    testing::call_of(hw);
    Placed placed(*rt, hw);
    ASSERT_EQ(run_packet(*rt, hw, hw.workload, rec), Status::ok) << hw.function;
    EXPECT_EQ(static_cast<int64_t>(rec->value), want) << hw.function;
    EXPECT_GT(rec->device_ns, 0u);
    if (sw.output != SIZE_MAX) {
      EXPECT_EQ(std::memcmp(placed.memory[sw.output], sw.out().data(), sw.out().size()), 0) << hw.function;
    }
  }
  rt->free(rec);
}

TEST(RtlDaemon, BadJobsCompleteWithAStatusAndTheDaemonKeepsServing) {
  // A short cycle limit: a large hardware job times out inside the daemon.
  DaemonProcess d("[device]\nkinds = [\"rtl\"]\n[device.rtl]\nmax_cycles = 2000\n");
  auto rt = d.open();
  ASSERT_TRUE(rt);
  auto* rec = static_cast<tandem_completion_t*>(rt->alloc(sizeof(tandem_completion_t)));
  {
    Case big = testing::matmul_case(1, 40, 40, 40);  // about 17000 cycles in one hardware job
    testing::call_of(big);
    Placed placed(*rt, big);
    EXPECT_EQ(run_packet(*rt, big, big.workload, rec), Status::device_error);
  }
  {
    Case outside = testing::sobel_case(2, 16, 16);  // buffers left outside the session's memory
    testing::call_of(outside);
    EXPECT_EQ(run_packet(*rt, outside, outside.workload, rec), Status::translation_fault);
  }
  {
    Case table = testing::dct_case(3, 2, TANDEM_DCT_MODE_QUANTIZE, 0);
    testing::call_of(table);
    Placed placed(*rt, table);
    EXPECT_EQ(run_packet(*rt, table, table.workload, rec), Status::ok);
    EXPECT_EQ(rec->value, 1u) << "a zero in the quantization table: refused, nothing written";
  }
  {
    Case reserved = testing::matmul_case(4, 2, 2, 2);
    reserved.args[3] |= uint64_t{1} << 60;
    EXPECT_EQ(run_packet(*rt, reserved, 8, rec), Status::invalid_packet);
  }
  EXPECT_TRUE(d.alive());
  Case good = testing::sobel_case(5, 30, 9), good_sw = testing::sobel_case(5, 30, 9);
  testing::run_software(good_sw);
  testing::call_of(good);
  Placed placed(*rt, good);
  ASSERT_EQ(run_packet(*rt, good, good.workload, rec), Status::ok);
  EXPECT_EQ(std::memcmp(placed.memory[1], good_sw.out().data(), good_sw.out().size()), 0);
  rt->free(rec);
}

// One tandemd driving 4 emulated and 2 RTL slots: accumulate is resident on both devices and its jobs
// spread over all three of its slots; every result is checked; the client learns both devices.
TEST(RtlDaemon, EmulatedAndRtlSlotsServeOneDaemonTogether) {
  DaemonProcess d(
      "[device]\nkinds = [\"emu\", \"rtl\"]\n"
      "[device.emu]\nslots = 4\nresident = [\"nop\", \"accumulate\", \"work\", \"accumulate\"]\n"
      "[device.rtl]\nslots = 2\nresident = [\"accumulate\", \"sobel\"]\n");
  auto rt = d.open();
  ASSERT_TRUE(rt);
  ASSERT_EQ(rt->devices().size(), 3u) << "HelloOk lists the daemon's devices (and the emulated fabric's copy engines)";
  EXPECT_EQ(rt->devices()[2].kind, "copy");
  EXPECT_EQ(rt->devices()[0].kind, "emu");
  EXPECT_EQ(rt->devices()[0].slots, 4u);
  EXPECT_EQ(rt->devices()[1].kind, "rtl");
  EXPECT_EQ(rt->devices()[1].first_slot, 4u);
  EXPECT_TRUE(rt->devices()[1].loadable[TANDEM_FN_SOBEL]);
  EXPECT_FALSE(rt->devices()[1].loadable[TANDEM_FN_WORK]);
  EXPECT_GT(rt->devices()[1].models[TANDEM_FN_SOBEL].throughput, 0) << "the RTL device's own timing";
  EXPECT_EQ(rt->device_kind(TANDEM_FN_ACCUMULATE), "emu") << "the first device that holds it";

  constexpr int kBatch = 12, kRounds = 20;
  std::vector<Case> hw, sw;
  std::vector<std::unique_ptr<Placed>> placed;
  for (int i = 0; i < kBatch; ++i) {
    hw.push_back(testing::accumulate_case(100 + i, 20'000 + 64 * static_cast<uint32_t>(i)));
    sw.push_back(testing::accumulate_case(100 + i, 20'000 + 64 * static_cast<uint32_t>(i)));
  }
  hw.push_back(testing::sobel_case(7, 64, 32));
  sw.push_back(testing::sobel_case(7, 64, 32));
  std::vector<int64_t> want;
  for (size_t i = 0; i < hw.size(); ++i) {
    want.push_back(testing::run_software(sw[i]));
    testing::call_of(hw[i]);
    placed.push_back(std::make_unique<Placed>(*rt, hw[i]));
  }
  auto* recs = static_cast<tandem_completion_t*>(rt->alloc(sizeof(tandem_completion_t) * hw.size()));
  std::vector<uint32_t> per_slot(6, 0);
  rt::WaitPolicy policy;
  policy.timeout_ns = 30'000'000'000;
  for (int round = 0; round < kRounds; ++round) {
    for (size_t i = 0; i < hw.size(); ++i) {
      rt::reset_record(&recs[i]);
      ASSERT_EQ(rt->default_queue().dispatch(hw[i].function, hw[i].args.data(), static_cast<uint32_t>(hw[i].args.size()),
                                             hw[i].workload, &recs[i]),
                Status::ok);
    }
    for (size_t i = 0; i < hw.size(); ++i) {
      ASSERT_EQ(rt->wait(&recs[i], policy), Status::ok) << round << " " << i;
      EXPECT_EQ(static_cast<int64_t>(recs[i].value), want[i]) << round << " " << i;
      ASSERT_LT(recs[i].slot, per_slot.size());
      ++per_slot[recs[i].slot];
    }
    EXPECT_EQ(std::memcmp(placed.back()->memory[1], sw.back().out().data(), sw.back().out().size()), 0);
  }
  // accumulate ran on the emulated slots 1 and 3 and on the RTL slot 4; sobel only on slot 5.
  EXPECT_GT(per_slot[1] + per_slot[3], 0u);
  EXPECT_GT(per_slot[4], 0u) << "the router uses the RTL replica too";
  EXPECT_EQ(per_slot[5], static_cast<uint32_t>(kRounds));
  EXPECT_EQ(per_slot[0] + per_slot[2], 0u);
  rt->free(recs);
  placed.clear();
  EXPECT_TRUE(d.alive());
}

}  // namespace
}  // namespace tandem
