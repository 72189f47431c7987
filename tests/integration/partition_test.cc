// Partitioned high-level calls end to end (the embedded runtime's rings, dispatcher and emulated
// fabric): every split gives the reference result, policies do what they say, the cancel packet
// withdraws queued jobs, and the partitioner takes work back from hardware that is slower than the
// calibration claims.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "abi/futex.hpp"
#include "client/embedded.hpp"
#include "client/partitioned_call.hpp"
#include "funcs/throughput.hpp"
#include "base/clock.hpp"
#include "test_util.hpp"

namespace tandem {
namespace {

using testing::open_embedded;

struct Accumulate {
  explicit Accumulate(size_t n, uint32_t seed = 1) : data(n) {
    std::mt19937 rng(seed);
    for (auto& v : data) v = static_cast<int32_t>(rng());
    reference = std::accumulate(data.begin(), data.end(), int64_t{0});
    const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data.data()), data.size()};
    funcs::BufferList buffers;
    EXPECT_EQ(funcs::describe_call(*fn, args, call, buffers), Status::ok);
    call.buffers[0] = data.data();
  }
  int64_t run(client::Runtime& rt, client::CallReport* report = nullptr) {
    int64_t value = 0;
    EXPECT_EQ(rt.run(*fn, call, value, report), Status::ok);
    return value;
  }
  const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_ACCUMULATE);
  std::vector<int32_t> data;
  int64_t reference = 0;
  funcs::Call call;
};

const std::vector<size_t> kCounts{0, 1, 2, 3, 7, 8, 31, 100, 1001, 4096, 12345, 65536, 1 << 18};

TEST(PartitionedCalls, EverySplitGivesTheReferenceSum) {
  for (uint32_t jobs : {1u, 6u}) {
    client::RuntimeOptions o;
    o.embedded = true;
    o.partition.jobs_per_round = jobs;
    auto rt = client::Runtime::open(o);
    ASSERT_TRUE(rt) << rt.message();
    for (double alpha : {0.0, 0.001, 0.1, 0.37, 0.5, 0.72, 0.999, 1.0}) {
      rt.value()->set_mode(client::Mode::alpha, alpha);
      for (size_t n : kCounts) {
        Accumulate a(n, static_cast<uint32_t>(n + 7));
        client::CallReport report;
        EXPECT_EQ(a.run(*rt.value(), &report), a.reference) << "alpha " << alpha << ", " << n << " ints, " << jobs << " jobs";
        const uint64_t units = n * 4;
        EXPECT_EQ(report.counters.sw_units + report.counters.hw_units, units) << "every unit exactly once";
        if (alpha == 0.0 || units == 0) {
          EXPECT_EQ(report.counters.hw_units, 0u);
        }
        if (alpha == 1.0) {
          EXPECT_EQ(report.counters.sw_units, 0u) << "alpha = 1: only jobs";
        }
      }
    }
  }
}

TEST(PartitionedCalls, PoliciesAutoSoftwareAndHardware) {
  for (client::Mode mode : {client::Mode::auto_mode, client::Mode::sw, client::Mode::hw}) {
    auto rt = open_embedded("", mode);
    ASSERT_TRUE(rt);
    for (size_t n : kCounts) {
      Accumulate a(n);
      EXPECT_EQ(a.run(*rt), a.reference) << client::mode_name(mode, 0) << " " << n;
    }
    const client::CallStats& s = rt->stats();
    if (mode == client::Mode::sw) {
      EXPECT_EQ(s.hw_jobs.load(), 0u);
      EXPECT_EQ(s.sw_calls.load(), kCounts.size());
    } else if (mode == client::Mode::hw) {
      EXPECT_EQ(s.sw_units.load(), 0u);
      EXPECT_EQ(s.accelerated_calls.load(), kCounts.size() - 1) << "all but the empty call";
    } else {
      EXPECT_GE(s.accelerated_calls.load(), 1u) << "1 MiB is far above N_L";
      EXPECT_GE(s.sw_calls.load(), 4u) << "a few ints are far below N_L";
    }
  }
}

