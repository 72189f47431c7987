// The cost model against the thesis's published numbers (Table 4.3) and hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/access_model.hpp"
#include "model/accel_model.hpp"
#include "tandem/tandem_abi.h"
#include "model/cost_model.hpp"

namespace tandem::model {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Table 4.3: the Zynq-7020 accumulator. The thesis's "MB/s" are 2^20 bytes per second: only then does
// Eq 4.4 give the printed 56/N (with 10^6 it would be 53/N).
CostParams table_4_3() {
  CostParams p;
  p.xa = 594 * kMiB;
  p.xc = 231 * kMiB;
  p.o0 = 36e-9;
  p.oc = 80e-9;
  p.da = 401e-9;
  p.granularity = 8;
  return p;
}

TEST(ModelTable43, ProportionalSplitIs072) {
  const CostParams p = table_4_3();
  EXPECT_NEAR(alpha_proportional(p.xa, p.xc), 0.72, 1e-12);  // 594 / 825
}

TEST(ModelTable43, AlphaIs072Minus56OverN) {
  const CostParams p = table_4_3();
  for (double n : {64.0, 96.0, 128.0, 1000.0, 4096.0, 1e6}) {
    const double alpha = alpha_single(p, n);
    // alpha = 0.72 - c / N: c is the same for every N and rounds to 56.
    const double c = (0.72 - alpha) * n;
    EXPECT_NEAR(c, 56.0, 0.5) << "N = " << n;
  }
  EXPECT_NEAR(alpha_single(p, 1e12), 0.72, 1e-9);  // large N: Eq 4.4 tends to Eq 4.2
}

TEST(ModelTable43, BreakEvenIs96BytesAtTheAcpGranularity) {
  const CostParams p = table_4_3();
  const double exact = break_even_work_exact(p, p.xa);
  EXPECT_NEAR(exact, 92.56, 0.05);  // X_c [X_c (O_c - O_0) / X_a + D_a - O_0]
  EXPECT_EQ(break_even_work(p, p.xa), 96u);

  CostParams decimal = p;  // the same parameters read as 10^6 B/s still round up to 96 B (88.3 B exact)
  decimal.xa = 594e6;
  decimal.xc = 231e6;
  EXPECT_NEAR(break_even_work_exact(decimal, decimal.xa), 88.27, 0.05);
  EXPECT_EQ(break_even_work(decimal, decimal.xa), 96u);

  CostParams bytewise = p;
  bytewise.granularity = 1;
  EXPECT_EQ(break_even_work(bytewise, p.xa), 93u);
}

TEST(ModelTable43, BreakEvenIsWhereTheBalancedSplitStartsToPay) {
  // Eq 4.8 solves Eq 4.5/4.6; the same N is where max(Eq 4.3a, 4.3b) at Eq 4.4's alpha equals the
  // SW-only time. Below it SW-only wins, above it the split wins.
  const CostParams p = table_4_3();
  const double nl = break_even_work_exact(p, p.xa);
  EXPECT_NEAR(partitioned_time(p, alpha_single(p, nl), nl), sw_only_time(p, nl), 1e-15);
  // Below X_c (D_a - O_c) = 77.8 B Eq 4.4 is negative: clamped to 0, the call is the SW-only call.
  for (double n : {16.0, 48.0}) {
    EXPECT_LT(alpha_single(p, n), 0);
    EXPECT_DOUBLE_EQ(partitioned_time(p, alpha_single(p, n), n), sw_only_time(p, n)) << n;
  }
  // Between that and N_L the balanced split exists but loses to SW-only.
  for (double n : {80.0, 90.0}) {
    EXPECT_GT(alpha_single(p, n), 0);
    EXPECT_GT(partitioned_time(p, alpha_single(p, n), n), sw_only_time(p, n)) << n;
  }
  for (double n : {96.0, 128.0, 1024.0, 1048576.0}) {
    EXPECT_LT(partitioned_time(p, alpha_single(p, n), n), sw_only_time(p, n)) << n;
  }
}

TEST(ModelTable43, Eq44BalancesBothSides) {
  const CostParams p = table_4_3();
  for (double n : {200.0, 1024.0, 65536.0}) {
    const Times t = partitioned_times(p, p.xa, 1, 1, 0, alpha_single(p, n), n);
    EXPECT_NEAR(t.hw, t.sw, 1e-15) << n;
  }
}

TEST(ModelTable43, PlanFollowsBreakEven) {
  const CostParams p = table_4_3();
  const LiveMetrics one{1, 0, 0};
  for (double n : {8.0, 64.0, 96.0}) {
    const Plan plan = plan_call(p, one, 1, n);
    EXPECT_FALSE(plan.accelerate) << n;
    EXPECT_EQ(plan.alpha, 0.0);
    EXPECT_DOUBLE_EQ(plan.predicted, sw_only_time(p, n));
    EXPECT_EQ(plan.nl, 96u);
  }
  for (double n : {104.0, 1024.0, 1048576.0}) {
    const Plan plan = plan_call(p, one, 1, n);
    EXPECT_TRUE(plan.accelerate) << n;
    EXPECT_NEAR(plan.alpha, 0.72 - 55.98 / n, 0.01 / n + 1e-12);
    EXPECT_LT(plan.predicted, plan.sw_only);
    EXPECT_DOUBLE_EQ(plan.predicted, partitioned_time(p, plan.alpha, n));
  }
  // No replica resident: SW-only whatever N.
  EXPECT_FALSE(plan_call(p, LiveMetrics{0, 0, 0}, 1, 1e6).accelerate);
}

// No split without a free core: all on the accelerators or all in software, hand-computed. X_c 1e9/s at
// a share of 1/2 (so p.xc = 5e8), X_a 4e9/s on 2 replicas, D_a 1 us, O_0 0.1 us, 1e6 units in 6 jobs:
// hardware 6 us + 1e6 / 8e9 = 131 us against software 2 ms.
TEST(Model, WholeCallToTheAcceleratorsOrToSoftware) {
  CostParams p;
  p.xc = 0.5e9;
  p.xa = 4e9;
  p.da = 1e-6;
  p.o0 = 0.1e-6;
  LiveMetrics m;
  m.n_a = 2;
  EXPECT_TRUE(whole_call_to_accelerators(p, m, 6, true, 1e-3, 1e6));
  // An accelerator slower than the share's CPU: software.
  p.xa = 0.2e9;
  EXPECT_FALSE(whole_call_to_accelerators(p, m, 6, true, 1e-3, 1e6));
  // No replica: judged as if one were loaded after the reconfiguration delay, where a device can load
  // one (1 ms + 6 us + 1e6 / 4e9 = 1.256 ms < 2 ms), and software where none can, or where the delay
  // costs more than the software (5 ms).
  p.xa = 4e9;
  m.n_a = 0;
  EXPECT_TRUE(whole_call_to_accelerators(p, m, 6, true, 1e-3, 1e6));
  EXPECT_FALSE(whole_call_to_accelerators(p, m, 6, false, 1e-3, 1e6));
  EXPECT_FALSE(whole_call_to_accelerators(p, m, 6, true, 5e-3, 1e6));
  // A queue ahead of the call counts (D_q 3 ms: 3.131 ms).
  m.n_a = 2;
  m.d_q = 3e-3;
  EXPECT_FALSE(whole_call_to_accelerators(p, m, 6, true, 1e-3, 1e6));
}

TEST(Model, ProportionalSplit) {
  EXPECT_DOUBLE_EQ(alpha_proportional(3, 1), 0.75);
  EXPECT_DOUBLE_EQ(alpha_proportional(0, 0), 0.0);
}

TEST(Model, PartitionedTimeClampsAlpha) {
  CostParams p;
  p.xc = 100;
  p.xa = 200;
  p.o0 = 0.5;
  p.oc = 1;
  p.da = 2;
  // alpha <= 0: the SW-only call, N / X_c + O_0.
  EXPECT_DOUBLE_EQ(partitioned_time(p, -0.3, 1000), 10.5);
  EXPECT_DOUBLE_EQ(partitioned_time(p, 0, 1000), 10.5);
  // alpha >= 1: everything on the accelerator; the CPU still pays O_c.
  const Times all = partitioned_times(p, p.xa, 1, 1, 0, 7, 1000);
  EXPECT_DOUBLE_EQ(all.hw, 1000.0 / 200 + 2);
  EXPECT_DOUBLE_EQ(all.sw, 1.0);
  // In between: max of Eq 4.3a and Eq 4.3b.
  EXPECT_DOUBLE_EQ(partitioned_time(p, 0.5, 1000), std::max(500.0 / 200 + 2, 500.0 / 100 + 1));
}

TEST(Model, BandwidthAdjustedThroughputEq51) {
  EXPECT_DOUBLE_EQ(effective_accel_throughput(100, 10, 15, 2), 75);   // 15 / (2 * 10) of X_a
  EXPECT_DOUBLE_EQ(effective_accel_throughput(100, 10, 40, 2), 100);  // enough bandwidth: no bonus
  EXPECT_DOUBLE_EQ(effective_accel_throughput(100, 10, 0, 2), 100);   // bandwidth unknown
  EXPECT_DOUBLE_EQ(effective_accel_throughput(100, 0, 5, 2), 100);    // compute bound
  CostParams p;
  p.xa = 300;
  p.bw_per_accel = 50;
  EXPECT_DOUBLE_EQ(effective_accel_throughput(p, LiveMetrics{4, 0, 100}), 150);
}

TEST(Model, QueueWaitEq52) {
  // 3 queued jobs, 6000 units queued or running on 2 replicas of 1000 units/s, D_a = 1 us.
  EXPECT_DOUBLE_EQ(queue_wait(1e-6, 3, 6000, 2, 1000), 3e-6 + 3.0);
  EXPECT_DOUBLE_EQ(queue_wait(1e-6, 0, 0, 1, 1000), 0.0);
  EXPECT_TRUE(std::isinf(queue_wait(1e-6, 1, 10, 0, 1000)));
}

TEST(Model, AlphaEq56HandComputed) {
  CostParams p;
  p.xc = 100;
  p.da = 0.3;
  p.oc = 0.1;
  // 2 replicas of X'_a = 150: 300 / 400 = 0.75; latency D_q + n_j (D_a - O_c) = 0.5 + 2 * 0.2 = 0.9;
  // alpha = 0.75 (1 - 100 * 0.9 / 900) = 0.675.
  const double alpha = alpha_multi(p, 150, 2, 2, 0.5, 900);
  EXPECT_NEAR(alpha, 0.675, 1e-12);
  // ...and it balances the generalised Eq 4.3a/4.3b: 0.5 + 2 * 0.3 + 607.5 / 300 = 292.5 / 100 + 0.2.
  const Times t = partitioned_times(p, 150, 2, 2, 0.5, alpha, 900);
  EXPECT_NEAR(t.hw, 3.125, 1e-12);
  EXPECT_NEAR(t.sw, 3.125, 1e-12);
  // No replica: nothing for the hardware.
  EXPECT_EQ(alpha_multi(p, 150, 0, 2, 0.5, 900), 0.0);
}

TEST(Model, Eq56ReducesToEq55) {
  CostParams p;
  p.xc = 231;
  p.xa = 594;
  p.oc = 0.08;
  p.da = 0.401;
  for (double n : {10.0, 100.0, 1000.0}) {
    EXPECT_DOUBLE_EQ(alpha_multi(p, p.xa, 1, 1, 0, n),
                     p.xa / (p.xa + p.xc) * (1 - p.xc * (p.da - p.oc) / n));
  }
  // Queue wait and more jobs lower alpha; more replicas raise it.
  EXPECT_LT(alpha_multi(p, p.xa, 1, 1, 0.5, 1000), alpha_multi(p, p.xa, 1, 1, 0, 1000));
  EXPECT_LT(alpha_multi(p, p.xa, 1, 6, 0, 1000), alpha_multi(p, p.xa, 1, 1, 0, 1000));
  EXPECT_GT(alpha_multi(p, p.xa, 3, 1, 0, 1000), alpha_multi(p, p.xa, 1, 1, 0, 1000));
}

TEST(Model, BreakEvenEq54UsesTheLiveThroughput) {
  CostParams p;
  p.xc = 100;
  p.xa = 400;
  p.o0 = 0.1;
  p.oc = 0.5;
  p.da = 1.1;
  p.granularity = 4;
  // N_L = 100 [100 * 0.4 / 400 + 1.1 - 0.1] = 110 -> 112 at 4-unit granularity.
  EXPECT_NEAR(break_even_work_exact(p, p.xa), 110, 1e-9);
  EXPECT_EQ(break_even_work(p, p.xa), 112u);
  // Half the throughput (bandwidth-limited, Eq 5.1): 100 [0.2 + 1.0] = 120.
  EXPECT_EQ(break_even_work(p, 200), 120u);
  EXPECT_EQ(break_even_work(p, 0), std::numeric_limits<uint64_t>::max());
  // An accelerator that costs nothing always pays.
  CostParams free_hw = p;
  free_hw.oc = free_hw.o0;
  free_hw.da = 0;
  EXPECT_EQ(break_even_work(free_hw, free_hw.xa), 0u);
}

TEST(Model, UtilisationEq57And58) {
  // 8 s of SW work, 8 slots of speedup 1 shared by 2 cores: T_e = 8 / (1 + 4) = 1.6 s.
  EXPECT_DOUBLE_EQ(expected_makespan(8, 8, 2, 1), 1.6);
  EXPECT_DOUBLE_EQ(expected_makespan(8, 8, 2, 0), 8);  // speedup 0: no help
  EXPECT_DOUBLE_EQ(utilization(1.6, 2.0), 0.8);
  EXPECT_DOUBLE_EQ(utilization(1.6, 0), 0);
}

TEST(Model, EffectiveSpeedupSeed004) {
  EXPECT_DOUBLE_EQ(effective_speedup(10, 2, 3), 2);
  // t_HA = 2, raw acceleration 5, overhead 3: 2 * 5 / (2 + 3) = 2.
  EXPECT_DOUBLE_EQ(effective_speedup_from_accel(2, 5, 3), 2);
  // Converges to the raw factor as t_HA grows (seed 004 Fig 4).
  EXPECT_NEAR(effective_speedup_from_accel(1e9, 5, 3), 5, 1e-6);
}

TEST(Model, RoundUp) {
  EXPECT_EQ(round_up(0, 8), 0u);
  EXPECT_EQ(round_up(1, 8), 8u);
  EXPECT_EQ(round_up(8, 8), 8u);
  EXPECT_EQ(round_up(93, 8), 96u);
  EXPECT_EQ(round_up(93, 0), 93u);
  EXPECT_EQ(round_up(std::numeric_limits<uint64_t>::max() - 1, 8), std::numeric_limits<uint64_t>::max());
}

}  // namespace
}  // namespace tandem::model

