// The engine as a pure state machine: scripts of events, and the actions they must produce.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine.hpp"

namespace tandem::engine {
namespace {

constexpr FunctionId kF = 1;
constexpr FunctionId kG = 2;
constexpr FunctionId kH = 3;

std::string render(const Action& a) {
  std::ostringstream os;
  switch (a.kind) {
    case ActionKind::start_job: os << "start s" << a.slot << " k" << a.completion; break;
    case ActionKind::complete:
      os << "complete k" << a.completion << " " << to_string(a.status);
      if (a.value != 0) os << " v" << a.value;
      break;
    case ActionKind::begin_configure: os << "configure s" << a.slot << " f" << a.function << " until" << a.until; break;
    case ActionKind::session_drained: os << "drained " << a.session; break;
  }
  return os.str();
}

class EngineScript : public ::testing::Test {
 protected:
  EngineConfig base_config(uint32_t slots = 2) {
    EngineConfig c;
    c.slots = slots;
    c.queue_capacity = 4;
    c.max_jobs = 64;
    for (FunctionId f : {kF, kG, kH}) {
      c.known.set(f);
      c.models[f].throughput = 1e9;  // 1 unit per ns
      c.models[f].reconfig_s = 1e-6;  // 1000 ns
    }
    return c;
  }
  void make(const EngineConfig& c) {
    engine = std::make_unique<Engine>(c);
    session = engine->open_session();
    ring = engine->open_ring(session);
  }
  // Makes `f` resident in `slot` immediately.
  void resident(SlotId slot, FunctionId f) {
    ASSERT_TRUE(engine->load(slot, f, 0, out));
    engine->configure_done(slot, 0, out);
    out.clear();
  }
  JobId submit(FunctionId f, uint64_t key, uint64_t workload = 10, SessionId s = kNone, uint32_t flags = 0,
               bool barrier = false) {
    JobSpec j;
    j.function = f;
    j.workload = workload;
    j.session = s == kNone ? session : s;
    j.ring = ring;
    j.completion = key;
    j.flags = flags;
    j.barrier_bit = barrier;
    return engine->submit(j, now, out);
  }
  std::vector<std::string> take() {
    std::vector<std::string> r;
    for (const Action& a : out) r.push_back(render(a));
    out.clear();
    return r;
  }
  using V = std::vector<std::string>;