TEST(PartitionedCalls, AutoFollowsTheModel) {
  client::RuntimeOptions o;  // thesis Ch4: one accelerator, one job per call
  o.embedded = true;
  o.config_text = "[device.emu]\nresident = [\"accumulate\"]\n";
  o.partition.jobs_per_round = 1;
  auto opened = client::Runtime::open(o);
  ASSERT_TRUE(opened) << opened.message();
  auto& rt = opened.value();
  const model::CostParams p = rt->cost_params(TANDEM_FN_ACCUMULATE);
  const uint64_t nl = model::break_even_work(p, p.xa);
  ASSERT_GT(nl, 8u);
  Accumulate below(nl / 4 / 2);
  client::CallReport report;
  EXPECT_EQ(below.run(*rt, &report), below.reference);
  EXPECT_FALSE(report.partitioned) << "N <= N_L: software";
  EXPECT_EQ(report.break_even_units, nl);
  Accumulate above(nl);  // 4 N_L bytes
  EXPECT_EQ(above.run(*rt, &report), above.reference);
  EXPECT_TRUE(report.partitioned);
  EXPECT_GT(report.alpha, 0.0);
  EXPECT_LT(report.alpha, 1.0);
  EXPECT_GT(report.predicted_s, 0.0);
}

// N_L (Eq 5.4) counts one job's latency; a round of n_j jobs behind the queue (Eq 5.6) gives the
// hardware a share only from larger calls. Below that, a call that one CPU chunk covers is a software
// call: it must not pay for the partitioner's path only to be kept on the CPU (about 1 us, a quarter of
// a 16 KiB call).
TEST(PartitionedCalls, ACallJustAboveNlThatTheRoundGivesNoShareIsASoftwareCall) {
  client::RuntimeOptions o;
  o.embedded = true;
  // A fixed bandwidth: the monitor's measured figure, published each tick, would move X'_a between the
  // test's reading of the live metrics and the calls.
  o.config_text = "[device.emu]\nresident = [\"accumulate\"]\n[monitor]\navailable_bandwidth_mbps = 0\n";
  auto opened = client::Runtime::open(o);
  ASSERT_TRUE(opened) << opened.message();
  auto& rt = opened.value();
  engine::PartitionerConfig config;  // automatic, rebalancing, n_j = 6: a caller-owned partitioner
  config.jobs_per_round = 6;
  config.max_outstanding_jobs = client::kMaxCallJobs;
  const model::CostParams p = rt->cost_params(TANDEM_FN_ACCUMULATE);
  engine::Partitioner part(p, config);
  model::LiveMetrics m;
  ASSERT_TRUE(client::read_live_metrics(*rt, TANDEM_FN_ACCUMULATE, m));
  ASSERT_GT(m.n_a, 0u);
  const uint64_t nl = model::break_even_work(p, model::effective_accel_throughput(p, m));
  const uint64_t chunk = engine::cpu_chunk_units(config, p);
  // Where Eq 5.6 with n_j jobs starts to give the hardware a share (whole int32s): the band (N_L, that) is
  // a software call. A call in its middle, the first call with a (small) share, which the partitioner
  // decides, and one well above where the round pays.
  uint64_t first_share = 0, pays = 0;
  for (uint64_t units = nl + 4; units <= 64 * chunk && pays == 0; units += 4) {
    const model::Plan plan = model::plan_call(p, m, config.jobs_per_round, static_cast<double>(units));
    if (first_share == 0 && plan.alpha_model > 0) first_share = units;
    if (plan.accelerate) pays = units;
  }
  ASSERT_GT(first_share, nl + 64) << "no band above N_L where the round gives the hardware nothing";
  ASSERT_GE(pays, first_share);
  const uint64_t kept = (nl + first_share) / 2 / 4 * 4, split = pays * 3 / 2 / 4 * 4;
  ASSERT_LE(kept, chunk) << "the kept call must fit one CPU chunk";
  {  // The partitioner itself keeps that call on the CPU: no round, one software step of all of it.
    engine::Partitioner check(p, config);
    check.start(kept, 0, m);
    EXPECT_EQ(check.initial_alpha(), 0.0);
    const engine::Step step = check.next(0, m);
    EXPECT_EQ(step.kind, engine::StepKind::run_sw);
    EXPECT_EQ(step.range.size(), kept);
  }
  for (const auto& [units, through] : {std::pair{kept, false}, std::pair{first_share, true}, std::pair{split, true}}) {
    Accumulate a(units / 4, static_cast<uint32_t>(units));
    client::CallReport report;
    int64_t value = 0;
    ASSERT_EQ(client::run_partitioned(*rt, *a.fn, a.call, part, value, &report), Status::ok);
    EXPECT_EQ(value, a.reference) << units << " units";
    EXPECT_EQ(report.through_partitioner, through) << units << " units, N_L " << nl << ", chunk " << chunk;
    EXPECT_EQ(report.counters.sw_units + report.counters.hw_units, units);
    if (!through) {
      EXPECT_EQ(report.counters.hw_units, 0u);
    }
  }
}

