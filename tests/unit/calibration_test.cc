// The calibration file: its text round trip, its errors, where it is looked for; and the mode switch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/scoped_env.hpp"
#include "client/calibration.hpp"
#include "client/runtime.hpp"

namespace tandem::client {
namespace {

Calibration sample() {
  Calibration c;
  c.device = "emu";
  c.host = "host \"quoted\"";
  c.created = "2026-01-02T03:04:05Z";
  model::CostParams p;
  p.xc = 1.2345678901e10;
  p.xa = 3.2e10;
  p.o0 = 67.5e-9;
  p.oc = 543.25e-9;
  p.da = 1.1e-6;
  p.granularity = 16;
  p.bw_per_accel = 4e9;
  c.functions[TANDEM_FN_ACCUMULATE] = p;
  model::CostParams w;
  w.xc = 2.7e9;
  w.xa = 1.08e10;
  w.o0 = 50e-9;
  w.oc = 400e-9;
  w.da = 2e-6;
  w.granularity = 1;
  c.functions[TANDEM_FN_WORK] = w;
  return c;
}

void expect_same(const model::CostParams& a, const model::CostParams& b) {
  EXPECT_NEAR(a.xc / b.xc, 1.0, 1e-8);
  EXPECT_NEAR(a.xa / b.xa, 1.0, 1e-8);
  EXPECT_NEAR(a.o0, b.o0, 1e-15);
  EXPECT_NEAR(a.oc, b.oc, 1e-15);
  EXPECT_NEAR(a.da, b.da, 1e-15);
  EXPECT_EQ(a.granularity, b.granularity);
  EXPECT_NEAR(a.bw_per_accel, b.bw_per_accel, 1.0);
}

TEST(Calibration, TextRoundTrip) {
  const Calibration c = sample();
  const Calibration back = parse_calibration(format_calibration(c), "test");
  EXPECT_EQ(back.device, "emu");
  EXPECT_EQ(back.host, c.host);
  EXPECT_EQ(back.created, c.created);
  EXPECT_EQ(back.source, "test");
  ASSERT_TRUE(back.functions[TANDEM_FN_ACCUMULATE]);
  ASSERT_TRUE(back.functions[TANDEM_FN_WORK]);
  expect_same(*back.functions[TANDEM_FN_ACCUMULATE], *c.functions[TANDEM_FN_ACCUMULATE]);
  expect_same(*back.functions[TANDEM_FN_WORK], *c.functions[TANDEM_FN_WORK]);
  EXPECT_FALSE(back.functions[TANDEM_FN_NOP]);
}

TEST(Calibration, AccessCostsRoundTripAndAreChecked) {
  Calibration c = sample();
  EXPECT_FALSE(parse_calibration(format_calibration(c), "t").access) << "optional";
  c.access = model::HostAccessCosts{12e9, 4e9, 300e-9, 6e-6};
  const Calibration back = parse_calibration(format_calibration(c), "t");
  ASSERT_TRUE(back.access);
  EXPECT_NEAR(back.access->memcpy_bps, 12e9, 1);
  EXPECT_NEAR(back.access->gather_bps, 4e9, 1);
  EXPECT_NEAR(back.access->gather_page_s, 300e-9, 1e-15);
  EXPECT_NEAR(back.access->handoff_s, 6e-6, 1e-15);
  const std::string text = format_calibration(c);
  try {
    parse_calibration(text + "bogus = 1\n", "t");
    FAIL() << "an unknown [access] key must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'bogus' in [access]"), std::string::npos) << e.what();
  }
}

TEST(Calibration, FileRoundTripCreatesTheDirectory) {
  const auto dir = std::filesystem::temp_directory_path() / ("tandem-caltest-" + std::to_string(::getpid()));
  const std::string path = (dir / "a" / "b" / "calibration.toml").string();
  save_calibration(sample(), path);
  const Calibration back = load_calibration(path);
  EXPECT_EQ(back.source, path);
  expect_same(*back.functions[TANDEM_FN_ACCUMULATE], *sample().functions[TANDEM_FN_ACCUMULATE]);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove_all(dir);
  EXPECT_THROW(load_calibration(path), Error);
}

