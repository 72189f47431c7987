#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "funcs/ref/dct_quant_ref.hpp"
#include "jpeg_util.hpp"
#include "rtl_test_util.hpp"

namespace tandem::testing {
namespace {

namespace ref = tandem::funcs::ref;
using rtl::CoefBlock8x8;
using rtl::QuantValues;
using rtl::SampleBlock8x8;

std::vector<CoefBlock8x8> run_ok(rtl::RtlAccelerator& slot, const rtl::RtlJob& job) {
  const auto r = slot.run(job);
  EXPECT_EQ(r.status, Status::ok) << r.message;
  EXPECT_EQ(r.value, rtl::kRetOk);
  return rtl::coef_blocks(r);
}

std::vector<SampleBlock8x8> special_blocks(TestRng& rng) {
  std::vector<SampleBlock8x8> blocks;
  SampleBlock8x8 b{};
  for (uint8_t v : {uint8_t{0}, uint8_t{255}, uint8_t{128}, uint8_t{127}}) {
    b.fill(v);
    blocks.push_back(b);
  }
  for (int phase = 0; phase < 2; ++phase) {  // checkerboards: the largest AC coefficients
    for (int i = 0; i < 64; ++i) b[i] = ((i / 8 + i % 8 + phase) % 2) ? 255 : 0;
    blocks.push_back(b);
  }
  for (int i = 0; i < 64; ++i) b[i] = static_cast<uint8_t>(i * 4);  // ramp
  blocks.push_back(b);
  for (int i = 0; i < 64; ++i) b[i] = (i % 8 < 4) ? 0 : 255;  // vertical edge
  blocks.push_back(b);
  for (int i = 0; i < 64; ++i) b[i] = (i / 8 < 4) ? 255 : 0;  // horizontal edge
  blocks.push_back(b);
  for (int n = 0; n < 200; ++n) {
    for (auto& s : b) s = rng.byte();
    blocks.push_back(b);
  }
  for (int n = 0; n < 50; ++n) {  // only the extremes
    for (auto& s : b) s = (rng.next() & 1) ? 255 : 0;
    blocks.push_back(b);
  }
  return blocks;
}

QuantValues random_table(TestRng& rng, uint32_t max) {
  QuantValues t{};
  for (auto& q : t) q = static_cast<uint16_t>(1 + rng.below(max));
  return t;
}

TEST(DctReference, ConstantsComeFromTheCosines) {
  const double pi = std::acos(-1.0), s2 = std::sqrt(2.0);
  auto c = [&](int k) { return std::cos(k * pi / 16); };
  auto fix = [](double x) { return static_cast<int32_t>(std::lround(x * 8192)); };
  EXPECT_EQ(ref::kFix0298631336, fix(s2 * (-c(1) + c(3) + c(5) - c(7))));
  EXPECT_EQ(ref::kFix0390180644, fix(s2 * (c(3) - c(5))));
  EXPECT_EQ(ref::kFix0541196100, fix(s2 * c(6)));
  EXPECT_EQ(ref::kFix0765366865, fix(s2 * (c(2) - c(6))));
  EXPECT_EQ(ref::kFix0899976223, fix(s2 * (c(3) - c(7))));
  EXPECT_EQ(ref::kFix1175875602, fix(s2 * c(3)));
  EXPECT_EQ(ref::kFix1501321110, fix(s2 * (c(1) + c(3) - c(5) - c(7))));
  EXPECT_EQ(ref::kFix1847759065, fix(s2 * (c(2) + c(6))));
  EXPECT_EQ(ref::kFix1961570560, fix(s2 * (c(3) + c(5))));
  EXPECT_EQ(ref::kFix2053119869, fix(s2 * (c(1) + c(3) - c(5) + c(7))));
  EXPECT_EQ(ref::kFix2562915447, fix(s2 * (c(1) + c(3))));
  EXPECT_EQ(ref::kFix3072711026, fix(s2 * (c(1) + c(3) + c(5) - c(7))));
}

TEST(DctReference, CloseToTheExactDct) {
  // The integer DCT approximates 8 * (the orthonormal 2-D DCT of the centred samples).
  TestRng rng(51);
  const double pi = std::acos(-1.0);
  for (int n = 0; n < 20; ++n) {
    SampleBlock8x8 b{};
    for (auto& s : b) s = rng.byte();
    const auto got = ref::fdct_islow(b);
    for (int v = 0; v < 8; ++v) {
      for (int u = 0; u < 8; ++u) {
        double sum = 0;
        for (int y = 0; y < 8; ++y) {
          for (int x = 0; x < 8; ++x) {
            sum += (b[y * 8 + x] - 128.0) * std::cos((2 * x + 1) * u * pi / 16) *
                   std::cos((2 * y + 1) * v * pi / 16);
          }
        }
        const double cu = u == 0 ? std::sqrt(0.5) : 1.0, cv = v == 0 ? std::sqrt(0.5) : 1.0;
        const double exact = 8 * 0.25 * cu * cv * sum;
        EXPECT_NEAR(got[v * 8 + u], exact, 2.0) << "u=" << u << " v=" << v;
      }
    }
  }
}

TEST(DctReference, QualityTablesMatchLibjpeg) {
  for (int q : {1, 5, 10, 25, 50, 75, 90, 95, 100}) {
    const auto mine = ref::jpeg_luma_quant_table(q, false);
    const auto lib = libjpeg_quant_table(q);
    EXPECT_TRUE(std::equal(mine.begin(), mine.end(), lib.begin())) << "quality " << q;
  }
}

TEST(RtlDctQuant, DctMatchesReference) {
  auto slot = make_slot(rtl::RtlFunction::dct_quant);
  ASSERT_NE(slot, nullptr);
  TestRng rng(52);
  const auto blocks = special_blocks(rng);
  const auto got = run_ok(*slot, rtl::dct_job(blocks));
  ASSERT_EQ(got.size(), blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) EXPECT_EQ(got[i], ref::fdct_islow(blocks[i])) << i;
}

TEST(RtlDctQuant, QuantizerMatchesReference) {
  auto slot = make_slot(rtl::RtlFunction::dct_quant);
  ASSERT_NE(slot, nullptr);
  TestRng rng(53);
  for (uint32_t max_q : {1u, 8u, 255u, 32767u}) {
    std::vector<CoefBlock8x8> coefs(64);
    for (auto& b : coefs) {
      for (auto& c : b) c = static_cast<int16_t>(rng.next());
    }
    CoefBlock8x8 edge{};  // the int16 extremes and values around the rounding points
    for (int i = 0; i < 64; ++i) {
      const int16_t v[] = {-32768, 32767, -1, 1, 0, -4, 4, -12, 12, -3, 3, -5, 5};
      edge[i] = v[i % 13];
    }
    coefs.push_back(edge);
    const QuantValues table = random_table(rng, max_q);
    const auto got = run_ok(*slot, rtl::quantize_job(coefs, table));
    ASSERT_EQ(got.size(), coefs.size());
    for (size_t i = 0; i < coefs.size(); ++i) {
      EXPECT_EQ(got[i], ref::quantize(coefs[i], table)) << "block " << i << " max_q " << max_q;
    }
  }
}

TEST(RtlDctQuant, ChainedMatchesReference) {
  auto slot = make_slot(rtl::RtlFunction::dct_quant);
  ASSERT_NE(slot, nullptr);
  TestRng rng(54);
  const auto blocks = special_blocks(rng);
  for (int q : {1, 50, 100}) {
    const QuantValues table = ref::jpeg_luma_quant_table(q, false);
    const auto got = run_ok(*slot, rtl::dct_quantize_job(blocks, table));
    ASSERT_EQ(got.size(), blocks.size());
    for (size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_EQ(got[i], ref::quantize(ref::fdct_islow(blocks[i]), table)) << i;
    }
  }
}

TEST(RtlDctQuant, EmptyJobsAndBadModes) {
  auto slot = make_slot(rtl::RtlFunction::dct_quant);
  ASSERT_NE(slot, nullptr);
  const QuantValues table = ref::jpeg_luma_quant_table(75, false);
  EXPECT_TRUE(run_ok(*slot, rtl::dct_job({})).empty());
  EXPECT_TRUE(run_ok(*slot, rtl::quantize_job({}, table)).empty());
  EXPECT_TRUE(run_ok(*slot, rtl::dct_quantize_job({}, table)).empty());
  for (uint32_t mode : {0u, 4u, 7u}) {
    const auto r = slot->run(rtl::RtlJob{.args = {mode, 3}, .input = {}, .output_bytes = 0});
    EXPECT_EQ(r.status, Status::ok) << r.message;
    EXPECT_EQ(r.value, rtl::kRetBadArguments);
  }
  SampleBlock8x8 one{};
  one.fill(200);
  const auto got = run_ok(*slot, rtl::dct_job(std::vector<SampleBlock8x8>{one}));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], ref::fdct_islow(one));
}