TEST(PartitionedCalls, WorkUnitsAreAllDoneOnce) {
  auto rt = open_embedded("");
  ASSERT_TRUE(rt);
  const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_WORK);
  for (double alpha : {0.0, 0.25, 1.0}) {
    rt->set_mode(client::Mode::alpha, alpha);
    for (uint64_t units : {uint64_t{0}, uint64_t{1}, uint64_t{977}, uint64_t{200000}}) {
      const uint64_t args[1] = {units};
      funcs::Call call;
      funcs::BufferList buffers;
      ASSERT_EQ(funcs::describe_call(*fn, args, call, buffers), Status::ok);
      int64_t value = -1;
      ASSERT_EQ(rt->run(*fn, call, value), Status::ok);
      EXPECT_EQ(value, static_cast<int64_t>(units)) << "alpha " << alpha;
    }
  }
}

// A hardware-only call sleeps on its last job alone: the other completions would each wake the caller
// for nothing. Six jobs of 2 ms (D_a) on the two resident accumulate replicas finish in three pairs
// 2 ms apart, so a caller that slept on every record would sleep at least three times.
TEST(PartitionedCalls, AHardwareOnlyCallSleepsOnlyUntilItsLastJob) {
  // Without futex_waitv the driver polls one record every 50 us, and every poll counts as a sleep.
  uint32_t word = 1;
  const abi::FutexWaitTarget differs{&word, 0};
  if (abi::futex_waitv({&differs, 1}, 0) == ENOSYS) GTEST_SKIP() << "this kernel has no futex_waitv";
  client::RuntimeOptions o;
  o.embedded = true;
  o.mode = client::Mode::hw;
  o.wait.mode = rt::WaitMode::block;
  o.config_text = "[functions.accumulate]\nlatency_us = 2000\n";
  auto rt = client::Runtime::open(o);
  ASSERT_TRUE(rt) << rt.message();
  Accumulate a(1 << 18);
  for (int i = 0; i < 3; ++i) {
    client::CallReport report;
    EXPECT_EQ(a.run(*rt.value(), &report), a.reference);
    EXPECT_EQ(report.counters.jobs_submitted, 6u);
    EXPECT_EQ(report.counters.hw_units, a.data.size() * 4);
    EXPECT_GE(report.sleeps, 1u);
    EXPECT_LE(report.sleeps, 2u) << "the last job (or, finishing a little later, its partner) only";
  }
}

uint64_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

funcs::Call described(uint16_t function, std::vector<uint64_t> args) {
  funcs::Call call;
  funcs::BufferList buffers;
  EXPECT_EQ(funcs::describe_call(*funcs::find_function(function), args, call, buffers), Status::ok);
  return call;
}

