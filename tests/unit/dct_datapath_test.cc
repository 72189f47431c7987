// The emulated dct_quant accelerator's fast datapath equals the references bit for bit: the DCT on random
// blocks and on the blocks that drive every coefficient to its extremes, quantization for every table
// entry 1..32767 at the coefficients where rounding changes, and the whole call through the catalog.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "funcs/dct_datapath.hpp"
#include "funcs/function.hpp"
#include "funcs/ref/dct_quant_ref.hpp"

namespace {

namespace ref = tandem::funcs::ref;
namespace k = tandem::funcs::kernels;

void expect_same_dct(const ref::SampleBlock& samples, const char* what, int index) {
  const ref::CoefBlock expected = ref::fdct_islow(samples);
  int16_t got[64];
  k::fdct_islow_block(samples.data(), got);
  for (int i = 0; i < 64; ++i) {
    ASSERT_EQ(got[i], expected[i]) << what << " " << index << ", coefficient " << i;
  }
}

TEST(DctDatapath, DctEqualsTheReferenceOnRandomAndExtremeBlocks) {
  std::mt19937_64 rng(11);
  for (int n = 0; n < 20000; ++n) {
    ref::SampleBlock b;
    for (auto& s : b) s = static_cast<uint8_t>(rng() >> 56);
    expect_same_dct(b, "random block", n);
  }
  // Each basis function's sign pattern at full swing (0/255), and its inverse: the largest magnitudes of
  // every coefficient, where 32-bit intermediates are closest to their limits.
  for (int u = 0; u < 8; ++u) {
    for (int v = 0; v < 8; ++v) {
      for (int invert = 0; invert < 2; ++invert) {
        ref::SampleBlock b;
        for (int r = 0; r < 8; ++r) {
          for (int c = 0; c < 8; ++c) {
            const double basis = std::cos((2 * c + 1) * u * M_PI / 16) * std::cos((2 * r + 1) * v * M_PI / 16);
            b[r * 8 + c] = ((basis >= 0) != (invert == 1)) ? 255 : 0;
          }
        }
        expect_same_dct(b, "extreme block", u * 16 + v * 2 + invert);
      }
    }
  }
  ref::SampleBlock flat{};
  for (uint8_t level : {uint8_t{0}, uint8_t{128}, uint8_t{255}}) {
    flat.fill(level);
    expect_same_dct(flat, "flat block", level);
  }
}

TEST(DctDatapath, QuantizationEqualsTheReferenceForEveryTableEntry) {
  std::mt19937_64 rng(12);
  std::array<uint16_t, 64> table{};
  for (uint32_t q = 1; q <= 32767; ++q) {
    table.fill(static_cast<uint16_t>(q));
    const k::QuantReciprocals r = k::quant_reciprocals(table.data());
    const int32_t d = static_cast<int32_t>(q) * 8;
    // The coefficients where the rounded quotient steps (k * d +- d/2 and their neighbours), the ends of
    // the int16 range and a few random ones: 64 per call.
    ref::CoefBlock coefs{};
    int i = 0;
    const auto put = [&](int64_t c) {
      if (c >= INT16_MIN && c <= INT16_MAX && i < 64) coefs[i++] = static_cast<int16_t>(c);
    };
    for (int64_t step : {0, 1, 2, 3}) {
      for (int64_t delta : {-1, 0, 1}) {
        put(step * d + d / 2 + delta);
        put(-(step * d + d / 2 + delta));
      }
    }
    put(INT16_MIN), put(INT16_MIN + 1), put(INT16_MAX), put(0), put(1), put(-1);
    while (i < 64) put(static_cast<int16_t>(rng()));
    int16_t got[64];
    k::quantize_block(coefs.data(), r, got);
    const ref::CoefBlock expected = ref::quantize(coefs, table);
    for (int j = 0; j < 64; ++j) ASSERT_EQ(got[j], expected[j]) << "q " << q << ", coefficient " << coefs[j];
  }
  // Every coefficient for a few tables.
  for (uint16_t q : {uint16_t{1}, uint16_t{2}, uint16_t{3}, uint16_t{7}, uint16_t{255}, uint16_t{8191}, uint16_t{32767}}) {
    table.fill(q);
    const k::QuantReciprocals r = k::quant_reciprocals(table.data());
    for (int32_t base = INT16_MIN; base <= INT16_MAX; base += 64) {
      ref::CoefBlock coefs{};
      for (int j = 0; j < 64; ++j) coefs[j] = static_cast<int16_t>(base + j);
      int16_t got[64];
      k::quantize_block(coefs.data(), r, got);
      const ref::CoefBlock expected = ref::quantize(coefs, table);
      ASSERT_EQ(std::memcmp(got, expected.data(), sizeof got), 0) << "q " << q << " from " << base;
    }
  }
}

// The catalog's accelerator path (what the emulated fabric runs) against its software path, every mode.
TEST(DctDatapath, EmulatedAcceleratorEqualsTheSoftwarePath) {
  const tandem::funcs::FunctionInfo* fn = tandem::funcs::find_function(TANDEM_FN_DCT_QUANT);
  ASSERT_NE(fn, nullptr);
  std::mt19937_64 rng(13);
  const uint64_t blocks = 257;
  std::vector<uint8_t> samples(blocks * 64);
  std::vector<int16_t> coefs(blocks * 64), sw(blocks * 64), hw(blocks * 64);
  for (auto& s : samples) s = static_cast<uint8_t>(rng() >> 56);
  for (auto& c : coefs) c = static_cast<int16_t>(rng());
  const ref::QuantTable table = ref::jpeg_luma_quant_table(37, false);
  for (uint32_t mode : {TANDEM_DCT_MODE_DCT, TANDEM_DCT_MODE_QUANTIZE, TANDEM_DCT_MODE_DCT_QUANTIZE}) {
    const void* in = mode == TANDEM_DCT_MODE_QUANTIZE ? static_cast<const void*>(coefs.data()) : samples.data();
    const uint64_t args[4] = {reinterpret_cast<uintptr_t>(in), reinterpret_cast<uintptr_t>(sw.data()),
                              TANDEM_DCT_ARG(blocks, mode), reinterpret_cast<uintptr_t>(table.data())};
    tandem::funcs::Call call;
    tandem::funcs::BufferList list;
    ASSERT_EQ(tandem::funcs::describe_call(*fn, args, call, list), tandem::Status::ok);
    call.buffers = {const_cast<void*>(in), sw.data(), const_cast<uint16_t*>(table.data())};
    EXPECT_EQ(fn->run_sw(call, 0, blocks), 0);
    call.buffers[1] = hw.data();
    EXPECT_EQ(fn->run_accel(call, 0, 100), 0);  // in two parts, as split jobs run
    EXPECT_EQ(fn->run_accel(call, 100, blocks), 0);
    EXPECT_EQ(sw, hw) << "mode " << mode;
  }
  // An invalid table is refused the same way.
  std::array<uint16_t, 64> bad{};
  bad.fill(16);
  bad[5] = 0;
  const uint64_t args[4] = {reinterpret_cast<uintptr_t>(samples.data()), reinterpret_cast<uintptr_t>(hw.data()),
                            TANDEM_DCT_ARG(1, TANDEM_DCT_MODE_DCT_QUANTIZE), reinterpret_cast<uintptr_t>(bad.data())};
  tandem::funcs::Call call;
  tandem::funcs::BufferList list;
  ASSERT_EQ(tandem::funcs::describe_call(*fn, args, call, list), tandem::Status::ok);
  call.buffers = {samples.data(), hw.data(), bad.data()};
  EXPECT_EQ(fn->run_accel(call, 0, 1), 1);
}

}  // namespace