  std::unique_ptr<Engine> engine;
  SessionId session = 0;
  RingId ring = 0;
  Time now = 0;
  Actions out;
};

TEST_F(EngineScript, UnknownAndUnroutedFunctionsCompleteAtOnceAndRecordDemand) {
  make(base_config());
  EXPECT_EQ(submit(99, 1), kNone);
  EXPECT_EQ(take(), V{"complete k1 unknown_function"});
  EXPECT_EQ(submit(kG, 2), kNone);
  EXPECT_EQ(take(), V{"complete k2 not_accelerated"});
  EXPECT_TRUE(engine->requests().test(kG));
  EXPECT_EQ(engine->counters(kG).demand_requests, 1u);
  engine->clear_requests();
  EXPECT_FALSE(engine->requests().test(kG));
}

TEST_F(EngineScript, DemandOnlyPacketNeverQueues) {
  make(base_config());
  resident(0, kF);
  submit(kG, 1, 0, kNone, TANDEM_FLAG_DEMAND_ONLY);
  submit(kF, 2, 0, kNone, TANDEM_FLAG_DEMAND_ONLY);
  EXPECT_EQ(take(), (V{"complete k1 not_accelerated", "complete k2 ok"}));
  EXPECT_TRUE(engine->requests().test(kG));
  EXPECT_EQ(engine->jobs_in_flight(), 0u);
}

TEST_F(EngineScript, JobsRunOnIdleSlotsAndQueueBehindBusyOnes) {
  make(base_config());
  resident(0, kF);
  submit(kF, 1);
  submit(kF, 2);
  EXPECT_EQ(take(), V{"start s0 k1"});
  EXPECT_EQ(engine->queue(engine->route(kF)).jobs, 1u);
  EXPECT_EQ(engine->queue(engine->route(kF)).work, 10u);
  now = 10;
  engine->job_finished(0, Status::ok, 42, now, out);
  EXPECT_EQ(take(), (V{"complete k1 ok v42", "start s0 k2"}));
  engine->job_finished(0, Status::ok, 0, now, out);
  EXPECT_EQ(take(), V{"complete k2 ok"});
  EXPECT_EQ(engine->slot(0).jobs_done, 2u);
  EXPECT_EQ(engine->jobs_in_flight(), 0u);
}

TEST_F(EngineScript, ReplicaSlotsShareOneQueueAndAreServedRoundRobin) {
  make(base_config(3));
  resident(0, kF);
  resident(1, kF);
  resident(2, kF);
  EXPECT_EQ(engine->accelerators(kF), 3u);
  EXPECT_EQ(engine->slot(0).queue, engine->slot(1).queue);
  submit(kF, 1);
  submit(kF, 2);
  submit(kF, 3);
  EXPECT_EQ(take(), (V{"start s0 k1", "start s1 k2", "start s2 k3"}));
  engine->job_finished(1, Status::ok, 0, 5, out);
  engine->job_finished(0, Status::ok, 0, 5, out);
  take();
  submit(kF, 4);
  EXPECT_EQ(take(), V{"start s0 k4"}) << "the search starts after the slot served last (s2)";
}

// A slot its device took out of service (a job past its time limit still running there) takes no job
// while a replica in service serves the function, counts as no accelerator, and cannot be reconfigured;
// back in service it serves again.
TEST_F(EngineScript, ASlotOutOfServiceTakesNoJobsWhileAReplicaServes) {
  make(base_config(3));
  resident(0, kF);
  resident(1, kF);
  resident(2, kG);
  submit(kF, 1);
  EXPECT_EQ(take(), V{"start s0 k1"});
  now = 10;
  engine->job_finished(0, Status::timeout, 0, now, out);
  engine->set_in_service(0, false, now, out);
  EXPECT_EQ(take(), V{"complete k1 timeout"});
  EXPECT_FALSE(engine->in_service(0));
  EXPECT_FALSE(engine->slot(0).in_service);
  EXPECT_EQ(engine->accelerators(kF), 1u);
  EXPECT_DOUBLE_EQ(engine->usable_throughput(kF), 1e9);
  EXPECT_FALSE(engine->can_reconfigure(0));
  EXPECT_FALSE(engine->load(0, kG, now, out));
  // Every job goes to s1, one at a time, though s0 is idle.
  submit(kF, 2);
  submit(kF, 3);
  EXPECT_EQ(take(), V{"start s1 k2"});
  engine->job_finished(1, Status::ok, 0, now, out);
  EXPECT_EQ(take(), (V{"complete k2 ok", "start s1 k3"}));
  submit(kF, 4);
  EXPECT_EQ(take(), V{}) << "s1 is busy: k4 waits for it, not for s0";
  // Back in service: s0 takes the waiting job at once.
  engine->set_in_service(0, true, now, out);
  EXPECT_EQ(take(), V{"start s0 k4"});
  EXPECT_EQ(engine->accelerators(kF), 2u);
  EXPECT_DOUBLE_EQ(engine->usable_throughput(kF), 2e9);
  engine->set_in_service(0, true, now, out);  // no change: no double count
  EXPECT_EQ(engine->accelerators(kF), 2u);
  engine->job_finished(0, Status::ok, 0, now, out);
  engine->job_finished(1, Status::ok, 0, now, out);
  take();
  // The last slot in service of a function that has one out of service is kept: reconfiguring it would
  // leave the function only a slot where every job fails. Loading what a slot already holds still
  // succeeds, in service or not.
  engine->set_in_service(0, false, now, out);
  EXPECT_FALSE(engine->can_reconfigure(1));
  EXPECT_FALSE(engine->unload(1, out));
  EXPECT_FALSE(engine->load(1, kG, now, out));
  EXPECT_TRUE(engine->load(0, kF, now, out));
  EXPECT_TRUE(engine->load(1, kF, now, out));
  engine->set_in_service(0, true, now, out);
  EXPECT_TRUE(engine->can_reconfigure(1));
  EXPECT_EQ(take(), V{});
}

// Where every slot of a function is out of service, its jobs still start there (and fail fast with the
// device's status) rather than wait for a device that may never return; a slot taken out of service while
// busy or configuring, or retired, keeps the counts right.
TEST_F(EngineScript, WithEverySlotOutOfServiceJobsStillStartAndCountsStayRight) {
  make(base_config(2));
  resident(0, kF);
  engine->set_in_service(0, false, now, out);
  EXPECT_EQ(engine->accelerators(kF), 0u);
  EXPECT_DOUBLE_EQ(engine->usable_throughput(kF), 0);
  submit(kF, 1);
  EXPECT_EQ(take(), V{"start s0 k1"});
  engine->job_finished(0, Status::device_error, 0, now, out);
  EXPECT_EQ(take(), V{"complete k1 device_error"});
  // Busy when it leaves service, then back: one accelerator throughout the job.
  engine->set_in_service(0, true, now, out);
  submit(kF, 2);
  EXPECT_EQ(take(), V{"start s0 k2"});
  engine->set_in_service(0, false, now, out);
  EXPECT_EQ(engine->accelerators(kF), 0u);
  engine->set_in_service(0, true, now, out);
  EXPECT_EQ(engine->accelerators(kF), 1u);
  engine->job_finished(0, Status::ok, 0, now, out);
  take();
  // Out of service while configuring: it becomes no accelerator when ready, and one once back.
  ASSERT_TRUE(engine->load(1, kF, now, out));
  engine->set_in_service(1, false, now, out);
  engine->configure_done(1, now, out);
  EXPECT_EQ(engine->accelerators(kF), 1u);
  engine->set_in_service(1, true, now, out);
  EXPECT_EQ(engine->accelerators(kF), 2u);
  // Retired in service: the counts go back to nothing, and the queue is free for another function.
  ASSERT_TRUE(engine->unload(0, out));
  ASSERT_TRUE(engine->unload(1, out));
  EXPECT_EQ(engine->accelerators(kF), 0u);
  EXPECT_EQ(engine->route(kF), kNone);
  take();
}

TEST_F(EngineScript, FullQueueAndJobSizeBound) {
  EngineConfig c = base_config(1);
  c.max_job_ns = 100;  // 1 unit per ns: workload above 100 is too large
  make(c);
  resident(0, kF);
  submit(kF, 1, 500);
  EXPECT_EQ(take(), V{"complete k1 job_too_large"});
  for (uint64_t k = 10; k < 15; ++k) submit(kF, k);  // 1 running + 4 queued fill a queue of 4
  submit(kF, 99);
  auto actions = take();
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[0], "start s0 k10");
  EXPECT_EQ(actions[1], "complete k99 queue_full");
}

// The bound is exact at its edge, with a latency, and for workloads whose time overflows int64 ns.
TEST_F(EngineScript, JobSizeBoundIsExactAtItsEdge) {
  EngineConfig c = base_config(2);
  c.max_job_ns = 1000;
  c.models[kF].latency_s = 250e-9;  // 250 ns + 1 ns per unit: 750 units fit, 751 do not
  c.models[kG].throughput = 0;      // no throughput: any work is too large, an empty job fits
  make(c);
  resident(0, kF);
  resident(1, kG);
  submit(kF, 1, 750);
  EXPECT_EQ(take(), V{"start s0 k1"});
  engine->job_finished(0, Status::ok, 0, now, out);
  take();
  submit(kF, 2, 751);
  submit(kF, 3, UINT64_MAX);
  submit(kG, 4, 1);
  EXPECT_EQ(take(), (V{"complete k2 job_too_large", "complete k3 job_too_large", "complete k4 job_too_large"}));
  submit(kG, 5, 0);
  EXPECT_EQ(take(), V{"start s1 k5"});
}

TEST_F(EngineScript, SessionsAreServedRoundRobinWithinAQueue) {
  make(base_config(1));
  resident(0, kF);
  const SessionId other = engine->open_session();
  submit(kF, 1);         // runs at once
  submit(kF, 2);         // session A queued
  submit(kF, 3);
  submit(kF, 4);
  submit(kF, 50, 10, other);  // session B: one job behind A's three
  take();
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) {
    engine->job_finished(0, Status::ok, 0, now, out);
    for (const Action& a : out) {
      if (a.kind == ActionKind::start_job) order.push_back("k" + std::to_string(a.completion));
    }
    out.clear();
  }
  EXPECT_EQ(order, (V{"k2", "k50", "k3", "k4"})) << "B does not wait for all of A's backlog";
}