// The engine refuses a job whose modelled time exceeds [fabric] max_job_ms (JOB_TOO_LARGE; thesis
// 5.4.1). Here at most 100 us: accumulate modelled at 1 GB/s plus 1 us, a job of at most 99,000 bytes.
// Six jobs of a 1 MiB call (175 KB each) would all be refused and the call would end in software; the
// partitioner makes eleven or more, and every byte runs on the fabric.
TEST(PartitionedCalls, JobsStayWithinTheEnginesJobSizeBound) {
  client::RuntimeOptions o;
  o.embedded = true;
  o.mode = client::Mode::hw;
  o.config_text = "[fabric]\nmax_job_ms = 0.1\n[functions.accumulate]\nthroughput = 1e9\nlatency_us = 1\n";
  auto rt = client::Runtime::open(o);
  ASSERT_TRUE(rt) << rt.message();
  EXPECT_EQ(rt.value()->max_job_units_by_time(TANDEM_FN_ACCUMULATE), 99000u);
  Accumulate a(1 << 18);
  EXPECT_EQ(client::max_job_units(*rt.value(), *a.fn, a.call), 99000u);
  client::CallReport report;
  EXPECT_EQ(a.run(*rt.value(), &report), a.reference);
  EXPECT_EQ(report.counters.jobs_failed, 0u);
  EXPECT_EQ(report.counters.hw_units, a.data.size() * 4);
  EXPECT_GE(report.counters.jobs_completed, 11u);
  // sobel's jobs cover whole rows, and the engine times the rows a job covers: 1024-pixel rows, so 96
  // rows (98,304 pixels) a job, not 99,000 pixels (97 rows, over the bound, wherever they straddle).
  {
    auto sobel_rt = open_embedded("[fabric]\nmax_job_ms = 0.1\n[device.emu]\nresident = [\"sobel\", \"sobel\"]\n"
                                  "[functions.sobel]\nthroughput = 1e9\nlatency_us = 1\n",
                                  client::Mode::hw);
    ASSERT_TRUE(sobel_rt);
    const auto* sobel = funcs::find_function(TANDEM_FN_SOBEL);
    std::vector<uint8_t> image(1024 * 2000), edges(1024 * 2000), reference(1024 * 2000);
    std::mt19937 rng(5);
    for (auto& p : image) p = static_cast<uint8_t>(rng());
    funcs::Call call = described(TANDEM_FN_SOBEL, {addr(image.data()), addr(edges.data()), 1024, 2000});
    call.buffers[0] = image.data();
    call.buffers[1] = reference.data();
    (void)funcs::run_sw(*sobel, call);
    call.buffers[1] = edges.data();
    EXPECT_EQ(client::max_job_units(*sobel_rt, *sobel, call), 96u * 1024);
    int64_t value = 0;
    ASSERT_EQ(sobel_rt->run(*sobel, call, value, &report), Status::ok);
    EXPECT_EQ(report.counters.jobs_failed, 0u);
    EXPECT_EQ(report.counters.hw_units, 1024u * 2000);
    EXPECT_TRUE(edges == reference);
  }
  // With the default bound (100 ms: about 100 MB here) the same call is the usual six jobs.
  auto unbounded = open_embedded("[functions.accumulate]\nthroughput = 1e9\nlatency_us = 1\n", client::Mode::hw);
  ASSERT_TRUE(unbounded);
  EXPECT_EQ(client::max_job_units(*unbounded, *a.fn, a.call), 99'999'000u);
  EXPECT_EQ(a.run(*unbounded, &report), a.reference);
  EXPECT_EQ(report.counters.jobs_completed, 6u);
}

// Every job [a, a + units) of `call`, at every split point a, names host buffers of at most `bound` bytes.
void expect_every_job_within(const funcs::FunctionInfo& fn, const funcs::Call& call, uint64_t units, uint64_t bound) {
  for (uint64_t a = 0; a < call.workload; a += fn.granularity) {
    funcs::Call part;
    fn.slice(call, a, std::min(a + units, call.workload), part);
    uint64_t workload = 0;
    funcs::BufferList buffers;
    ASSERT_EQ(fn.describe({part.args.data(), part.arg_count}, workload, buffers), Status::ok);
    for (uint32_t i = 0; i < buffers.count; ++i) {
      ASSERT_LE(buffers.items[i].bytes, bound) << fn.name << ": job [" << a << ", +" << units << "), buffer " << i;
    }
  }
}

