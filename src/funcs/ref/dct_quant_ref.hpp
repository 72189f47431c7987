// Software reference of the DCT and quantizer accelerator (rtl/dct_quant), bit-exact, and the
// JPEG conventions around it.
//
// The DCT is JPEG's accurate integer forward DCT as libjpeg computes it for `-dct int` ("islow"):
// the Loeffler-Ligtenberg-Moschytz factorisation with 12 multiplications by constants scaled by
// 2^13 (CONST_BITS), rows first with their outputs scaled up by 2^2 (PASS1_BITS), then columns,
// rounding with "add half, shift right". Samples are centred first (minus 128). The result is the
// 2-D DCT scaled by 8. Quantization divides by 8*q and rounds half away from zero, as libjpeg does.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace tandem::funcs::ref {

inline constexpr int kDctConstBits = 13;
inline constexpr int kDctPass1Bits = 2;

// round(c * 2^13) for the factorisation's constants, c_k = cos(k*pi/16). The unit tests derive
// them from the cosines again.
inline constexpr int32_t kFix0298631336 = 2446;   // sqrt2 * (-c1 + c3 + c5 - c7)
inline constexpr int32_t kFix0390180644 = 3196;   // sqrt2 * (c3 - c5)
inline constexpr int32_t kFix0541196100 = 4433;   // sqrt2 * c6
inline constexpr int32_t kFix0765366865 = 6270;   // sqrt2 * (c2 - c6)
inline constexpr int32_t kFix0899976223 = 7373;   // sqrt2 * (c3 - c7)
inline constexpr int32_t kFix1175875602 = 9633;   // sqrt2 * c3
inline constexpr int32_t kFix1501321110 = 12299;  // sqrt2 * (c1 + c3 - c5 - c7)
inline constexpr int32_t kFix1847759065 = 15137;  // sqrt2 * (c2 + c6)
inline constexpr int32_t kFix1961570560 = 16069;  // sqrt2 * (c3 + c5)
inline constexpr int32_t kFix2053119869 = 16819;  // sqrt2 * (c1 + c3 - c5 + c7)
inline constexpr int32_t kFix2562915447 = 20995;  // sqrt2 * (c1 + c3)
inline constexpr int32_t kFix3072711026 = 25172;  // sqrt2 * (c1 + c3 + c5 - c7)

using SampleBlock = std::array<uint8_t, 64>;  // 8x8 samples, row-major
using CoefBlock = std::array<int16_t, 64>;    // coefficients in natural (row-major) order
using QuantTable = std::array<uint16_t, 64>;  // quantization values (1..32767), natural order

CoefBlock fdct_islow(const SampleBlock& samples);

// c >= 0: floor((c + 4q) / 8q); c < 0: -floor((-c + 4q) / 8q). Every q must be at least 1.
CoefBlock quantize(const CoefBlock& coefs, const QuantTable& table);

// The JPEG standard's luminance table (Annex K.1) scaled for quality 1..100 with the IJG
// convention (scale 5000/q below 50, else 200-2q; values clamped to 1..32767, or to 1..255 for
// baseline), as cjpeg -quality does.
QuantTable jpeg_luma_quant_table(int quality, bool force_baseline);

// Cuts a row-major 8-bit image into 8x8 blocks (row-major block order), padding partial blocks by
// repeating the last column and the last row, as libjpeg's compressor does. Empty for a 0 size.
std::vector<SampleBlock> image_blocks(std::span<const uint8_t> pixels, uint32_t width,
                                      uint32_t height);

}  // namespace tandem::funcs::ref