// One session that keeps a queue full cannot make another session's jobs fail: a session below its fair
// share of the queue (capacity / sessions with jobs queued there, counting itself) is admitted even
// when the queue holds its capacity. (A flooder used to cost a victim 1-10% of its jobs.)
TEST_F(EngineScript, AFloodingSessionCannotFillTheQueueForOthers) {
  EngineConfig c = base_config(1);
  c.queue_capacity = 8;
  make(c);
  resident(0, kF);
  const SessionId flooder = session;
  const SessionId victim = engine->open_session();
  submit(kF, 1, 10, flooder);  // runs
  for (uint64_t k = 2; k < 20; ++k) submit(kF, k, 10, flooder);
  auto first = take();
  EXPECT_EQ(std::count(first.begin(), first.end(), "start s0 k1"), 1);
  EXPECT_EQ(engine->queue(engine->route(kF)).jobs, 8u) << "alone, the flooder may fill the whole queue";
  EXPECT_EQ(std::count_if(first.begin(), first.end(), [](const std::string& a) { return a.ends_with("queue_full"); }), 10);
  // Two sessions now: the victim's share is 8 / 2 = 4, and it gets all four.
  for (uint64_t k = 100; k < 104; ++k) submit(kF, k, 10, victim);
  EXPECT_EQ(take(), V{}) << "queued, not refused";
  EXPECT_EQ(engine->queue(engine->route(kF)).jobs, 12u) << "over capacity by at most the others' shares";
  // Beyond its share it is refused like anyone else while the queue is over capacity.
  submit(kF, 104, 10, victim);
  EXPECT_EQ(take(), V{"complete k104 queue_full"});
  // The flooder, over its share, is refused.
  submit(kF, 20, 10, flooder);
  EXPECT_EQ(take(), V{"complete k20 queue_full"});
  // Round-robin service: the victim's jobs run every other turn.
  std::vector<std::string> order;
  for (int i = 0; i < 6; ++i) {
    engine->job_finished(0, Status::ok, 0, now, out);
    for (const Action& a : out) {
      if (a.kind == ActionKind::start_job) order.push_back("k" + std::to_string(a.completion));
    }
    out.clear();
  }
  EXPECT_EQ(order, (V{"k2", "k100", "k3", "k101", "k4", "k102"}));
}