TEST(Calibration, ErrorsNameTheProblem) {
  const std::string head = "[calibration]\nversion = 1\ndevice = \"emu\"\n";
  const std::string fn = "[functions.accumulate]\nxc = 1e10\nxa = 2e10\no0_ns = 50\noc_ns = 300\nda_ns = 1000\n";
  EXPECT_NO_THROW(parse_calibration(head + fn, "ok"));
  auto fails = [](const std::string& text, const std::string& needle) {
    try {
      parse_calibration(text, "bad.toml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  fails(fn, "missing [calibration]");
  fails("[calibration]\nversion = 2\ndevice = \"emu\"\n", "version");
  fails("[calibration]\nversion = true\ndevice = \"emu\"\n", "version");  // not the integer 1
  fails("[calibration]\nversion = 1\n", "device");
  fails(head + "colour = 3\n", "unknown key 'colour'");
  fails(head + "[functions.frobnicate]\nxc = 1\n", "unknown function");
  fails(head + "[functions.accumulate]\nxc = 1e10\n", "lacks xa");
  fails(head + fn + "speed = 1\n", "unknown key 'speed'");
  fails(head + "[functions.accumulate]\nxc = -1\nxa = 2e10\no0_ns = 50\noc_ns = 300\nda_ns = 1000\n", "xc");
  fails(head + fn + "granularity = 12\n", "granularity");  // not a multiple of accumulate's 8
  fails("[calibration\n", "bad.toml");
}

TEST(Calibration, LookupOrder) {
  const auto dir = std::filesystem::temp_directory_path() / ("tandem-calhome-" + std::to_string(::getpid()));
  ScopedEnv xdg("XDG_CONFIG_HOME", dir.c_str());
  ScopedEnv env("TANDEM_CALIBRATION", nullptr);
  EXPECT_EQ(user_calibration_path(), (dir / "tandem" / "calibration.toml").string());
  EXPECT_EQ(find_calibration_file(""), "") << "no file in the user's place: defaults";
  save_calibration(sample(), user_calibration_path());
  EXPECT_EQ(find_calibration_file(""), user_calibration_path());
  EXPECT_EQ(find_calibration_file("/etc/from-config.toml"), "/etc/from-config.toml") << "the config wins";
  {
    ScopedEnv named("TANDEM_CALIBRATION", "/tmp/from-env.toml");
    EXPECT_EQ(find_calibration_file("/etc/from-config.toml"), "/tmp/from-env.toml") << "the environment wins";
  }
  std::filesystem::remove_all(dir);
}

TEST(Calibration, DefaultsComeFromTheDevice) {
  const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_ACCUMULATE);
  model::AccelModel m;
  m.throughput = 2.6e10;
  m.latency_s = 400e-9;
  const model::CostParams p = default_cost_params(*fn, m, 1e10);
  EXPECT_EQ(p.xc, 1e10);
  EXPECT_EQ(p.xa, 2.6e10);
  EXPECT_GT(p.da, m.latency_s) << "D_a adds the round trip to the device's own latency";
  EXPECT_GT(p.oc, p.o0);
  EXPECT_EQ(p.granularity, 8u);
  EXPECT_GT(model::break_even_work(p, p.xa), 0u);
}

TEST(Mode, ParsesEveryPolicy) {
  Mode m = Mode::sw;
  double a = -1;
  EXPECT_TRUE(parse_mode("auto", m, a));
  EXPECT_EQ(m, Mode::auto_mode);
  EXPECT_TRUE(parse_mode("hw", m, a));
  EXPECT_EQ(m, Mode::hw);
  EXPECT_TRUE(parse_mode("sw", m, a));
  EXPECT_EQ(m, Mode::sw);
  EXPECT_TRUE(parse_mode("alpha=0.25", m, a));
  EXPECT_EQ(m, Mode::alpha);
  EXPECT_EQ(a, 0.25);
  EXPECT_TRUE(parse_mode("alpha=1", m, a));
  EXPECT_EQ(a, 1.0);
  for (const char* bad : {"", "fast", "alpha", "alpha=", "alpha=1.5", "alpha=-0.1", "alpha=0.3x", "alpha=nan"}) {
    Mode m2 = Mode::sw;
    double a2 = 0.5;
    EXPECT_FALSE(parse_mode(bad, m2, a2)) << bad;
    EXPECT_EQ(m2, Mode::sw);
    EXPECT_EQ(a2, 0.5);
  }
  EXPECT_EQ(mode_name(Mode::alpha, 0.25), "alpha=0.25");
}

TEST(Mode, EnvironmentOverridesOnlyAuto) {
  double a = 0;
  {
    ScopedEnv env("TANDEM_MODE", "alpha=0.4");
    EXPECT_EQ(resolve_mode(Mode::auto_mode, a), Mode::alpha);
    EXPECT_EQ(a, 0.4);
    a = 0;
    EXPECT_EQ(resolve_mode(Mode::sw, a), Mode::sw) << "an explicit mode wins";
  }
  {
    ScopedEnv env("TANDEM_MODE", "bogus");
    EXPECT_EQ(resolve_mode(Mode::auto_mode, a), Mode::auto_mode);
  }
}

}  // namespace
}  // namespace tandem::client
