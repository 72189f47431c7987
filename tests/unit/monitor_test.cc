// The system monitor's figures on scripted engine traces.
#include <gtest/gtest.h>

#include "engine/monitor.hpp"

namespace tandem::engine {
namespace {

constexpr FunctionId kF = 1;

struct Rig {
  Rig() {
    config.slots = 2;
    config.known.set(kF);
    config.models[kF].throughput = 1e9;  // 1 unit/ns
    config.models[kF].latency_s = 1e-6;
    engine = std::make_unique<Engine>(config);
    session = engine->open_session();
    MonitorConfig mc;
    mc.period_ns = 1000;
    monitor = std::make_unique<Monitor>(config, mc);
  }
  void submit(uint64_t work, Time now) {
    JobSpec j;
    j.function = kF;
    j.workload = work;
    j.session = session;
    j.completion = ++key;
    engine->submit(j, now, out);
    out.clear();
  }
  EngineConfig config;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Monitor> monitor;
  SessionId session = 0;
  uint64_t key = 0;
  Actions out;
};

TEST(Monitor, QueueFiguresUtilisationAndDemandPerPeriod) {
  Rig r;
  ASSERT_TRUE(r.engine->load(0, kF, 0, r.out));
  r.engine->configure_done(0, 0, r.out);
  r.out.clear();
  r.monitor->sample(*r.engine, 0);
  r.submit(400, 0);    // runs on slot 0 from t=0
  r.submit(300, 100);  // queued
  r.submit(200, 200);  // queued
  r.monitor->sample(*r.engine, 1000);
  const abi::FunctionMetrics& m = r.monitor->metrics(kF);
  EXPECT_EQ(m.accelerators, 1);
  EXPECT_EQ(m.queued_jobs, 2u);
  EXPECT_EQ(m.queued_work, 500u);
  EXPECT_EQ(m.running_jobs, 1u);
  EXPECT_EQ(m.outstanding_work, 900u);
  EXPECT_EQ(m.submitted_work, 900u);
  EXPECT_DOUBLE_EQ(m.utilization, 1.0) << "slot 0 was busy for the whole period";
  EXPECT_DOUBLE_EQ(m.demand, 900.0);
  // Eq 5.2: D_q = D_a q + sum W / (n_a X'_a) = 1us * 2 + 900 ns.
  EXPECT_NEAR(m.queue_wait_s, 2e-6 + 900e-9, 1e-15);
  EXPECT_DOUBLE_EQ(m.effective_throughput, 1e9);

  // Next period: the running job ends at 1500, slot idle after the queue drains at 2000.
  r.engine->job_finished(0, Status::ok, 0, 1500, r.out);  // 300 starts
  r.engine->job_finished(0, Status::ok, 0, 1800, r.out);  // 200 starts
  r.engine->job_finished(0, Status::ok, 0, 2000, r.out);
  r.out.clear();
  r.monitor->sample(*r.engine, 2000);
  EXPECT_EQ(m.submitted_work, 0u) << "nothing submitted in this period";
  EXPECT_EQ(m.outstanding_work, 0u);
  EXPECT_DOUBLE_EQ(m.demand, 0.0);
  EXPECT_DOUBLE_EQ(m.utilization, 1.0);
  r.monitor->sample(*r.engine, 3000);
  EXPECT_DOUBLE_EQ(m.utilization, 0.0);
}

TEST(Monitor, NoAcceleratorMeansInfiniteWaitAndRefreshSeesNewReplicas) {
  Rig r;
  r.monitor->sample(*r.engine, 0);
  EXPECT_EQ(r.monitor->metrics(kF).accelerators, 0);
  EXPECT_TRUE(std::isinf(r.monitor->metrics(kF).queue_wait_s));
  ASSERT_TRUE(r.engine->load(1, kF, 0, r.out));
  r.engine->configure_done(1, 10, r.out);
  r.monitor->refresh(*r.engine, kF);
  EXPECT_EQ(r.monitor->metrics(kF).accelerators, 1);
  EXPECT_DOUBLE_EQ(r.monitor->metrics(kF).queue_wait_s, 0.0);
  ASSERT_EQ(r.monitor->changed().size(), 1u);
}

TEST(Monitor, SeqlockedPageCopiesWhatWasWritten) {
  tandem_metrics_page_t page;
  abi::init_metrics_page(page, 8, 1000);
  abi::FunctionMetrics m;
  m.accelerators = 3;
  m.queue_wait_s = 1.5e-3;
  m.demand = 42;
  abi::write_metrics(page, 7, m);
  abi::FunctionMetrics out;
  ASSERT_TRUE(abi::read_metrics(page, 7, out));
  EXPECT_EQ(out.accelerators, 3);
  EXPECT_DOUBLE_EQ(out.queue_wait_s, 1.5e-3);
  EXPECT_DOUBLE_EQ(out.demand, 42);
  EXPECT_EQ(page.functions[7].seq % 2, 0u);
  page.functions[9].seq = 1;  // a writer died mid-update: readers give up instead of hanging
  EXPECT_FALSE(abi::read_metrics(page, 9, out, 10));
}

}  // namespace
}  // namespace tandem::engine