// The bound on the whole queue: with n sessions each below its share, the queue holds at most
// capacity + capacity (every share), never more; a third session's share shrinks as sessions join.
TEST_F(EngineScript, FairShareBoundsTheQueueAtTwiceItsCapacity) {
  EngineConfig c = base_config(1);
  c.queue_capacity = 12;
  make(c);
  resident(0, kF);
  std::vector<SessionId> sessions{session, engine->open_session(), engine->open_session()};
  submit(kF, 1, 10, sessions[0]);  // runs
  take();
  uint64_t key = 2;
  uint32_t admitted = 0;
  // The first session alone fills the queue; the others each get their share on top.
  for (int i = 0; i < 30; ++i) {
    submit(kF, key++, 10, sessions[0]);
    admitted += out.empty() ? 1 : 0;
    out.clear();
  }
  EXPECT_EQ(admitted, 12u);
  for (int round = 0; round < 30; ++round) {
    for (SessionId s : {sessions[1], sessions[2]}) {
      submit(kF, key++, 10, s);
      admitted += out.empty() ? 1 : 0;
      out.clear();
    }
  }
  const uint32_t queued = engine->queue(engine->route(kF)).jobs;
  EXPECT_EQ(queued, admitted);
  EXPECT_EQ(queued, 12u + 4u + 4u) << "capacity, then 12 / 3 for each of the two others";
  EXPECT_LE(queued, 2 * 12u);
  SessionId late = engine->open_session();
  submit(kF, 999, 10, late);
  EXPECT_EQ(take(), V{}) << "a newcomer below its share (12 / 4 = 3) is admitted";
}

