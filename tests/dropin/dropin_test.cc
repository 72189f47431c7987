// Drop-in acceleration, end to end with real programs:
//  - cjpeg (Debian's libjpeg-turbo, unmodified) with libtandem_jpeg.so preloaded writes the same bytes
//    as without it: grayscale and colour, every subsampling, odd sizes, restart intervals, optimized and
//    progressive files, qualities; the shim really computed the blocks through tandem (its statistics), on
//    the accelerators in hw mode, through a private tandemd and through the embedded runtime;
//  - what the shim does not handle (float and fast DCTs, quantization entries libjpeg-turbo keeps in 16
//    bits) goes to libjpeg, with a line on stderr under TANDEM_VERBOSE; without any runtime it is libjpeg;
//  - the thesis's mechanism: one program, libaccumulate's software and tandem builds by LD_LIBRARY_PATH.
// TANDEM_DROPIN_FULL=1 runs the full byte-identity matrix (every quality step of 5; docs/results/jpeg.md).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon_harness.hpp"
#include "dropin_util.hpp"

namespace {

namespace fs = std::filesystem;
using tandem::testing::DaemonProcess;
using tandem::testing::read_file;
using tandem::testing::run_program;
using tandem::testing::write_test_image;

constexpr const char* kFabric = "[device.emu]\nslots = 4\nresident = [\"nop\", \"dct_quant\", \"accumulate\", \"dct_quant\"]\n";

std::string preload() {
  const std::string asan = TANDEM_ASAN_RUNTIME;  // sanitized builds: its runtime must come first
  return asan.empty() ? std::string(TANDEM_JPEG_SHIM) : asan + ":" + TANDEM_JPEG_SHIM;
}

// A scratch folder with the test images and the fabric's configuration; one tandemd for the binary.
class Fixture {
 public:
  static Fixture& get() {
    static Fixture f;
    return f;
  }
  const fs::path& dir() const { return dir_; }
  fs::path image(const std::string& name) const { return dir_ / name; }
  std::string config() const { return (dir_ / "fabric.toml").string(); }
  DaemonProcess& daemon() {
    if (!daemon_) daemon_ = std::make_unique<DaemonProcess>(kFabric);
    return *daemon_;
  }
  ~Fixture() {
    daemon_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

 private:
  Fixture() {
    char tmpl[] = "/tmp/tandem-dropin-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::ofstream(dir_ / "fabric.toml") << kFabric;
    struct Image {
      const char* name;
      uint32_t w, h;
      int channels;
    };
    const Image images[] = {{"gray_1x1.pgm", 1, 1, 1},      {"gray_37x23.pgm", 37, 23, 1},
                            {"gray_256x64.pgm", 256, 64, 1}, {"rgb_1x1.ppm", 1, 1, 3},
                            {"rgb_64x48.ppm", 64, 48, 3},    {"rgb_333x77.ppm", 333, 77, 3},
                            {"rgb_17x129.ppm", 17, 129, 3},  {"rgb_1021x769.ppm", 1021, 769, 3}};
    uint64_t seed = 1;
    for (const Image& i : images) write_test_image(dir_ / i.name, i.w, i.h, i.channels, seed++);
    // Quantization tables with an entry libjpeg-turbo cannot divide by exactly (8 * 9000 > 65535).
    std::ofstream q(dir_ / "big_qtables.txt");
    for (int t = 0; t < 2; ++t) {
      for (int i = 0; i < 64; ++i) q << (i == 63 ? 9000 : 16 + i) << (i % 8 == 7 ? "\n" : " ");
    }
  }
  fs::path dir_;
  std::unique_ptr<DaemonProcess> daemon_;
};

struct Outcome {
  bool identical = false;
  std::string plain_error;
  nlohmann::json stats;  // the shim's TANDEM_JPEG_STATS
  std::string err;       // its stderr
};

// cjpeg `args` on `image`, plain and preloaded with `env`; the two outputs compared byte for byte.
Outcome compress_both(const std::vector<std::string>& args, const std::string& image,
                      std::map<std::string, std::string> env) {
  Fixture& fx = Fixture::get();
  const fs::path plain = fx.dir() / "plain.jpg", shimmed = fx.dir() / "shimmed.jpg", stats = fx.dir() / "stats.json";
  fs::remove(stats);
  std::vector<std::string> argv{TANDEM_CJPEG};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto with_output = [&](const fs::path& out) {
    std::vector<std::string> a = argv;
    a.insert(a.end(), {"-outfile", out.string(), fx.image(image).string()});
    return a;
  };
  Outcome o;
  const auto p = run_program(with_output(plain), {{"LD_PRELOAD", ""}}, fx.dir());
  if (p.status != 0) {
    o.plain_error = "plain cjpeg failed: " + p.err;
    return o;
  }
  env["LD_PRELOAD"] = preload();
  env["TANDEM_JPEG_STATS"] = stats.string();
  env["TANDEM_VERBOSE"] = "1";
  if (!env.contains("TANDEM_CONFIG")) env["TANDEM_CONFIG"] = fx.config();
  const auto s = run_program(with_output(shimmed), env, fx.dir());
  o.err = s.err;
  if (s.status != 0) {
    o.plain_error = "preloaded cjpeg failed (" + std::to_string(s.status) + "): " + s.err;
    return o;
  }
  o.identical = read_file(plain) == read_file(shimmed) && !read_file(plain).empty();
  const std::string text = read_file(stats);
  o.stats = nlohmann::json::parse(text.empty() ? "{}" : text, nullptr, false);
  return o;
}

std::map<std::string, std::string> through_daemon(const char* mode = "hw") {
  return {{"TANDEM_RUNTIME", "daemon"}, {"TANDEM_SOCKET", Fixture::get().daemon().socket()}, {"TANDEM_MODE", mode}};
}
std::map<std::string, std::string> embedded(const char* mode) {
  return {{"TANDEM_RUNTIME", "embedded"}, {"TANDEM_SOCKET", ""}, {"TANDEM_MODE", mode}};
}

std::string describe(const std::vector<std::string>& args, const std::string& image) {
  std::string s = image;
  for (const std::string& a : args) s += " " + a;
  return s;
}

// The output is libjpeg's, and the shim computed every block through tandem (on accelerators in hw mode).
void expect_taken_over(const Outcome& o, const std::string& what, bool all_on_accelerators) {
  ASSERT_TRUE(o.plain_error.empty()) << what << ": " << o.plain_error;
  EXPECT_TRUE(o.identical) << what << ": the preloaded cjpeg wrote different bytes";
  ASSERT_TRUE(o.stats.is_object() && o.stats.contains("handled")) << what << ": no statistics; stderr: " << o.err;
  EXPECT_EQ(o.stats["handled"], 1) << what << "; stderr: " << o.err;
  EXPECT_GT(o.stats["rows"].get<uint64_t>(), 0u) << what;
  EXPECT_EQ(o.stats["passed_requests"], 0) << what << ": some blocks were left to libjpeg";
  EXPECT_EQ(o.stats["failed_calls"], 0) << what;
  const nlohmann::json& t = o.stats["tandem"];
  ASSERT_TRUE(t.is_object()) << what;
  EXPECT_EQ(t["calls"], o.stats["rows"]) << what << ": one dct_quant call per block row";
  if (all_on_accelerators) {
    EXPECT_EQ(t["hw_units"], o.stats["blocks"]) << what << ": blocks left the accelerators";
  }
}

// ---- byte identity ----

struct Variant {
  std::string image;
  std::vector<std::string> args;
};

std::vector<Variant> quick_matrix() {
  std::vector<Variant> v;
  for (const char* q : {"5", "50", "100"}) {
    for (const char* image : {"gray_1x1.pgm", "gray_37x23.pgm"}) v.push_back({image, {"-quality", q}});
    for (const char* image : {"rgb_64x48.ppm", "rgb_333x77.ppm"}) {
      for (const char* sample : {"1x1", "2x2", "2x1"}) v.push_back({image, {"-quality", q, "-sample", sample}});
    }
  }
  v.push_back({"rgb_1x1.ppm", {}});
  v.push_back({"rgb_17x129.ppm", {"-sample", "1x2"}});                       // 4:4:0
  v.push_back({"rgb_17x129.ppm", {"-sample", "4x1"}});                       // 4:1:1
  v.push_back({"rgb_333x77.ppm", {"-sample", "2x2,1x1,2x1"}});               // every component its own
  v.push_back({"rgb_333x77.ppm", {"-restart", "1"}});                        // a restart interval in rows
  v.push_back({"gray_256x64.pgm", {"-restart", "3B"}});                      // ... and in blocks
  v.push_back({"rgb_333x77.ppm", {"-optimize"}});                            // whole rows per request
  v.push_back({"rgb_64x48.ppm", {"-progressive", "-quality", "90"}});
  v.push_back({"rgb_333x77.ppm", {"-grayscale", "-baseline", "-quality", "15"}});
  v.push_back({"rgb_64x48.ppm", {"-rgb", "-arithmetic"}});
  v.push_back({"rgb_1021x769.ppm", {"-quality", "85"}});
  return v;
}

TEST(DropinJpeg, PreloadedCjpegWritesTheSameBytesThroughTandemd) {
  for (const Variant& v : quick_matrix()) {
    const Outcome o = compress_both(v.args, v.image, through_daemon());
    expect_taken_over(o, describe(v.args, v.image), true);
  }
}

// By hand (minutes): every quality step of 5, every subsampling, odd sizes, restart intervals.
TEST(DropinJpeg, FullMatrix) {
  const char* full = std::getenv("TANDEM_DROPIN_FULL");
  if (full == nullptr || std::string(full) != "1") GTEST_SKIP() << "set TANDEM_DROPIN_FULL=1 to run the full matrix";
  size_t runs = 0;
  const std::vector<std::vector<std::string>> colour = {{"-sample", "1x1"}, {"-sample", "2x2"}, {"-sample", "2x1"},
                                                        {"-sample", "1x2"}, {"-sample", "4x1"}, {"-grayscale"}};
  const std::vector<std::vector<std::string>> extra = {{}, {"-restart", "1"}, {"-restart", "5B"}, {"-optimize"},
                                                       {"-progressive"}};
  for (int q = 5; q <= 100; q += 5) {
    const std::string quality = std::to_string(q);
    for (const char* image : {"gray_1x1.pgm", "gray_37x23.pgm", "gray_256x64.pgm"}) {
      for (const auto& e : extra) {
        std::vector<std::string> args{"-quality", quality};
        args.insert(args.end(), e.begin(), e.end());
        expect_taken_over(compress_both(args, image, through_daemon()), describe(args, image), true);
        ++runs;
      }
    }
    for (const char* image : {"rgb_1x1.ppm", "rgb_64x48.ppm", "rgb_333x77.ppm", "rgb_17x129.ppm", "rgb_1021x769.ppm"}) {
      for (const auto& c : colour) {
        for (const auto& e : extra) {
          std::vector<std::string> args{"-quality", quality};
          args.insert(args.end(), c.begin(), c.end());
          args.insert(args.end(), e.begin(), e.end());
          expect_taken_over(compress_both(args, image, through_daemon()), describe(args, image), true);
          ++runs;
        }
      }
    }
  }
  std::printf("full matrix: %zu preloaded cjpeg runs compared with plain cjpeg\n", runs);
}

// TANDEM_MODE applies to the preloaded program; the embedded runtime serves when no daemon is named.
TEST(DropinJpeg, EveryModeOnTheEmbeddedRuntime) {
  const std::vector<std::string> args{"-quality", "80", "-sample", "2x2"};
  for (const char* mode : {"sw", "hw", "auto", "alpha=0.5"}) {
    const Outcome o = compress_both(args, "rgb_333x77.ppm", embedded(mode));
    expect_taken_over(o, std::string("embedded, TANDEM_MODE=") + mode, std::string(mode) == "hw");
    if (!o.stats.is_object() || !o.stats.contains("tandem")) continue;
    EXPECT_EQ(o.stats["runtime"], "embedded");
    if (std::string(mode) == "sw") {
      EXPECT_EQ(o.stats["tandem"]["hw_jobs"], 0) << "sw mode sent accelerator jobs";
    }
    if (std::string(mode) == "alpha=0.5") {
      EXPECT_GT(o.stats["tandem"]["hw_jobs"].get<uint64_t>(), 0u);
    }
  }
}

// ---- what the shim leaves to libjpeg ----

TEST(DropinJpeg, WhatItDoesNotHandleGoesToLibjpegWithOneLine) {
  struct Case {
    std::vector<std::string> args;
    const char* line;
  };
  const std::string qtables = (Fixture::get().dir() / "big_qtables.txt").string();
  const Case cases[] = {{{"-dct", "float"}, "left to libjpeg: the float DCT"},
                        {{"-dct", "fast"}, "left to libjpeg: the fast integer DCT"},
                        {{"-qtables", qtables}, "left to libjpeg: a quantization entry of 9000"}};
  for (const Case& c : cases) {
    const Outcome o = compress_both(c.args, "rgb_64x48.ppm", through_daemon());
    const std::string what = describe(c.args, "rgb_64x48.ppm");
    ASSERT_TRUE(o.plain_error.empty()) << what << ": " << o.plain_error;
    EXPECT_TRUE(o.identical) << what;
    EXPECT_EQ(o.stats["handled"], 0) << what;
    EXPECT_EQ(o.stats["rows"], 0) << what;
    EXPECT_NE(o.err.find(c.line), std::string::npos) << what << ": stderr was: " << o.err;
  }
}

TEST(DropinJpeg, WithoutARuntimeItIsPlainLibjpeg) {
  // A daemon is required but none listens; a configuration the embedded runtime refuses; a wait policy
  // that means nothing.
  const std::vector<std::map<std::string, std::string>> envs = {
      {{"TANDEM_RUNTIME", "daemon"}, {"TANDEM_SOCKET", "/nonexistent/tandem.sock"}},
      {{"TANDEM_RUNTIME", "embedded"}, {"TANDEM_CONFIG", (Fixture::get().dir() / "missing.toml").string()}},
      {{"TANDEM_RUNTIME", "embedded"}, {"TANDEM_WAIT", "sometimes"}}};
  for (const auto& env : envs) {
    const Outcome o = compress_both({"-quality", "60"}, "rgb_333x77.ppm", env);
    ASSERT_TRUE(o.plain_error.empty()) << o.plain_error;
    EXPECT_TRUE(o.identical);
    EXPECT_EQ(o.stats["runtime"], "none");
    EXPECT_EQ(o.stats["handled"], 0);
    EXPECT_NE(o.err.find("no tandem runtime"), std::string::npos) << o.err;
  }
  // auto: a named daemon that is not there gives way to the embedded runtime.
  auto env = embedded("hw");
  env["TANDEM_RUNTIME"] = "auto";
  env["TANDEM_SOCKET"] = "/nonexistent/tandem.sock";
  const Outcome o = compress_both({"-quality", "60"}, "rgb_333x77.ppm", env);
  expect_taken_over(o, "auto with a missing daemon", true);
  EXPECT_EQ(o.stats["runtime"], "embedded");
  EXPECT_NE(o.err.find("the embedded runtime instead"), std::string::npos) << o.err;
}

TEST(DropinJpeg, OffAndMeasureLeaveTheDctToLibjpeg) {
  auto env = through_daemon();
  env["TANDEM_JPEG"] = "off";
  Outcome o = compress_both({}, "rgb_333x77.ppm", env);
  EXPECT_TRUE(o.identical);
  EXPECT_EQ(o.stats["handled"], 0);
  env["TANDEM_JPEG"] = "measure";
  o = compress_both({"-sample", "2x2"}, "rgb_333x77.ppm", env);
  EXPECT_TRUE(o.identical);
  EXPECT_EQ(o.stats["handled"], 1);
  EXPECT_EQ(o.stats["runtime"], "none");
  EXPECT_GT(o.stats["rows"].get<uint64_t>(), 0u);
  EXPECT_GT(o.stats["call_ns"].get<int64_t>(), 0);  // libjpeg's own DCT, timed per row
}

// ---- the thesis's mechanism: the same program, two builds of its library ----

TEST(DropinAccumulate, LdLibraryPathChoosesTheBuild) {
  const fs::path scratch = Fixture::get().dir();
  const std::map<std::string, std::string> common{{"TANDEM_RUNTIME", "embedded"}, {"TANDEM_SOCKET", ""},
                                                  {"TANDEM_MODE", "hw"}, {"TANDEM_VERBOSE", "1"},
                                                  {"TANDEM_CONFIG", Fixture::get().config()}};
  auto sw_env = common, hw_env = common;
  sw_env["LD_LIBRARY_PATH"] = TANDEM_ACCUMULATE_SW_DIR;
  hw_env["LD_LIBRARY_PATH"] = TANDEM_ACCUMULATE_TANDEM_DIR;
  const auto sw = run_program({TANDEM_ACCUMULATE_APP}, sw_env, scratch);
  const auto hw = run_program({TANDEM_ACCUMULATE_APP}, hw_env, scratch);
  ASSERT_EQ(sw.status, 0) << sw.out << sw.err;
  ASSERT_EQ(hw.status, 0) << hw.out << hw.err;
  EXPECT_NE(sw.out.find("backend: software"), std::string::npos) << sw.out;
  EXPECT_NE(hw.out.find("backend: tandem (embedded)"), std::string::npos) << hw.out;
  // The same sums, printed by the same program.
  const auto sums = [](const std::string& out) { return out.substr(out.find("sums:")); };
  EXPECT_EQ(sums(sw.out), sums(hw.out));
  // The accelerated build really used the accelerators (its line at exit).
  EXPECT_NE(hw.err.find("accelerator jobs"), std::string::npos) << hw.err;
  EXPECT_EQ(hw.err.find(" 0 accelerator jobs"), std::string::npos) << hw.err;
  // Without a runtime the accelerated build is the software one, with the reason.
  auto no_rt = hw_env;
  no_rt["TANDEM_RUNTIME"] = "daemon";
  no_rt["TANDEM_SOCKET"] = "/nonexistent/tandem.sock";
  const auto fallback = run_program({TANDEM_ACCUMULATE_APP}, no_rt, scratch);
  ASSERT_EQ(fallback.status, 0) << fallback.out << fallback.err;
  EXPECT_NE(fallback.out.find("backend: software (no tandem runtime"), std::string::npos) << fallback.out;
  EXPECT_EQ(sums(fallback.out), sums(sw.out));
}

}  // namespace