TEST(RtlDctQuant, BackPressure) {
  auto slot = make_slot(rtl::RtlFunction::dct_quant, stalling_options(55));
  ASSERT_NE(slot, nullptr);
  TestRng rng(56);
  std::vector<SampleBlock8x8> blocks(40);
  for (auto& b : blocks) {
    for (auto& s : b) s = rng.byte();
  }
  const QuantValues table = random_table(rng, 255);
  const auto dct = run_ok(*slot, rtl::dct_job(blocks));
  const auto both = run_ok(*slot, rtl::dct_quantize_job(blocks, table));
  const auto quant = run_ok(*slot, rtl::quantize_job(dct, table));
  ASSERT_EQ(dct.size(), blocks.size());
  ASSERT_EQ(both.size(), blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(dct[i], ref::fdct_islow(blocks[i]));
    EXPECT_EQ(both[i], ref::quantize(dct[i], table));
    EXPECT_EQ(quant[i], both[i]);  // chaining inside equals two separate jobs
  }
}

TEST(RtlDctQuant, SixteenCyclesPerBlock) {
  auto slot = make_slot(rtl::RtlFunction::dct_quant);
  ASSERT_NE(slot, nullptr);
  const QuantValues table = ref::jpeg_luma_quant_table(75, false);
  std::vector<SampleBlock8x8> blocks(200);
  const uint64_t c100 =
      slot->run(rtl::dct_quantize_job(std::span(blocks).first(100), table)).cycles;
  const uint64_t c200 = slot->run(rtl::dct_quantize_job(blocks, table)).cycles;
  EXPECT_EQ(c200 - c100, 100u * 16);  // bounded by the output port: 16 beats per block
}