TEST_F(EngineScript, PerSessionJobLimit) {
  EngineConfig c = base_config(1);
  c.max_jobs_per_session = 2;
  make(c);
  resident(0, kF);
  submit(kF, 1);
  submit(kF, 2);
  submit(kF, 3);
  EXPECT_EQ(take(), (V{"start s0 k1", "complete k3 limit_exceeded"}));
}

// The job pool holds exactly max_jobs, its ids handed out on demand (a fresh engine has touched none),
// and a finished job's id is the next one reused.
TEST_F(EngineScript, JobPoolHoldsExactlyMaxJobsAndReusesFreedIds) {
  EngineConfig c = base_config(1);
  c.max_jobs = 5;
  c.queue_capacity = 16;
  make(c);
  resident(0, kF);
  std::vector<JobId> ids;
  for (uint64_t k = 1; k <= 5; ++k) ids.push_back(submit(kF, k));
  EXPECT_EQ(ids, (std::vector<JobId>{0, 1, 2, 3, 4}));
  EXPECT_EQ(submit(kF, 6), kNone);  // the pool is empty, the queue is not
  EXPECT_EQ(take(), (V{"start s0 k1", "complete k6 queue_full"}));
  engine->job_finished(0, Status::ok, 0, now, out);
  EXPECT_EQ(take(), (V{"complete k1 ok", "start s0 k2"}));
  EXPECT_EQ(submit(kF, 7), 0u);  // job 0's id, freed by its completion
  EXPECT_EQ(submit(kF, 8), kNone);
  EXPECT_EQ(engine->jobs_in_flight(), 5u);
}

TEST_F(EngineScript, ReconfigurationTakesItsDelayAndRoutesTheFunction) {
  make(base_config(2));
  now = 100;
  ASSERT_TRUE(engine->load(0, kG, now, out));
  EXPECT_EQ(take(), V{"configure s0 f2 until1100"});
  EXPECT_EQ(engine->accelerators(kG), 0u) << "configuring slots do not count";
  EXPECT_EQ(engine->configuring(kG), 1u);
  submit(kG, 1);
  EXPECT_EQ(take(), V{}) << "routed while configuring: the job waits in the queue";
  engine->configure_done(0, 1100, out);
  EXPECT_EQ(take(), V{"start s0 k1"});
  EXPECT_EQ(engine->accelerators(kG), 1u);
}

TEST_F(EngineScript, NeverReconfigureABusySlot) {
  make(base_config(2));
  resident(0, kF);
  submit(kF, 1);
  take();
  EXPECT_FALSE(engine->can_reconfigure(0)) << "busy";
  EXPECT_FALSE(engine->load(0, kG, now, out));
  EXPECT_FALSE(engine->unload(0, out));
  engine->job_finished(0, Status::ok, 0, now, out);
  EXPECT_TRUE(engine->can_reconfigure(0));
  EXPECT_TRUE(engine->load(0, kG, now, out));
}

