// The thin C++ wrapper over the C API.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <numeric>
#include <vector>

#include "funcs/ref/list_walk_ref.hpp"
#include "tandem/tandem.hpp"

namespace {

TEST(CppApi, HighAndLowLevelCalls) {
  tandem_options_t o;
  tandem_options_init(&o);
  o.embedded = 1;
  o.mode = TANDEM_MODE_HW;
  tandem::Runtime rt(&o);
  EXPECT_EQ(rt.kind(), "embedded");
  std::vector<int32_t> data(1234);
  std::iota(data.begin(), data.end(), -600);
  EXPECT_EQ(rt.accumulate(data), std::accumulate(data.begin(), data.end(), int64_t{0}));
  rt.work(1000);

  tandem::Queue q = rt.queue(16);
  auto* recs = rt.alloc<tandem_completion_t>(2);
  tandem_completion_init(&recs[0]);
  tandem_completion_init(&recs[1]);
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data.data()), data.size()};
  q.dispatch(TANDEM_FN_ACCUMULATE, args, data.size() * 4, &recs[0]);
  const tandem_completion_t* deps[1] = {&recs[0]};
  q.barrier_and(deps, &recs[1]);
  EXPECT_EQ(rt.wait(recs[1]), TANDEM_OK);
  EXPECT_EQ(recs[0].value, std::accumulate(data.begin(), data.end(), int64_t{0}));
  // A cancel naming a finished job: not withdrawn.
  tandem_completion_init(&recs[1]);
  q.cancel(recs[0], &recs[1]);
  EXPECT_EQ(rt.wait(recs[1]), TANDEM_OK);
  EXPECT_EQ(recs[1].value, 0);
  rt.set_mode(TANDEM_MODE_ALPHA, 0.5);
  EXPECT_EQ(rt.accumulate(data), std::accumulate(data.begin(), data.end(), int64_t{0}));
  EXPECT_THROW(rt.set_mode(TANDEM_MODE_ALPHA, 2.0), tandem::ApiError);
  rt.free(recs);
}

TEST(CppApi, FailuresThrowWithStatusAndMessage) {
  tandem_options_t o;
  tandem_options_init(&o);
  o.embedded = 1;
  o.config_path = "/nonexistent/tandem.toml";
  try {
    tandem::Runtime rt(&o);
    FAIL() << "opening with a missing configuration must fail";
  } catch (const tandem::ApiError& e) {
    EXPECT_EQ(e.status(), TANDEM_IO_ERROR);
    EXPECT_NE(std::string(e.what()).find("tandem.toml"), std::string::npos) << e.what();
  }
  o.config_path = nullptr;
  tandem::Runtime rt(&o);
  EXPECT_THROW(rt.queue(3), tandem::ApiError);
}

}  // namespace

// list_walk, the high-level call (issue 12): the accelerator follows the client's pointers in both
// address modes of the embedded runtime, whose window is the whole process; a bad pointer fails the
// call with TRANSLATION_FAULT instead of crashing the process.
TEST(CppApi, ListWalkFollowsPointersInBothAddressModes) {
  char path[] = "/tmp/tandem-listwalk-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const char config[] = "[device.emu]\nresident = [\"list_walk\"]\n";
  ASSERT_EQ(write(fd, config, sizeof config - 1), static_cast<ssize_t>(sizeof config - 1));
  close(fd);
  tandem_options_t o;
  tandem_options_init(&o);
  o.embedded = 1;
  o.mode = TANDEM_MODE_HW;
  o.config_path = path;
  {
    tandem::Runtime rt(&o);
    std::vector<tandem_list_node_t> nodes(30000);
    const tandem_list_node_t* head = tandem::funcs::ref::link_random_list(nodes, 77);
    const int64_t sum = 30000ll * 30001 / 2;
    EXPECT_EQ(rt.list_walk(head, nodes.size()), sum);
    rt.set_address_mode(TANDEM_ADDRESS_PHASEV);
    EXPECT_EQ(rt.list_walk(head, nodes.size()), sum);
    EXPECT_EQ(rt.list_walk(head, 10), tandem::funcs::ref::list_walk(head, 10));
    EXPECT_EQ(rt.list_walk(nullptr, 10), 0);
    nodes[5].next = 0x10;  // the zero page: never mapped
    try {
      rt.list_walk(&nodes[5], 3);
      ADD_FAILURE() << "a bad pointer must fail the call";
    } catch (const tandem::ApiError& e) {
      EXPECT_EQ(e.status(), TANDEM_TRANSLATION_FAULT);
    }
    EXPECT_THROW(rt.set_address_mode(static_cast<tandem_address_mode_t>(5)), tandem::ApiError);
    rt.set_mode(TANDEM_MODE_SW);
    nodes[5].next = 0;
    EXPECT_EQ(rt.list_walk(&nodes[5], 3), nodes[5].value);
  }
  unlink(path);
}
