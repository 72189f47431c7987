// The thin C++ wrapper over the C API.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

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
