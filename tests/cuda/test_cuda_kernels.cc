// The CUDA host layer: every catalog kernel bit-exact with the software reference at many sizes, in
// both modes (launch per job, persistent block) and with both access methods; chained jobs on
// device-local memory. Needs a GPU: without one every test skips and prints why (the CUDA runtime's
// answer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <tuple>
#include <vector>

#include "devices/cuda/cuda_context.hpp"
#include "kernel_cases.hpp"
#include "require_gpu.hpp"
#include "rtl/rtl_cases.hpp"

namespace tandem::devices::cuda {
namespace {

using tandem::testing::KernelCase;

CudaContext& shared_context() {
  static std::unique_ptr<CudaContext> context = std::make_unique<CudaContext>(CudaOptions{});
  return *context;
}

TEST(CudaDevice, DiscoveryReportsTheDeviceOrWhyNot) {
  auto devices = discover_cuda_devices();
  const std::string reason = cuda_unavailable_reason();
  if (!reason.empty()) {
    // Without a GPU, discovery fails with CUDA's own message, and the context refuses clearly.
    ASSERT_FALSE(devices.ok());
    EXPECT_NE(devices.message().find("cuda: no device"), std::string::npos) << devices.message();
    EXPECT_THROW(CudaContext(CudaOptions{}), Error);
    GTEST_SKIP() << "no usable GPU: " << reason;
  }
  ASSERT_TRUE(devices.ok()) << devices.message();
  for (const CudaDeviceInfo& d : devices.value()) std::printf("device %d: %s\n", d.index, describe_cuda_device(d).c_str());
  EXPECT_TRUE(select_cuda_device(devices.value(), "0").ok());
  EXPECT_FALSE(select_cuda_device(devices.value(), "no such gpu").ok());
}

// The errors after which CUDA says "the process must be terminated and relaunched" lose the context
// (every slot leaves service for good); errors of one launch or allocation do not. No GPU needed.
TEST(CudaErrors, OnlyTheErrorsThatEndAProcesssContextLoseIt) {
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorAssert, cudaErrorIllegalInstruction,
                        cudaErrorMisalignedAddress, cudaErrorLaunchTimeout}) {
    EXPECT_TRUE(cuda_error_loses_context(e)) << cudaGetErrorName(e);
  }
  for (cudaError_t e : {cudaSuccess, cudaErrorNotReady, cudaErrorInvalidConfiguration, cudaErrorMemoryAllocation,
                        cudaErrorLaunchOutOfResources, cudaErrorInvalidValue, cudaErrorNoDevice}) {
    EXPECT_FALSE(cuda_error_loses_context(e)) << cudaGetErrorName(e);
  }
}

// Device-local memory on the host layer: an image copied in by a copy engine's stream stays on the GPU
// for sobel of sobel (in both modes, in place), comes back equal to the chained reference, and an
// overlapping copy within device memory acts as memmove.
TEST(CudaLocal, ChainedJobsWorkOnDeviceMemoryInPlace) {
  TANDEM_REQUIRE_GPU();
  CudaContext context{CudaOptions{}};
  constexpr uint32_t kWidth = 301, kHeight = 97, kPixels = kWidth * kHeight;
  constexpr int64_t kTimeout = 10'000'000'000;
  std::vector<char> window(4 * 4096 * 16);  // host addresses that stand for the device memory: never touched
  context.attach_local(window.data(), window.size());
  char* in = window.data();
  char* mid = in + 4096 * 16;
  char* out = mid + 4096 * 16;
  CudaSlot engine(context, 0, CudaMode::launch);
  tandem::testing::Case image = tandem::testing::sobel_case(5, kWidth, kHeight),
                        once = tandem::testing::sobel_case(5, kWidth, kHeight),
                        twice = tandem::testing::sobel_case(5, kWidth, kHeight);
  tandem::testing::run_software(once);
  std::memcpy(twice.buffers[0].data(), once.out().data(), kPixels);
  tandem::testing::run_software(twice);
  for (CudaMode mode : {CudaMode::launch, CudaMode::persistent}) {
    ASSERT_EQ(engine.transfer(in, image.buffers[0].data(), kPixels, kTimeout), Status::ok) << engine.last_error();
    CudaSlot slot(context, 1, mode);
    for (auto [src, dst] : {std::pair{in, mid}, std::pair{mid, out}}) {
      funcs::Call call;
      call.function = TANDEM_FN_SOBEL;
      call.args = {reinterpret_cast<uint64_t>(src), reinterpret_cast<uint64_t>(dst), kWidth, kHeight};
      call.arg_count = 4;
      call.workload = kPixels;
      call.buffers = {src, dst};
      Result<int64_t> r = slot.run(call, CudaAccess::copy);
      ASSERT_TRUE(r.ok()) << mode_name(mode) << ": " << r.message();
    }
    std::vector<uint8_t> result(kPixels);
    ASSERT_EQ(engine.transfer(result.data(), out, kPixels, kTimeout), Status::ok) << engine.last_error();
    EXPECT_TRUE(result == twice.out()) << mode_name(mode) << ": sobel of sobel on device memory";
    // Overlapping, within device memory, while the slot (a persistent block, in that mode) is resident.
    ASSERT_EQ(engine.transfer(out + 1, out, kPixels, kTimeout), Status::ok) << engine.last_error();
    std::vector<uint8_t> moved(kPixels + 1);
    ASSERT_EQ(engine.transfer(moved.data(), out, kPixels + 1, kTimeout), Status::ok);
    EXPECT_TRUE(std::equal(twice.out().begin(), twice.out().end(), moved.begin() + 1)) << mode_name(mode) << ": as memmove";
  }
  for (char c : window) ASSERT_EQ(c, 0) << "the host window is never written";
}