TEST_F(EngineScript, IdleOnlySlotOfNonEmptyQueueIsProtected) {
  make(base_config(2));
  now = 0;
  ASSERT_TRUE(engine->load(0, kF, now, out));  // configuring
  take();
  submit(kF, 1);  // queued while configuring
  EXPECT_FALSE(engine->can_reconfigure(0)) << "the configuring slot is the only one serving a non-empty queue";
  EXPECT_FALSE(engine->load(0, kG, now, out));
  EXPECT_TRUE(engine->load(1, kG, now, out)) << "another slot is free to take a new function";
}

TEST_F(EngineScript, RetiringTheLastSlotFreesTheQueueForAnotherFunction) {
  EngineConfig c = base_config(2);
  c.queues = 1;
  make(c);
  resident(0, kF);
  EXPECT_FALSE(engine->load(1, kG, now, out)) << "the only queue serves f";
  ASSERT_TRUE(engine->load(0, kG, now, out));
  EXPECT_EQ(engine->route(kF), kNone);
  EXPECT_NE(engine->route(kG), kNone);
  take();
  submit(kF, 1);
  EXPECT_EQ(take(), V{"complete k1 not_accelerated"});
}

TEST_F(EngineScript, BarrierAndCompletesWhenItsDependenciesDo) {
  make(base_config(2));
  resident(0, kF);
  resident(1, kG);
  submit(kF, 1);
  submit(kG, 2);
  take();
  BarrierSpec b;
  b.session = session;
  b.ring = ring;
  b.completion = 9;
  b.deps = {1, 2, 0, 0, 0};
  b.dep_state = {DepState::pending, DepState::pending, DepState::unused, DepState::unused, DepState::unused};
  engine->submit_barrier(b, now, out);
  EXPECT_EQ(take(), V{});
  EXPECT_TRUE(engine->ring_blocked(ring)) << "packets after the barrier wait";
  engine->job_finished(0, Status::ok, 0, now, out);
  EXPECT_EQ(take(), V{"complete k1 ok"});
  engine->job_finished(1, Status::ok, 0, now, out);
  EXPECT_EQ(take(), (V{"complete k2 ok", "complete k9 ok"}));
  EXPECT_FALSE(engine->ring_blocked(ring));
}

TEST_F(EngineScript, BarrierFailsWhenADependencyFails) {
  make(base_config(1));
  resident(0, kF);
  submit(kF, 1);
  take();
  BarrierSpec b;
  b.session = session;
  b.ring = ring;
  b.completion = 9;
  b.deps = {1, 7, 0, 0, 0};
  b.dep_state = {DepState::pending, DepState::done_ok, DepState::unused, DepState::unused, DepState::unused};
  engine->submit_barrier(b, now, out);
  engine->job_finished(0, Status::device_error, 0, now, out);
  EXPECT_EQ(take(), (V{"complete k1 device_error", "complete k9 dependency_failed"}));
  b.completion = 10;
  b.dep_state = {DepState::done_failed, DepState::unused, DepState::unused, DepState::unused, DepState::unused};
  engine->submit_barrier(b, now, out);
  EXPECT_EQ(take(), V{"complete k10 dependency_failed"});
}

TEST_F(EngineScript, BarrierWaitsForADependencyNotYetSubmitted) {
  make(base_config(1));
  resident(0, kF);
  BarrierSpec b;
  b.session = session;
  b.ring = kNone;  // from another ring: this one must not block
  b.completion = 9;
  b.deps = {5, 0, 0, 0, 0};
  b.dep_state = {DepState::pending, DepState::unused, DepState::unused, DepState::unused, DepState::unused};
  engine->submit_barrier(b, now, out);
  EXPECT_EQ(take(), V{});
  submit(kF, 5);
  engine->job_finished(0, Status::ok, 0, now, out);
  EXPECT_EQ(take(), (V{"start s0 k5", "complete k5 ok", "complete k9 ok"}));
}