// A device's largest job buffer (an OpenCL allocation, a CUDA persistent slot's staging) as units of a
// call: a job that size fits wherever it lies, rows and halos included, and little would be lost.
TEST(JobBounds, ABufferBoundBecomesTheLargestJobThatFitsAnywhere) {
  std::vector<int32_t> ints(1000);
  const auto* acc = funcs::find_function(TANDEM_FN_ACCUMULATE);
  const funcs::Call a = described(TANDEM_FN_ACCUMULATE, {addr(ints.data()), ints.size()});
  for (uint64_t bound : {16, 1000, 1004, 2048, 3999}) {
    const uint64_t u = client::units_within_buffer_bound(*acc, a, bound);
    ASSERT_GT(u, 0u) << bound;
    EXPECT_EQ(u % acc->granularity, 0u);
    EXPECT_GE(u + 2 * acc->granularity, bound) << "within two granules of the bound";
    expect_every_job_within(*acc, a, u, bound);
  }
  EXPECT_EQ(client::units_within_buffer_bound(*acc, a, 4000), UINT64_MAX) << "the whole call fits";
  EXPECT_EQ(client::units_within_buffer_bound(*acc, a, 0), UINT64_MAX) << "no bound";
  EXPECT_EQ(client::units_within_buffer_bound(*acc, a, 7), 0u) << "not even a granule";

  // sobel: a job covers whole rows, and one inside the image reads a row above and below it.
  std::vector<uint8_t> image(100 * 50), edges(100 * 50);
  const auto* sobel = funcs::find_function(TANDEM_FN_SOBEL);
  const funcs::Call s = described(TANDEM_FN_SOBEL, {addr(image.data()), addr(edges.data()), 100, 50});
  EXPECT_EQ(client::units_per_row(*sobel, s), 100u);
  for (uint64_t bound : {300, 1000, 1050, 1234, 4000}) {
    const uint64_t u = client::units_within_buffer_bound(*sobel, s, bound);
    ASSERT_GT(u, 0u) << bound;
    EXPECT_EQ(u % 100, 0u) << "whole rows";
    EXPECT_GE(u + 4 * 100, bound) << "within four rows of the bound";
    expect_every_job_within(*sobel, s, u, bound);
  }
  EXPECT_EQ(client::units_within_buffer_bound(*sobel, s, 299), 0u) << "one row and its two halos need 300 bytes";

  // matmul: every job names all of B; A and C grow by rows of the job.
  std::vector<int16_t> ma(40 * 8), mb(8 * 16);
  std::vector<int32_t> mc(40 * 16);
  const auto* matmul = funcs::find_function(TANDEM_FN_MATMUL);
  const funcs::Call m = described(TANDEM_FN_MATMUL, {addr(ma.data()), addr(mb.data()),
                                                     addr(mc.data()), TANDEM_MATMUL_DIMS(40, 8, 16)});
  for (uint64_t bound : {256, 1000, 2000}) {
    const uint64_t u = client::units_within_buffer_bound(*matmul, m, bound);
    ASSERT_GT(u, 0u) << bound;
    expect_every_job_within(*matmul, m, u, bound);
  }
  EXPECT_EQ(client::units_within_buffer_bound(*matmul, m, 255), 0u) << "B alone is 256 bytes";
}