// ---- byte identity with cjpeg ----

GrayImage test_image(uint32_t w, uint32_t h, int pattern, TestRng& rng) {
  GrayImage img{w, h, std::vector<uint8_t>(size_t{w} * h)};
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      uint8_t v = 0;
      switch (pattern) {
        case 0: v = rng.byte(); break;                                             // noise
        case 1: v = static_cast<uint8_t>((x * 255) / std::max(1u, w - 1)); break;  // ramp
        case 2: v = ((x / 3 + y / 2) % 2) ? 255 : 0; break;  // saturated stripes
        default:
          v = static_cast<uint8_t>(128 + 100 * std::sin(x * 0.3) * std::cos(y * 0.2));  // smooth
      }
      img.pixels[size_t{y} * w + x] = v;
    }
  }
  return img;
}

TEST(RtlDctQuant, JpegByteIdenticalToCjpeg) {
  auto slot = make_slot(rtl::RtlFunction::dct_quant);
  ASSERT_NE(slot, nullptr);
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  TestRng rng(57);
  const std::pair<uint32_t, uint32_t> sizes[] = {{8, 8},  {16, 16}, {64, 48}, {1, 1},
                                                 {17, 9}, {33, 21}, {100, 75}};
  int checked = 0;
  for (size_t s = 0; s < std::size(sizes); ++s) {
    const auto [w, h] = sizes[s];
    const GrayImage img = test_image(w, h, static_cast<int>(s % 4), rng);
    const auto pgm = dir.path() / ("image" + std::to_string(s) + ".pgm");
    write_pgm(pgm, img);
    const auto blocks = ref::image_blocks(img.pixels, w, h);
    for (int quality : {10, 50, 75, 90, 100}) {
      SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h) + " quality " +
                   std::to_string(quality));
      const QuantValues table = ref::jpeg_luma_quant_table(quality, false);
      const auto coefs = run_ok(*slot, rtl::dct_quantize_job(blocks, table));
      const std::vector<uint8_t> cjpeg = run_cjpeg(pgm, quality);
      ASSERT_FALSE(cjpeg.empty()) << "cjpeg failed";
      // First the coefficients cjpeg stored (a precise diagnosis), then the whole file.
      const auto theirs = coefficients_of(cjpeg);
      ASSERT_EQ(theirs.size(), coefs.size());
      for (size_t i = 0; i < coefs.size(); ++i) ASSERT_EQ(coefs[i], theirs[i]) << "block " << i;
      const std::vector<Coefs> mine(coefs.begin(), coefs.end());
      EXPECT_EQ(jpeg_from_coefficients(w, h, quality, mine), cjpeg);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 35);
}

}  // namespace
}  // namespace tandem::testing