TEST_F(EngineScript, BarrierBitOnADispatchBlocksItsRingUntilItCompletes) {
  make(base_config(1));
  resident(0, kF);
  submit(kF, 1, 10, kNone, 0, true);
  EXPECT_TRUE(engine->ring_blocked(ring));
  engine->job_finished(0, Status::ok, 0, now, out);
  EXPECT_FALSE(engine->ring_blocked(ring));
}

TEST_F(EngineScript, CancelQueuedWithdrawsOnlyJobsThatHaveNotStarted) {
  make(base_config(1));
  resident(0, kF);
  submit(kF, 1);
  submit(kF, 2);
  submit(kF, 3);
  take();
  EXPECT_FALSE(engine->cancel_queued(session, 1, out)) << "running";
  EXPECT_TRUE(engine->cancel_queued(session, 3, out));
  EXPECT_EQ(take(), V{"complete k3 cancelled"});
  engine->job_finished(0, Status::ok, 0, now, out);
  EXPECT_EQ(take(), (V{"complete k1 ok", "start s0 k2"}));
}

TEST_F(EngineScript, CancelPacketAnswersWithdrawnOrNotAfterTheTargetsOwnCompletion) {
  make(base_config(1));
  resident(0, kF);
  const SessionId other = engine->open_session();
  submit(kF, 1);
  submit(kF, 2);
  take();
  EXPECT_FALSE(engine->cancel(session, 1, 100, 0, out)) << "running";
  EXPECT_EQ(take(), V{"complete k100 ok"});
  EXPECT_FALSE(engine->cancel(other, 2, 101, 0, out)) << "another session's job is not found";
  EXPECT_EQ(take(), V{"complete k101 ok"});
  EXPECT_TRUE(engine->cancel(session, 2, 102, 0, out));
  EXPECT_EQ(take(), (V{"complete k2 cancelled", "complete k102 ok v1"}));
  EXPECT_FALSE(engine->cancel(session, 2, 103, 0, out)) << "already withdrawn";
  EXPECT_EQ(take(), V{"complete k103 ok"});
  engine->job_finished(0, Status::ok, 0, now, out);
  EXPECT_EQ(take(), V{"complete k1 ok"});
  EXPECT_EQ(engine->jobs_in_flight(), 0u);
}

TEST_F(EngineScript, ClosingASessionCancelsItsQueueAndDrainsAfterRunningJobs) {
  make(base_config(1));
  resident(0, kF);
  const SessionId other = engine->open_session();
  submit(kF, 1);
  submit(kF, 2);
  submit(kF, 30, 10, other);
  take();
  engine->close_session(session, now, out);
  EXPECT_EQ(take(), V{"complete k2 cancelled"});
  submit(kF, 4);
  EXPECT_EQ(take(), V{"complete k4 cancelled"}) << "a closed session submits nothing";
  engine->job_finished(0, Status::ok, 0, now, out);
  EXPECT_EQ(take(), (V{"complete k1 ok", "drained 0", "start s0 k30"}));
  EXPECT_EQ(engine->session_jobs(other), 1u);
}

TEST_F(EngineScript, SessionIdsAreReusedOnlyAfterDraining) {
  make(base_config(1));
  resident(0, kF);
  submit(kF, 1);
  take();
  engine->close_session(session, now, out);
  EXPECT_NE(engine->open_session(), session) << "still draining";
  engine->job_finished(0, Status::ok, 0, now, out);
  take();
  EXPECT_EQ(engine->open_session(), session);
}

TEST_F(EngineScript, OutstandingWorkCountsQueuedAndRunningJobs) {
  make(base_config(1));
  resident(0, kF);
  submit(kF, 1, 100);
  submit(kF, 2, 30);
  EXPECT_EQ(engine->outstanding_work(kF), 130u);
  EXPECT_EQ(engine->running_jobs(kF), 1u);
  engine->job_finished(0, Status::ok, 0, now, out);
  EXPECT_EQ(engine->outstanding_work(kF), 30u);
}

}  // namespace
}  // namespace tandem::engine