TEST(PartitionedCalls, NoAcceleratorResidentMeansDemandJobsAndSoftware) {
  auto rt = open_embedded("[device.emu]\nresident = [\"nop\"]\n", client::Mode::hw);
  ASSERT_TRUE(rt);
  Accumulate a(1 << 16);
  client::CallReport report;
  EXPECT_EQ(a.run(*rt, &report), a.reference);
  EXPECT_GE(report.counters.demand_jobs, 1u);
  EXPECT_EQ(report.counters.jobs_submitted, 0u);
  EXPECT_GE(rt->stats().demand_jobs.load(), 1u);
  EXPECT_EQ(rt->stats().fallbacks.load(), 1u);
  // The engine recorded the demand (Algorithm 1 reads it).
  auto* emb = dynamic_cast<client::EmbeddedRuntime*>(rt.get());
  ASSERT_NE(emb, nullptr);
  // The demand packet needs no answer, so the call may return before the dispatcher has read it.
  bool seen = false;
  for (int i = 0; i < 500 && !seen; ++i) {
    for (const auto& [f, c] : emb->dispatcher().snapshot().functions) {
      seen = seen || (f == TANDEM_FN_ACCUMULATE && c.demand_requests > 0);
    }
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(seen);
}

TEST(PartitionedCalls, ManyThreadsPartitionAtOnce) {
  auto rt = open_embedded("", client::Mode::alpha);
  ASSERT_TRUE(rt);
  rt->set_mode(client::Mode::alpha, 0.6);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Accumulate a(3000 + static_cast<size_t>(t) * 17, static_cast<uint32_t>(t));
      for (int i = 0; i < 300; ++i) {
        int64_t value = 0;
        if (rt->run(*a.fn, a.call, value) != Status::ok || value != a.reference) wrong.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rt->stats().accelerated_calls.load(), 1200u);
}

// ---- the cancel packet ----

TEST(Cancel, WithdrawsAQueuedJobButNotARunningOne) {
  // One slow accumulator: a 4 KiB job takes 4 ms, so the second job is still queued when the
  // cancels arrive (they follow in the same ring).
  auto rt = open_embedded("[device.emu]\nresident = [\"accumulate\"]\n[functions.accumulate]\nthroughput = 1e6\n");
  ASSERT_TRUE(rt);
  std::vector<int32_t> data(1024, 3);
  auto* recs = static_cast<tandem_completion_t*>(rt->alloc(4 * sizeof(tandem_completion_t)));
  for (int i = 0; i < 4; ++i) rt::reset_record(&recs[i]);
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data.data()), data.size()};
  client::Queue& q = rt->default_queue();
  ASSERT_EQ(q.dispatch(TANDEM_FN_ACCUMULATE, args, 2, 4096, &recs[0]), Status::ok);
  ASSERT_EQ(q.dispatch(TANDEM_FN_ACCUMULATE, args, 2, 4096, &recs[1]), Status::ok);
  ASSERT_EQ(q.cancel(&recs[1], &recs[2]), Status::ok);
  ASSERT_EQ(q.cancel(&recs[0], &recs[3]), Status::ok);
  EXPECT_EQ(rt->wait(&recs[2], {}), Status::ok);
  EXPECT_EQ(recs[2].value, 1) << "the queued job was withdrawn";
  EXPECT_EQ(rt->wait(&recs[1], {}), Status::cancelled);
  EXPECT_EQ(rt->wait(&recs[3], {}), Status::ok);
  EXPECT_EQ(recs[3].value, 0) << "the running job was not";
  EXPECT_EQ(rt->wait(&recs[0], {}), Status::ok);
  EXPECT_EQ(recs[0].value, 3 * 1024);
  rt->free(recs);
}

