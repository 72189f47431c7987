#include "funcs/ref/dct_quant_ref.hpp"

#include <algorithm>

namespace tandem::funcs::ref {
namespace {

using Line = std::array<int64_t, 8>;

// Round to nearest (ties up), then divide by 2^n (C++20 shifts negative values arithmetically).
int64_t descale(int64_t v, int n) {
  return (v + (int64_t{1} << (n - 1))) >> n;
}

// One 1-D pass: x[i] are the 8 inputs, the result's element k is frequency k.
Line islow_pass(const Line& x, bool row_pass) {
  const int odd_shift = row_pass ? kDctConstBits - kDctPass1Bits : kDctConstBits + kDctPass1Bits;
  Line y{};

  // Butterflies: sums feed the even frequencies, differences the odd ones.
  const int64_t s07 = x[0] + x[7], d07 = x[0] - x[7];
  const int64_t s16 = x[1] + x[6], d16 = x[1] - x[6];
  const int64_t s25 = x[2] + x[5], d25 = x[2] - x[5];
  const int64_t s34 = x[3] + x[4], d34 = x[3] - x[4];

  // Even part: a 4-point DCT of the sums.
  const int64_t e0 = s07 + s34, e3 = s07 - s34;
  const int64_t e1 = s16 + s25, e2 = s16 - s25;
  if (row_pass) {
    y[0] = (e0 + e1) * (int64_t{1} << kDctPass1Bits);
    y[4] = (e0 - e1) * (int64_t{1} << kDctPass1Bits);
  } else {
    y[0] = descale(e0 + e1, kDctPass1Bits);
    y[4] = descale(e0 - e1, kDctPass1Bits);
  }
  const int64_t rot = (e2 + e3) * kFix0541196100;
  y[2] = descale(rot + e3 * kFix0765366865, odd_shift);
  y[6] = descale(rot - e2 * kFix1847759065, odd_shift);

  // Odd part: the rotations of the differences share the products of four pair sums.
  const int64_t p1 = d34 + d07, p2 = d25 + d16, p3 = d34 + d16, p4 = d25 + d07;
  const int64_t common = (p3 + p4) * kFix1175875602;
  const int64_t t4 = d34 * kFix0298631336;
  const int64_t t5 = d25 * kFix2053119869;
  const int64_t t6 = d16 * kFix3072711026;
  const int64_t t7 = d07 * kFix1501321110;
  const int64_t q1 = -p1 * kFix0899976223;
  const int64_t q2 = -p2 * kFix2562915447;
  const int64_t q3 = -p3 * kFix1961570560 + common;
  const int64_t q4 = -p4 * kFix0390180644 + common;
  y[7] = descale(t4 + q1 + q3, odd_shift);
  y[5] = descale(t5 + q2 + q4, odd_shift);
  y[3] = descale(t6 + q2 + q3, odd_shift);
  y[1] = descale(t7 + q1 + q4, odd_shift);
  return y;
}

constexpr std::array<uint16_t, 64> kLumaBase = {16, 11, 10, 16, 24,  40,  51,  61,   //
                                                12, 12, 14, 19, 26,  58,  60,  55,   //
                                                14, 13, 16, 24, 40,  57,  69,  56,   //
                                                14, 17, 22, 29, 51,  87,  80,  62,   //
                                                18, 22, 37, 56, 68,  109, 103, 77,   //
                                                24, 35, 55, 64, 81,  104, 113, 92,   //
                                                49, 64, 78, 87, 103, 121, 120, 101,  //
                                                72, 92, 95, 98, 112, 100, 103, 99};

}  // namespace

CoefBlock fdct_islow(const SampleBlock& samples) {
  std::array<Line, 8> rows{};
  for (int r = 0; r < 8; ++r) {
    Line x{};
    for (int c = 0; c < 8; ++c) x[c] = int64_t{samples[r * 8 + c]} - 128;
    rows[r] = islow_pass(x, true);
  }
  CoefBlock out{};
  for (int c = 0; c < 8; ++c) {
    Line x{};
    for (int r = 0; r < 8; ++r) x[r] = rows[r][c];
    const Line y = islow_pass(x, false);
    for (int v = 0; v < 8; ++v) out[v * 8 + c] = static_cast<int16_t>(y[v]);
  }
  return out;
}

CoefBlock quantize(const CoefBlock& coefs, const QuantTable& table) {
  CoefBlock out{};
  for (int i = 0; i < 64; ++i) {
    const int32_t divisor = int32_t{table[i]} * 8;
    const int32_t c = coefs[i];
    const int32_t magnitude = ((c < 0 ? -c : c) + divisor / 2) / divisor;
    out[i] = static_cast<int16_t>(c < 0 ? -magnitude : magnitude);
  }
  return out;
}

QuantTable jpeg_luma_quant_table(int quality, bool force_baseline) {
  quality = std::clamp(quality, 1, 100);
  const int32_t scale = quality < 50 ? 5000 / quality : 200 - quality * 2;
  QuantTable table{};
  for (int i = 0; i < 64; ++i) {
    int32_t v = (int32_t{kLumaBase[i]} * scale + 50) / 100;
    v = std::clamp(v, 1, force_baseline ? 255 : 32767);
    table[i] = static_cast<uint16_t>(v);
  }
  return table;
}

std::vector<SampleBlock> image_blocks(std::span<const uint8_t> pixels, uint32_t width,
                                      uint32_t height) {
  std::vector<SampleBlock> blocks;
  if (width == 0 || height == 0 || pixels.size() < size_t{width} * height) return blocks;
  const uint32_t bw = (width + 7) / 8, bh = (height + 7) / 8;
  blocks.reserve(size_t{bw} * bh);
  for (uint32_t by = 0; by < bh; ++by) {
    for (uint32_t bx = 0; bx < bw; ++bx) {
      SampleBlock b{};
      for (uint32_t r = 0; r < 8; ++r) {
        const uint32_t y = std::min(by * 8 + r, height - 1);
        for (uint32_t c = 0; c < 8; ++c) {
          const uint32_t x = std::min(bx * 8 + c, width - 1);
          b[r * 8 + c] = pixels[size_t{y} * width + x];
        }
      }
      blocks.push_back(b);
    }
  }
  return blocks;
}

}  // namespace tandem::funcs::ref
