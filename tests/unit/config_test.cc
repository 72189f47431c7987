// Configuration: the built-in default parses, files override it, and mistakes name the bad key.
#include <gtest/gtest.h>

#include <string>

#include "devices/emu/fabric_config.hpp"
#include "funcs/function.hpp"

namespace tandem::devices {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_config(text, "test.toml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Config, BuiltInDefaultIsValidAndDocumented) {
  Config c = load_config("");
  EXPECT_EQ(c.source, "<built-in default>");
  EXPECT_EQ(c.fabric.slots, 8u);
  ASSERT_EQ(c.fabric.resident.size(), 8u);
  ASSERT_TRUE(c.fabric.timing[TANDEM_FN_ACCUMULATE]);
  EXPECT_DOUBLE_EQ(*c.fabric.timing[TANDEM_FN_ACCUMULATE]->speedup, 2.6);
  ASSERT_TRUE(c.fabric.timing[TANDEM_FN_WORK_BASE + 7]) << "work sets the work variants";
  EXPECT_DOUBLE_EQ(*c.fabric.timing[TANDEM_FN_WORK_BASE + 7]->speedup, 4.0);
  EXPECT_NEAR(c.dispatcher.idle_spin_s, 100e-6, 1e-12);
}

TEST(Config, ValuesAndDefaults) {
  Config c = parse_config(R"(
[fabric]
slots = 4
resident = ["work3", "nop"]
[functions.work3]
throughput = 5e9
latency_us = 2
)", "x");
  EXPECT_EQ(c.fabric.slots, 4u);
  EXPECT_EQ(c.fabric.queue_capacity, 1024u);
  EXPECT_EQ(c.fabric.resident, (std::vector<std::string>{"work3", "nop"}));
  auto models = resolve_models(c.fabric);
  EXPECT_DOUBLE_EQ(models[TANDEM_FN_WORK_BASE + 3].throughput, 5e9);
  EXPECT_DOUBLE_EQ(models[TANDEM_FN_WORK_BASE + 3].latency_s, 2e-6);
  // Functions without a table keep their catalog defaults: speedup x the CPU's throughput.
  EXPECT_GT(models[TANDEM_FN_ACCUMULATE].throughput, 0);
  engine::EngineConfig ec = engine_config(c.fabric, models);
  EXPECT_EQ(ec.slots, 4u);
  EXPECT_TRUE(ec.known.test(TANDEM_FN_ACCUMULATE));
  EXPECT_FALSE(ec.known.test(200));
}

TEST(Config, ReconfigurationManager) {
  Config d = load_config("");
  EXPECT_EQ(d.reconfig.policy, "none");
  EXPECT_DOUBLE_EQ(d.reconfig.c_reconfig_s, 0.5e-3);
  EXPECT_LT(d.reconfig.c_replicate_s, 0) << "P / 2 unless given";
  Config c = parse_config("[monitor]\nperiod_ms = 100\n[reconfig]\npolicy = \"algorithm1\"\nc_replicate_ms = 20\n", "t.toml");
  EXPECT_EQ(c.reconfig.policy, "algorithm1");
  EXPECT_DOUBLE_EQ(c.reconfig.c_replicate_s, 20e-3);
  const engine::ReconfigParams p = reconfig_params(c);
  EXPECT_EQ(p.period_ns, 100'000'000);
  EXPECT_GT(p.xc[TANDEM_FN_WORK_BASE], 0);
  EXPECT_NE(engine::make_reconfig_policy(c.reconfig.policy, p), nullptr);
  const Config r = parse_config("[reconfig]\npolicy = \"reactive\"\nreact_idle_ms = 5\n", "t.toml");
  EXPECT_DOUBLE_EQ(reconfig_params(r).react_idle_s, 5e-3);
  EXPECT_TRUE(engine::make_reconfig_policy(r.reconfig.policy, reconfig_params(r))->reacts());
  EXPECT_NE(error_of("[reconfig]\npolicy = \"magic\"\n").find("reconfig.policy"), std::string::npos);
  EXPECT_NE(error_of("[reconfig]\nperiod = 3\n").find("unknown key 'period'"), std::string::npos);
}

TEST(Config, ControlPlaneLimits) {
  const Config d = load_config("");
  EXPECT_EQ(d.daemon.connections_per_uid, 128u);
  EXPECT_EQ(d.daemon.hello_timeout_ms, 1000u);
  EXPECT_EQ(d.daemon.output_buffer_kib, 256u);
  const Config c = parse_config("[limits]\nconnections_per_uid = 3\nhello_timeout_ms = 50\noutput_buffer_kib = 512\n", "t");
  EXPECT_EQ(c.daemon.connections_per_uid, 3u);
  EXPECT_EQ(c.daemon.hello_timeout_ms, 50u);
  EXPECT_EQ(c.daemon.output_buffer_kib, 512u);
  EXPECT_NE(error_of("[limits]\nconnections_per_uid = 0\n").find("limits.connections_per_uid"), std::string::npos);
  EXPECT_NE(error_of("[limits]\nhello_timeout_ms = 0\n").find("limits.hello_timeout_ms"), std::string::npos);
  // Below one largest reply (64 KiB) plus headroom a well-behaved client could be dropped.
  EXPECT_NE(error_of("[limits]\noutput_buffer_kib = 64\n").find("limits.output_buffer_kib"), std::string::npos);
}

TEST(Config, ErrorsNameTheProblem) {
  EXPECT_NE(error_of("[fabric]\nslotz = 3").find("unknown key 'slotz'"), std::string::npos);
  EXPECT_NE(error_of("[fabric]\nslots = 0").find("fabric.slots"), std::string::npos);
  EXPECT_NE(error_of("[fabric]\nslots = \"many\"").find("fabric.slots"), std::string::npos);
  EXPECT_NE(error_of("[fabric]\nresident = [\"warp\"]").find("unknown function 'warp'"), std::string::npos);
  EXPECT_NE(error_of("[fabric]\nslots = 1\nresident = [\"nop\", \"work\"]").find("more functions than slots"),
            std::string::npos);
  EXPECT_NE(error_of("[functions.accumulate]\nspeedup = -1").find("speedup"), std::string::npos);
  EXPECT_NE(error_of("[functions.bogus]\nspeedup = 1").find("unknown function"), std::string::npos);
  EXPECT_NE(error_of("[fabric\n").find("test.toml"), std::string::npos);
  EXPECT_THROW(load_config("/nonexistent/tandem.toml"), Error);
}

}  // namespace
}  // namespace tandem::devices