TEST(Cancel, PartitionerTakesWorkBackFromSlowHardware) {
  // The calibration claims a very fast accelerator; the device is slow. The model sends almost
  // everything to hardware in six jobs on one replica; once the CPU has done its share and the jobs
  // are late, the partitioner withdraws the queued ones and does their work itself.
  client::RuntimeOptions o;
  o.embedded = true;
  // A free link: the calibrated X_a alone is what the model believes (no transfer bound on it).
  o.config_text = "[device.emu]\nresident = [\"accumulate\"]\nlink_gbps = 0\n[functions.accumulate]\nthroughput = 2e7\n";
  client::Calibration cal;
  model::CostParams p;
  p.xc = funcs::software_throughput(TANDEM_FN_ACCUMULATE);
  p.xa = 1000 * p.xc;
  p.o0 = 50e-9;
  p.oc = 300e-9;
  p.da = 1e-6;
  p.granularity = 8;
  cal.functions[TANDEM_FN_ACCUMULATE] = p;
  o.calibration = cal;
  auto opened = client::Runtime::open(o);
  ASSERT_TRUE(opened) << opened.message();
  client::Runtime& rt = *opened.value();
  Accumulate a(1 << 16);  // 256 KiB: about 2 ms per job on this accelerator, 20 us in all on the CPU
  client::CallReport report;
  EXPECT_EQ(a.run(rt, &report), a.reference);
  EXPECT_TRUE(report.partitioned);
  EXPECT_GT(report.alpha, 0.5) << "the model believes the accelerator";
  const engine::PartitionerCounters& c = report.counters;
  EXPECT_GE(c.jobs_cancelled, 1u);
  EXPECT_EQ(c.jobs_cancelled + c.jobs_completed + c.jobs_failed, c.jobs_submitted);
  EXPECT_EQ(c.sw_units + c.hw_units, a.data.size() * 4);
  // How many jobs come back depends on how fast the cancels travel on a busy machine; at least one did.
  EXPECT_LT(static_cast<double>(c.hw_units), report.alpha * static_cast<double>(a.data.size() * 4));
  EXPECT_GE(rt.stats().jobs_cancelled.load(), 1u);
  EXPECT_GE(rt.stats().cancels.load(), rt.stats().jobs_cancelled.load());
}

// ---- calibration files reach the runtime ----

TEST(CalibrationFile, RuntimeUsesItAndTheDeviceFollowsItsXc) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tandem-cal-" + std::to_string(::getpid()));
  const std::string file = (dir / "sub" / "calibration.toml").string();
  client::Calibration cal;
  model::CostParams p;
  p.xc = 5e9;
  p.xa = 1.3e10;
  p.o0 = 40e-9;
  p.oc = 250e-9;
  p.da = 900e-9;
  p.granularity = 8;
  cal.functions[TANDEM_FN_ACCUMULATE] = p;
  client::save_calibration(cal, file);

  client::RuntimeOptions o;
  o.embedded = true;
  o.calibration_path = file;
  auto rt = client::Runtime::open(o);
  ASSERT_TRUE(rt) << rt.message();
  const model::CostParams got = rt.value()->cost_params(TANDEM_FN_ACCUMULATE);
  EXPECT_DOUBLE_EQ(got.xc, p.xc);
  EXPECT_DOUBLE_EQ(got.xa, p.xa);
  EXPECT_NEAR(got.da, p.da, 1e-15);
  EXPECT_EQ(rt.value()->calibration_source(), file);
  EXPECT_DOUBLE_EQ(rt.value()->accel_model(TANDEM_FN_ACCUMULATE).throughput, 2.6 * p.xc)
      << "the emulated accelerator's speedup is relative to the calibrated X_c";
  // Functions the file does not name keep their defaults.
  EXPECT_GT(rt.value()->cost_params(TANDEM_FN_WORK).xc, 0.0);
  rt.value().reset();

  // The configuration's [calibration] file names it too.
  auto via_config = open_embedded("[calibration]\nfile = \"" + file + "\"\n");
  ASSERT_TRUE(via_config);
  EXPECT_DOUBLE_EQ(via_config->cost_params(TANDEM_FN_ACCUMULATE).xc, p.xc);

  // A broken file is an error at open, not a silent default.
  {
    std::ofstream f(file);
    f << "[calibration]\nversion = 99\n";
  }
  o.calibration_path = file;
  auto broken = client::Runtime::open(o);
  EXPECT_FALSE(broken);
  EXPECT_EQ(broken.status(), Status::invalid_argument);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tandem
