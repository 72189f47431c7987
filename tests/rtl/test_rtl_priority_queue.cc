#include <gtest/gtest.h>

#include "funcs/ref/pq_ref.hpp"
#include "rtl_test_util.hpp"

namespace tandem::testing {
namespace {

namespace ref = tandem::funcs::ref;

uint64_t encode(const ref::PqCommand& c) {
  return rtl::pq_command_word(c.opcode, c.handle, c.priority, c.at_head, c.highest);
}

// Runs the commands on both and compares every response.
void expect_same(rtl::RtlAccelerator& slot, ref::PriorityQueueRef& model,
                 const std::vector<ref::PqCommand>& commands, bool clear_first) {
  if (clear_first) model.clear();
  std::vector<uint64_t> words;
  for (const auto& c : commands) words.push_back(encode(c));
  const auto r = slot.run(rtl::pq_job(words, clear_first));
  ASSERT_EQ(r.status, Status::ok) << r.message;
  const auto got = rtl::pq_responses(r);
  ASSERT_EQ(got.size(), commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    const ref::PqResponse want = model.execute(commands[i]);
    const ref::PqResponse have{got[i].handle, got[i].priority, got[i].ok, got[i].occupancy};
    ASSERT_EQ(have, want) << "command " << i << ": opcode " << int{commands[i].opcode} << " prio "
                          << int{commands[i].priority} << " head " << commands[i].at_head
                          << " highest " << commands[i].highest;
  }
  EXPECT_EQ(r.value, model.size());
}

// A random command mix. `priorities` limits the priorities used (fewer means more ties).
std::vector<ref::PqCommand> random_commands(TestRng& rng, size_t n, uint32_t priorities,
                                            uint32_t push_weight) {
  std::vector<ref::PqCommand> cmds(n);
  for (auto& c : cmds) {
    const uint32_t kind = rng.below(push_weight + 4);
    c.handle = static_cast<uint32_t>(rng.next());
    c.priority =
        static_cast<uint8_t>(priorities >= 256 ? rng.below(256) : rng.below(priorities) * 37);
    if (kind < push_weight) {
      c.opcode = static_cast<uint8_t>(ref::PqOp::push);
      c.at_head = rng.below(3) == 0;
    } else if (kind == push_weight + 3) {
      c.opcode = rng.below(2) ? static_cast<uint8_t>(ref::PqOp::peek)
                              : static_cast<uint8_t>(4 + rng.below(250));
      c.highest = rng.below(2) == 0;
    } else {
      c.opcode = static_cast<uint8_t>(ref::PqOp::pop);
      c.highest = rng.below(4) != 0;
    }
  }
  return cmds;
}

TEST(PqReference, TieRules) {
  ref::PriorityQueueRef q(8);
  auto push = [&](uint32_t h, uint8_t p, bool head) {
    return q.execute({static_cast<uint8_t>(ref::PqOp::push), h, p, head, false});
  };
  auto pop_top = [&] {
    return q.execute({static_cast<uint8_t>(ref::PqOp::pop), 0, 0, false, true});
  };
  push(1, 5, false);
  push(2, 5, false);
  push(3, 9, false);
  push(4, 5, true);  // preempted: goes first among priority 5
  EXPECT_EQ(pop_top().handle, 3u);
  EXPECT_EQ(pop_top().handle, 4u);
  EXPECT_EQ(pop_top().handle, 1u);
  EXPECT_EQ(pop_top().handle, 2u);
  const auto empty = pop_top();
  EXPECT_FALSE(empty.ok);
  EXPECT_EQ(empty.handle, 0u);
}

TEST(RtlPriorityQueue, TieRulesInHardware) {
  auto slot = make_slot(rtl::RtlFunction::priority_queue);
  ASSERT_NE(slot, nullptr);
  ref::PriorityQueueRef model(rtl::kPqCapacity);
  const uint8_t push = 1, pop = 2, peek = 3;
  expect_same(*slot, model,
              {{push, 10, 5, false, false},
               {push, 11, 5, false, false},
               {push, 12, 200, false, false},
               {push, 13, 5, true, false},
               {peek, 0, 0, false, true},
               {pop, 0, 0, false, true},
               {pop, 0, 5, false, false},
               {pop, 0, 0, false, true},
               {pop, 0, 0, false, true},
               {pop, 0, 0, false, true},
               {pop, 0, 7, false, false},
               {peek, 0, 9, false, false}},
              true);
}

TEST(RtlPriorityQueue, RandomSequencesMatchReference) {
  auto slot = make_slot(rtl::RtlFunction::priority_queue);
  ASSERT_NE(slot, nullptr);
  ref::PriorityQueueRef model(rtl::kPqCapacity);
  TestRng rng(61);
  // The queue keeps its contents between jobs; some jobs start by clearing it.
  for (int job = 0; job < 30; ++job) {
    const uint32_t priorities = job % 3 == 0 ? 256 : 3;
    const uint32_t push_weight = job < 10 ? 4 : 6;  // later jobs fill the queue up to capacity
    expect_same(*slot, model, random_commands(rng, 400, priorities, push_weight), job % 7 == 0);
  }
}

TEST(RtlPriorityQueue, FullQueueRefusesPushes) {
  auto slot = make_slot(rtl::RtlFunction::priority_queue);
  ASSERT_NE(slot, nullptr);
  ref::PriorityQueueRef model(rtl::kPqCapacity);
  std::vector<ref::PqCommand> cmds;
  for (uint32_t i = 0; i < rtl::kPqCapacity + 10; ++i) {
    cmds.push_back({1, i, static_cast<uint8_t>(i % 4), i % 5 == 0, false});
  }
  for (uint32_t i = 0; i < 20; ++i) cmds.push_back({2, 0, 0, false, true});
  for (uint32_t i = 0; i < 30; ++i) cmds.push_back({1, 1000 + i, 255, false, false});
  expect_same(*slot, model, cmds, true);
  EXPECT_EQ(model.size(), rtl::kPqCapacity);
}

TEST(RtlPriorityQueue, ReservedBitsAndClear) {
  auto slot = make_slot(rtl::RtlFunction::priority_queue);
  ASSERT_NE(slot, nullptr);
  const uint64_t push = rtl::pq_command_word(1, 77, 3, false, false);
  const uint64_t bad = push | (uint64_t{1} << 50);  // a reserved bit set: the command fails
  const uint64_t pop = rtl::pq_command_word(2, 0, 0, false, true);
  auto r = slot->run(rtl::pq_job(std::vector<uint64_t>{push, bad, pop, pop}, true));
  ASSERT_EQ(r.status, Status::ok) << r.message;
  auto resp = rtl::pq_responses(r);
  ASSERT_EQ(resp.size(), 4u);
  EXPECT_TRUE(resp[0].ok);
  EXPECT_FALSE(resp[1].ok);
  EXPECT_EQ(resp[2].handle, 77u);
  EXPECT_FALSE(resp[3].ok);
  // Contents survive a job unless it asks for a clear.
  ASSERT_EQ(slot->run(rtl::pq_job(std::vector<uint64_t>{push}, false)).value, 1u);
  EXPECT_EQ(slot->run(rtl::pq_job(std::vector<uint64_t>{}, false)).value, 1u);
  EXPECT_EQ(slot->run(rtl::pq_job(std::vector<uint64_t>{}, true)).value, 0u);
}

TEST(RtlPriorityQueue, OneCommandPerCycleAndBackPressure) {
  TestRng rng(62);
  const auto cmds = random_commands(rng, 1000, 256, 5);
  {
    auto slot = make_slot(rtl::RtlFunction::priority_queue);
    ASSERT_NE(slot, nullptr);
    std::vector<uint64_t> words;
    for (const auto& c : cmds) words.push_back(encode(c));
    const uint64_t c500 = slot->run(rtl::pq_job(std::span(words).first(500), true)).cycles;
    const uint64_t c1000 = slot->run(rtl::pq_job(words, true)).cycles;
    EXPECT_EQ(c1000 - c500, 500u);
  }
  auto slot = make_slot(rtl::RtlFunction::priority_queue, stalling_options(63));
  ASSERT_NE(slot, nullptr);
  ref::PriorityQueueRef model(rtl::kPqCapacity);
  expect_same(*slot, model, cmds, true);
}

}  // namespace
}  // namespace tandem::testing
