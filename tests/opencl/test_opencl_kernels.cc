// The OpenCL host layer on PoCL: discovery and selection, program builds (and a failing one), and
// every catalog kernel bit-exact with the software reference at many sizes, including edge sizes and
// unaligned starts and counts, with both access methods.
#include <gtest/gtest.h>

#include <memory>

#include "devices/opencl/context.hpp"
#include "devices/opencl/platform.hpp"
#include "kernel_cases.hpp"

namespace tandem::devices::opencl {
namespace {

using tandem::testing::KernelCase;

// One context (and its program builds) for the whole test program.
ClContext& shared_context() {
  static std::unique_ptr<ClContext> context = [] {
    ClOptions o;
    return std::make_unique<ClContext>(o);
  }();
  return *context;
}

class OpenclKernels : public ::testing::TestWithParam<ClAccess> {
 protected:
  void SetUp() override { slot_ = std::make_unique<ClSlot>(shared_context(), 0); }

  void check(KernelCase& c) {
    Result<int64_t> r = slot_->run(c.device_call(), GetParam());
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.message();
    EXPECT_EQ(r.value(), c.reference_value()) << c.name;
    EXPECT_TRUE(c.outputs_match());
  }

  std::unique_ptr<ClSlot> slot_;
};

TEST(OpenclPlatform, FindsPoclAndDescribesIt) {
  const auto platforms = discover_platforms();
  ASSERT_FALSE(platforms.empty()) << describe_platforms(platforms);
  const std::string text = describe_platforms(platforms);
  EXPECT_NE(text.find("platform 0: "), std::string::npos) << text;
  EXPECT_NE(text.find("device 0: "), std::string::npos) << text;
  EXPECT_NE(text.find("compute units"), std::string::npos) << text;
  std::printf("%s", text.c_str());
}

TEST(OpenclPlatform, SelectsByIndexAndByName) {
  const auto platforms = discover_platforms();
  ASSERT_FALSE(platforms.empty());
  auto by_index = select_device(platforms, "0", "0");
  ASSERT_TRUE(by_index.ok()) << by_index.message();
  EXPECT_EQ(by_index->device.id, platforms[0].devices[0].id);
  // Case-insensitive part of the name.
  auto by_name = select_device(platforms, "portable computing", "");
  ASSERT_TRUE(by_name.ok()) << by_name.message();
  EXPECT_EQ(by_name->platform.name, "Portable Computing Language");
  auto missing = select_device(platforms, "no such vendor", "");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("no such vendor"), std::string::npos) << missing.message();
  EXPECT_NE(missing.message().find("Portable Computing Language"), std::string::npos) << missing.message();
  EXPECT_FALSE(select_device(platforms, "7", "").ok());
  EXPECT_FALSE(select_device(platforms, "0", "no such device").ok());
  EXPECT_FALSE(select_device({}, "", "").ok());
  // PoCL by its vendor's name ("The pocl project"): its platform name does not say "pocl".
  auto by_vendor = select_device(platforms, "POCL", "");
  ASSERT_TRUE(by_vendor.ok()) << by_vendor.message();
  EXPECT_EQ(by_vendor->platform.name, "Portable Computing Language");
}

// Selection alone, over a made-up machine (no OpenCL call is made): digits are an index where the
// list has one, else a part of a name.
TEST(OpenclPlatform, DigitsAreAnIndexOnlyWhereTheListHasOne) {
  auto device = [](const char* name) {
    ClDeviceInfo d;
    d.name = name;
    d.available = true;
    d.compiler_available = true;
    return d;
  };
  std::vector<ClPlatformInfo> platforms(2);
  platforms[0].name = "Vendor A OpenCL";
  platforms[0].vendor = "Vendor A";
  platforms[0].devices = {device("Accelerator 7"), device("GeForce RTX 4090")};
  platforms[1].name = "Portable Computing Language";
  platforms[1].vendor = "The pocl project";
  platforms[1].devices = {device("cpu")};

  const struct {
    const char* platform;
    const char* device;
    const char* chosen;  // the device's name
  } cases[] = {
      {"1", "0", "cpu"},                 // indexes
      {"0", "1", "GeForce RTX 4090"},
      {"", "4090", "GeForce RTX 4090"},  // digits past the list: part of a name
      {"", "7", "Accelerator 7"},
      {"pocl", "", "cpu"},               // the platform's vendor
  };
  for (const auto& c : cases) {
    auto chosen = select_device(platforms, c.platform, c.device);
    ASSERT_TRUE(chosen.ok()) << c.platform << " / " << c.device << ": " << chosen.message();
    EXPECT_EQ(chosen->device.name, c.chosen) << c.platform << " / " << c.device;
  }
  EXPECT_FALSE(select_device(platforms, "", "5").ok());
  EXPECT_FALSE(select_device(platforms, "2", "").ok());
}

TEST(OpenclPlatform, NoPlatformIsAClearMessage) {
  const std::string text = describe_platforms({});
  EXPECT_NE(text.find("no OpenCL platform found"), std::string::npos);
  auto r = select_device({}, "", "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("is an ICD installed"), std::string::npos) << r.message();
}

TEST(OpenclContext, BuildsEveryKernelOnce) {
  ClContext& ctx = shared_context();
  for (const ClKernelSource& s : kernel_sources()) {
    EXPECT_EQ(ctx.program(s.id).status, Status::ok) << s.file << ": " << ctx.program(s.id).log;
    EXPECT_GT(ctx.program(s.id).build_ns, 0) << s.file;
    std::printf("%-14s built in %.1f ms\n", std::string(s.file).c_str(), ctx.program(s.id).build_ns / 1e6);
  }
  EXPECT_GE(ctx.reduction_groups(), 1u);
}

TEST(OpenclContext, ABuildFailureKeepsItsLogAndLosesOnlyThatKernel) {
  ClOptions o;
  o.source_overrides[static_cast<size_t>(KernelId::sobel)] = "__kernel void tandem_sobel(__global uchar* in) { syntax error }";
  o.source_overrides[static_cast<size_t>(KernelId::matmul)] = "__kernel void not_the_right_name(void) {}";
  ClContext ctx(o);
  EXPECT_EQ(ctx.program(KernelId::sobel).status, Status::device_error);
  EXPECT_NE(ctx.program(KernelId::sobel).log.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos)
      << ctx.program(KernelId::sobel).log;
  EXPECT_NE(ctx.program(KernelId::sobel).log.find("error"), std::string::npos) << ctx.program(KernelId::sobel).log;
  EXPECT_EQ(ctx.program(KernelId::matmul).status, Status::device_error);
  EXPECT_NE(ctx.program(KernelId::matmul).log.find("tandem_matmul"), std::string::npos) << ctx.program(KernelId::matmul).log;

  ClSlot slot(ctx, 0);
  EXPECT_EQ(slot.select(KernelId::sobel), Status::device_error);
  EXPECT_NE(slot.last_error().find("sobel did not build"), std::string::npos) << slot.last_error();
  auto sobel = KernelCase::sobel(16, 16, false, false, 1);
  Result<int64_t> r = slot.run(sobel->device_call(), ClAccess::copy);
  EXPECT_EQ(r.status(), Status::device_error);
  // The others still work, and a rebuild from the embedded source repairs the broken one.
  auto acc = KernelCase::accumulate(1000, 0, 2);
  Result<int64_t> a = slot.run(acc->device_call(), ClAccess::copy);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a.value(), acc->reference_value());
  EXPECT_EQ(ctx.build(KernelId::sobel, kernel_source(KernelId::sobel).text), Status::ok) << ctx.program(KernelId::sobel).log;
  Result<int64_t> s = slot.run(sobel->device_call(), ClAccess::copy);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(sobel->outputs_match());
}

// When a job ends, the first of its commands that the driver terminated is named, even if a later one
// completed (OpenCL leaves it to the driver whether an in-order queue runs commands after a failed one).
TEST(OpenclContext, AJobsFirstTerminatedCommandIsFoundEvenIfItsLastCompleted) {
  const auto user_event = [](cl_int status) {
    cl_int err = CL_SUCCESS;
    cl_event e = clCreateUserEvent(shared_context().context(), &err);
    EXPECT_EQ(err, CL_SUCCESS);
    EXPECT_EQ(clSetUserEventStatus(e, status), CL_SUCCESS);
    return EventPtr(e);
  };
  const EventPtr written = user_event(CL_COMPLETE), kernel = user_event(CL_OUT_OF_RESOURCES), read = user_event(CL_COMPLETE);
  std::string what;
  EXPECT_EQ(terminated_command({written.get(), kernel.get(), read.get()}, what), Status::no_memory);
  EXPECT_NE(what.find("its kernel command was terminated on the device"), std::string::npos) << what;
  what.clear();
  EXPECT_EQ(terminated_command({written.get(), nullptr, read.get()}, what), Status::ok);
  EXPECT_EQ(terminated_command({kernel.get(), kernel.get(), kernel.get()}, what), Status::no_memory);
  EXPECT_NE(what.find("its first command"), std::string::npos) << what;
}

TEST(OpenclContext, AFunctionWithoutKernelIsRefused) {
  ClSlot slot(shared_context(), 0);
  funcs::Call call;
  call.function = TANDEM_FN_PRIORITY_QUEUE;
  EXPECT_EQ(slot.run(call, ClAccess::copy).status(), Status::invalid_argument);
}

TEST_P(OpenclKernels, Nop) {
  auto c = KernelCase::nop();
  check(*c);
}

TEST_P(OpenclKernels, AccumulateMatchesAtManySizes) {
  for (uint64_t count : {0ull, 1ull, 2ull, 3ull, 63ull, 64ull, 65ull, 127ull, 1000ull, 4097ull, 65535ull, 1000003ull}) {
    for (uint64_t offset : {0ull, 1ull, 3ull}) {
      auto c = KernelCase::accumulate(count, offset, count * 7 + offset);
      check(*c);
    }
  }
}

TEST_P(OpenclKernels, AccumulateIsExactAtTheExtremes) {
  auto c = KernelCase::accumulate(300001, 0, 5, true);
  check(*c);
}

TEST_P(OpenclKernels, WorkCountsEveryUnitOnTheDevice) {
  for (uint64_t units : {0ull, 1ull, 63ull, 64ull, 65ull, 12345ull, 3000017ull}) {
    auto c = KernelCase::work(units);
    check(*c);
  }
  auto variant = KernelCase::work(777, TANDEM_FN_WORK_BASE + 5);
  check(*variant);
}

TEST_P(OpenclKernels, SobelMatchesAtManySizes) {
  struct Size {
    uint64_t w, h;
  };
  for (Size s : {Size{1, 1}, Size{2, 2}, Size{3, 3}, Size{1, 50}, Size{50, 1}, Size{3, 64}, Size{63, 5}, Size{64, 64},
                 Size{65, 33}, Size{640, 480}, Size{1023, 7}, Size{2049, 19}}) {
    for (int halo = 0; halo < 4; ++halo) {
      auto c = KernelCase::sobel(s.w, s.h, (halo & 1) != 0, (halo & 2) != 0, s.w * 131 + s.h + halo);
      check(*c);
    }
  }
}

TEST_P(OpenclKernels, MatmulMatchesAtManySizes) {
  struct Dims {
    uint64_t m, k, n;
  };
  for (Dims d : {Dims{1, 1, 1}, Dims{1, 0, 1}, Dims{3, 0, 5}, Dims{2, 3, 4}, Dims{15, 17, 16}, Dims{16, 16, 16},
                 Dims{17, 33, 1}, Dims{1, 100, 31}, Dims{64, 64, 64}, Dims{100, 100, 100}, Dims{129, 7, 65},
                 Dims{37, 300, 23}}) {
    auto c = KernelCase::matmul(d.m, d.k, d.n, d.m * 10007 + d.k * 101 + d.n);
    check(*c);
  }
  // int16 extremes: every product is 2^30, and the sums wrap modulo 2^32.
  auto wrap = KernelCase::matmul(5, 300, 7, 1, true);
  check(*wrap);
}

TEST_P(OpenclKernels, DctQuantMatchesTheLibjpegReference) {
  for (uint64_t blocks : {1ull, 2ull, 3ull, 63ull, 64ull, 65ull, 1000ull}) {
    for (uint32_t mode : {TANDEM_DCT_MODE_DCT, TANDEM_DCT_MODE_QUANTIZE, TANDEM_DCT_MODE_DCT_QUANTIZE}) {
      for (int quality : {1, 50, 75, 100}) {
        if (mode == TANDEM_DCT_MODE_DCT && quality != 50) continue;
        auto c = KernelCase::dct(blocks, mode, quality, blocks * 3 + mode + quality);
        check(*c);
      }
    }
  }
}

TEST_P(OpenclKernels, DctQuantRefusesAnInvalidTableLikeTheReference) {
  auto c = KernelCase::dct(10, TANDEM_DCT_MODE_DCT_QUANTIZE, 0, 9);
  check(*c);
  EXPECT_EQ(c->reference_value(), 1);
}

TEST_P(OpenclKernels, SlotStagingGrowsAndShrinksAcrossJobs) {
  // Alternating sizes on one slot: the copy staging is reused and grown; results stay exact.
  for (uint64_t count : {100000ull, 10ull, 2000000ull, 5ull, 300000ull}) {
    auto c = KernelCase::accumulate(count, 1, count);
    check(*c);
  }
}

INSTANTIATE_TEST_SUITE_P(Access, OpenclKernels, ::testing::Values(ClAccess::copy, ClAccess::zero_copy),
                         [](const ::testing::TestParamInfo<ClAccess>& p) { return std::string(access_name(p.param)); });

}  // namespace
}  // namespace tandem::devices::opencl