class CudaKernels : public ::testing::TestWithParam<std::tuple<CudaMode, CudaAccess>> {
 protected:
  void SetUp() override {
    TANDEM_REQUIRE_GPU();
    slot_ = std::make_unique<CudaSlot>(shared_context(), 0, std::get<0>(GetParam()));
  }
  void check(KernelCase& c) {
    Result<int64_t> r = slot_->run(c.device_call(), std::get<1>(GetParam()));
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.message();
    EXPECT_EQ(r.value(), c.reference_value()) << c.name;
    EXPECT_TRUE(c.outputs_match());
  }
  std::unique_ptr<CudaSlot> slot_;
};

TEST_P(CudaKernels, Nop) {
  auto c = KernelCase::nop();
  check(*c);
}

TEST_P(CudaKernels, Accumulate) {
  for (uint64_t count : {0ull, 1ull, 3ull, 255ull, 256ull, 257ull, 4097ull, 1000003ull}) {
    for (uint64_t offset : {0ull, 1ull}) {
      auto c = KernelCase::accumulate(count, offset, count + offset);
      check(*c);
    }
  }
  auto extremes = KernelCase::accumulate(300001, 0, 5, true);
  check(*extremes);
}

TEST_P(CudaKernels, Work) {
  for (uint64_t units : {0ull, 1ull, 255ull, 256ull, 12345ull, 3000017ull}) {
    auto c = KernelCase::work(units);
    check(*c);
  }
}

TEST_P(CudaKernels, Sobel) {
  for (auto [w, h] : {std::pair{1ull, 1ull}, {3ull, 3ull}, {255ull, 9ull}, {256ull, 2ull}, {257ull, 31ull}, {640ull, 480ull}}) {
    for (int halo = 0; halo < 4; ++halo) {
      auto c = KernelCase::sobel(w, h, (halo & 1) != 0, (halo & 2) != 0, w + h + halo);
      check(*c);
    }
  }
}

TEST_P(CudaKernels, Matmul) {
  for (auto [m, k, n] : {std::tuple{1ull, 1ull, 1ull}, {3ull, 0ull, 5ull}, {15ull, 17ull, 16ull}, {100ull, 100ull, 100ull},
                         {129ull, 7ull, 65ull}}) {
    auto c = KernelCase::matmul(m, k, n, m + k + n);
    check(*c);
  }
  auto wrap = KernelCase::matmul(5, 300, 7, 1, true);
  check(*wrap);
}

TEST_P(CudaKernels, DctQuant) {
  for (uint64_t blocks : {1ull, 255ull, 256ull, 257ull, 1000ull}) {
    for (uint32_t mode : {TANDEM_DCT_MODE_DCT, TANDEM_DCT_MODE_QUANTIZE, TANDEM_DCT_MODE_DCT_QUANTIZE}) {
      auto c = KernelCase::dct(blocks, mode, 75, blocks + mode);
      check(*c);
    }
  }
  auto bad = KernelCase::dct(10, TANDEM_DCT_MODE_DCT_QUANTIZE, 0, 9);
  check(*bad);
}

INSTANTIATE_TEST_SUITE_P(
    ModesAndAccess, CudaKernels,
    ::testing::Combine(::testing::Values(CudaMode::launch, CudaMode::persistent),
                       ::testing::Values(CudaAccess::copy, CudaAccess::zero_copy)),
    [](const ::testing::TestParamInfo<std::tuple<CudaMode, CudaAccess>>& p) {
      return std::string(mode_name(std::get<0>(p.param))) + "_" + std::string(access_name(std::get<1>(p.param)));
    });

}  // namespace
}  // namespace tandem::devices::cuda