// A job's modelled time never runs early, and a workload too large for int64 nanoseconds saturates
// (the engine's job-size bound relies on job_ns being non-decreasing over all workloads).
TEST(AccelModel, JobTimeRoundsUpAndSaturates) {
  tandem::model::AccelModel m;
  m.throughput = 3e9;
  m.latency_s = 100e-9;
  EXPECT_EQ(m.job_ns(0), 100);
  EXPECT_EQ(m.job_ns(1), 101);  // 100.33 ns, rounded up
  EXPECT_EQ(m.job_ns(UINT64_MAX), 6148914691236516864);  // 6.1e9 s, still within int64 ns
  m.throughput = 1;                                         // 1 unit per second: 1.8e19 s overflows
  EXPECT_EQ(m.job_ns(UINT64_MAX), INT64_MAX);
  EXPECT_LE(m.job_ns(UINT64_MAX / 4), m.job_ns(UINT64_MAX));
  m.throughput = 0;
  EXPECT_EQ(m.job_ns(1), INT64_MAX);
  EXPECT_EQ(m.job_ns(0), 100);
}

namespace tandem::model {
namespace {

// ---- access methods (model/access_model.hpp) ----

TEST(AccessModel, TransferCostsPerMethod) {
  TransferModel t;
  t.link_bps = 1e9;
  t.dma_setup_s = 1e-6;
  t.sg_bps = 0.5e9;
  t.sg_setup_s = 2e-6;
  t.sg_page_s = 100e-9;
  t.local_bps = 10e9;
  // Nothing moves: the computation alone, no set-up.
  EXPECT_DOUBLE_EQ(t.job_s(TANDEM_ACCESS_ZERO_COPY, 0, 0, 0, 5e-6), 5e-6);
  // Zero-copy and copy: set-up, then the longer of transfer (1 MB at 1 GB/s = 1 ms) and computation.
  EXPECT_DOUBLE_EQ(t.job_s(TANDEM_ACCESS_ZERO_COPY, 1'000'000, 0, 0, 5e-6), 1e-6 + 1e-3);
  EXPECT_DOUBLE_EQ(t.job_s(TANDEM_ACCESS_COPY, 1'000'000, 0, 0, 2e-3), 1e-6 + 2e-3);
  // Scatter-gather: its own set-up, a cost per page, its own streaming rate.
  EXPECT_DOUBLE_EQ(t.job_s(TANDEM_ACCESS_SCATTER_GATHER, 1'000'000, 0, 245, 0), 2e-6 + 245 * 100e-9 + 2e-3);
  // Device-local data streams from local memory, no set-up.
  EXPECT_DOUBLE_EQ(t.job_s(TANDEM_ACCESS_DEVICE_LOCAL, 0, 1'000'000, 0, 0), 1e-4);
  // A free link charges nothing but the computation and the set-up.
  TransferModel free;
  EXPECT_DOUBLE_EQ(free.job_s(TANDEM_ACCESS_ZERO_COPY, 1 << 20, 0, 0, 3e-6), 3e-6);
}

TEST(AccessModel, MethodsFoldIntoXaAndDa) {
  CostParams p;
  p.xc = 1e9;
  p.xa = 4e9;
  p.da = 1e-6;
  p.oc = 0.2e-6;
  p.o0 = 0.05e-6;
  TransferModel t;
  t.link_bps = 2e9;  // slower than the accelerator: the link bounds X_a
  t.dma_setup_s = 0.5e-6;
  t.sg_setup_s = 1e-6;
  HostAccessCosts h;
  h.memcpy_bps = 8e9;
  h.gather_bps = 4e9;
  h.handoff_s = 20e-6;
  const CostParams zc = with_access(p, TANDEM_ACCESS_ZERO_COPY, 1.0, t, h, true);
  EXPECT_DOUBLE_EQ(zc.da, 1.5e-6);
  EXPECT_DOUBLE_EQ(zc.xa, 2e9);
  const CostParams copy = with_access(p, TANDEM_ACCESS_COPY, 1.0, t, h, true);
  EXPECT_DOUBLE_EQ(copy.xa, 1.0 / (1.0 / 2e9 + 1.0 / 8e9)) << "the staging copy is serial with the job";
  const CostParams sg = with_access(p, TANDEM_ACCESS_SCATTER_GATHER, 1.0, t, h, true);
  EXPECT_DOUBLE_EQ(sg.da, 1e-6 + 1e-6 + 20e-6) << "the mover's hand-off under tandemd";
  const CostParams sg_here = with_access(p, TANDEM_ACCESS_SCATTER_GATHER, 1.0, t, h, false);
  EXPECT_DOUBLE_EQ(sg_here.da, 2e-6) << "in place in the embedded runtime";
  EXPECT_GT(sg_here.xa, sg.xa);
  EXPECT_EQ(with_access(p, TANDEM_ACCESS_COPY, 0.0, t, h, true).xa, p.xa) << "no data, no cost";
}

// A device that copies some methods' jobs into its own memory (OpenCL with access = "job"), measured
// both ways: the difference applies to the methods it copies, on top of the live in-place figures.
TEST(AccessModel, ADeviceThatCopiesPricesTheCopiedMethodsByItsTwoModels) {
  const AccelModel in_place{1e9, 10e-6, 0, 0};
  const AccelModel copied{4e9, 40e-6, 0, 0};
  const DeviceCopyCosts c = DeviceCopyCosts::between(in_place, copied);
  ASSERT_TRUE(c.measured);
  EXPECT_DOUBLE_EQ(c.setup_s, 30e-6);
  EXPECT_DOUBLE_EQ(c.unit_s, 1.0 / 4e9 - 1.0 / 1e9);
  EXPECT_FALSE(DeviceCopyCosts::between(in_place, AccelModel{}).measured) << "measured one way only";
  EXPECT_FALSE(DeviceCopyCosts::between(AccelModel{}, copied).measured);
  const DeviceCopyCosts nop = DeviceCopyCosts::between(AccelModel{0, 10e-6, 0, 0}, AccelModel{0, 12e-6, 0, 0});
  EXPECT_TRUE(nop.measured);
  EXPECT_EQ(nop.unit_s, 0) << "no throughput: no per-unit term";

  CostParams p;
  p.xc = 0.5e9;
  p.xa = 0.5e9;  // the live figure, in place: slower than the device's start-up measurement
  p.da = 20e-6;
  TransferModel free_link;
  HostAccessCosts h;  // no staging copy priced (memcpy_bps 0): the device copies from session memory
  const CostParams zc = with_access(p, TANDEM_ACCESS_ZERO_COPY, 4.0, free_link, h, false, c);
  EXPECT_DOUBLE_EQ(zc.xa, p.xa) << "in place: the live figures as they are";
  EXPECT_DOUBLE_EQ(zc.da, p.da);
  for (uint8_t method : {TANDEM_ACCESS_COPY, TANDEM_ACCESS_SCATTER_GATHER}) {
    const CostParams q = with_access(p, method, 4.0, free_link, h, false, c);
    EXPECT_DOUBLE_EQ(q.da, 50e-6);
    EXPECT_NEAR(1.0 / q.xa, 1.0 / 0.5e9 + c.unit_s, 1e-18) << "the measured difference on the live time";
  }
  // A noisy difference larger than the live figures cannot make a job free.
  const DeviceCopyCosts huge{true, -1.0, -1.0};
  const CostParams floor = with_access(p, TANDEM_ACCESS_COPY, 4.0, free_link, h, false, huge);
  EXPECT_NEAR(floor.xa, 10 * p.xa, 1e-6 * p.xa) << "never below a tenth of the live time";
  EXPECT_NEAR(floor.da, 0.1 * p.da, 1e-15);
  EXPECT_DOUBLE_EQ(with_access(p, TANDEM_ACCESS_COPY, 4.0, free_link, h, false, DeviceCopyCosts{}).xa, p.xa)
      << "not measured: every method costs the device the same";
  // What a copied job teaches the in-place estimates: its time less the difference, at least a tenth.
  // 100 us copied, of 1000 units: less 30 us of set-up, plus 0.75 ns a unit that copying saved.
  EXPECT_NEAR(c.in_place_s(100e-6, 1000), 100e-6 - 30e-6 + 1000 * 0.75e-9, 1e-15);
  EXPECT_DOUBLE_EQ(c.in_place_s(20e-6, 0), 0.1 * 20e-6) << "never below a tenth";
  EXPECT_DOUBLE_EQ(DeviceCopyCosts{}.in_place_s(20e-6, 1000), 20e-6) << "not measured: as it is";
}

// A GPU reading host memory in place across the bus is slow per unit, and copying first costs a
// longer set-up: small calls stay in place, large ones are copied. Deterministic.
TEST(AccessModel, ADeviceThatCopiesIsChosenForLargeCallsAndLeftForSmallOnes) {
  CostParams p;
  p.xc = 0.25e9;
  p.xa = 1e9;  // in place, bounded by the bus
  p.da = 10e-6;
  p.oc = 0.2e-6;
  p.o0 = 0.05e-6;
  p.granularity = 4;
  const DeviceCopyCosts c = DeviceCopyCosts::between(AccelModel{1e9, 10e-6, 0, 0}, AccelModel{8e9, 60e-6, 0, 0});
  const uint8_t both[] = {TANDEM_ACCESS_ZERO_COPY, TANDEM_ACCESS_COPY};
  const LiveMetrics m{1, 0, 0};
  TransferModel t;
  HostAccessCosts h;
  EXPECT_EQ(choose_access(both, p, m, 1, 16'000, 1.0, t, h, false, c), TANDEM_ACCESS_ZERO_COPY);
  EXPECT_EQ(choose_access(both, p, m, 1, 64e6, 1.0, t, h, false, c), TANDEM_ACCESS_COPY);
  EXPECT_EQ(choose_access(both, p, m, 1, 64e6, 1.0, t, h, false, DeviceCopyCosts{}), TANDEM_ACCESS_ZERO_COPY)
      << "not measured: in place is never worse";
  // Copying 5% faster per unit: within the two measurements' noise, so in place stays, with the margin.
  const DeviceCopyCosts slight = DeviceCopyCosts::between(AccelModel{1e9, 10e-6, 0, 0}, AccelModel{1.05e9, 10e-6, 0, 0});
  EXPECT_EQ(choose_access(both, p, m, 1, 64e6, 1.0, t, h, false, slight), TANDEM_ACCESS_COPY);
  EXPECT_EQ(choose_access(both, p, m, 1, 64e6, 1.0, t, h, false, slight, kDeviceCopyMargin), TANDEM_ACCESS_ZERO_COPY);
  EXPECT_EQ(choose_access(both, p, m, 1, 64e6, 1.0, t, h, false, c, kDeviceCopyMargin), TANDEM_ACCESS_COPY)
      << "8x faster copied is well beyond it";
}

// Small calls: the staging copy is cheaper than the mover's hand-off; large ones: gathering in the
// engine's process beats copying on the caller. The choice is a pure function of its inputs.
TEST(AccessModel, ChoiceFollowsTheCrossover) {
  CostParams p;
  p.xc = 1e9;
  p.xa = 20e9;
  p.da = 1e-6;
  p.oc = 0.2e-6;
  p.o0 = 0.05e-6;
  p.granularity = 8;
  TransferModel t;
  t.link_bps = 16e9;
  t.sg_bps = 16e9;
  HostAccessCosts h;
  h.memcpy_bps = 2e9;   // a slow copy on the caller
  h.gather_bps = 20e9;  // a fast gather in the engine's process
  h.handoff_s = 20e-6;
  const uint8_t both[] = {TANDEM_ACCESS_COPY, TANDEM_ACCESS_SCATTER_GATHER};
  LiveMetrics m{1, 0, 0};
  EXPECT_EQ(choose_access(both, p, m, 1, 64'000, 1.0, t, h, true), TANDEM_ACCESS_COPY);
  EXPECT_EQ(choose_access(both, p, m, 1, 64e6, 1.0, t, h, true), TANDEM_ACCESS_SCATTER_GATHER);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(choose_access(both, p, m, 1, 64e6, 1.0, t, h, true), TANDEM_ACCESS_SCATTER_GATHER);
}

}  // namespace
}  // namespace tandem::model
