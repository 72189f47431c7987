#include "funcs/dct_datapath.hpp"

#include "funcs/ref/dct_quant_ref.hpp"

namespace tandem::funcs::kernels {

namespace {

using ref::kDctConstBits;
using ref::kDctPass1Bits;

// One clone per vector width where GCC can make them (as accumulate's datapath); plain code elsewhere.
#if defined(__GNUC__) && !defined(__clang__) && !defined(TANDEM_SANITIZED)
#define TANDEM_DCT_LOOP __attribute__((target_clones("avx2", "default"), optimize("O3")))
#else
#define TANDEM_DCT_LOOP
#endif

// The 8-point butterfly of ref::islow_pass on 8 lanes at once: in[i][lane] is input i of lane `lane`,
// out[k][lane] its frequency k. Row pass: the even outputs scaled up by 2^PASS1_BITS; column pass: all
// of them descaled. Each lane computes exactly what the reference computes for one row or column: sums
// and products are taken modulo 2^32 (unsigned), so a partial sum may wrap, and every value that is
// shifted down, a coefficient times 2^shift, fits in 32 bits, as in libjpeg's 32-bit SIMD versions.
template <bool kRowPass>
inline void butterfly8(const int32_t (&in)[8][8], int32_t (&out)[8][8]) {
  using u32 = uint32_t;
  constexpr int odd_shift = kRowPass ? kDctConstBits - kDctPass1Bits : kDctConstBits + kDctPass1Bits;
  const auto descale = [](u32 v, int n) { return static_cast<int32_t>(v + (u32{1} << (n - 1))) >> n; };
  const auto fix = [](int32_t c) { return static_cast<u32>(c); };
  for (int lane = 0; lane < 8; ++lane) {
    u32 x[8];
    for (int i = 0; i < 8; ++i) x[i] = static_cast<u32>(in[i][lane]);
    const u32 s07 = x[0] + x[7], d07 = x[0] - x[7];
    const u32 s16 = x[1] + x[6], d16 = x[1] - x[6];
    const u32 s25 = x[2] + x[5], d25 = x[2] - x[5];
    const u32 s34 = x[3] + x[4], d34 = x[3] - x[4];
    const u32 e0 = s07 + s34, e3 = s07 - s34, e1 = s16 + s25, e2 = s16 - s25;
    if constexpr (kRowPass) {
      out[0][lane] = static_cast<int32_t>((e0 + e1) << kDctPass1Bits);
      out[4][lane] = static_cast<int32_t>((e0 - e1) << kDctPass1Bits);
    } else {
      out[0][lane] = descale(e0 + e1, kDctPass1Bits);
      out[4][lane] = descale(e0 - e1, kDctPass1Bits);
    }
    const u32 rot = (e2 + e3) * fix(ref::kFix0541196100);
    out[2][lane] = descale(rot + e3 * fix(ref::kFix0765366865), odd_shift);
    out[6][lane] = descale(rot - e2 * fix(ref::kFix1847759065), odd_shift);
    const u32 p1 = d34 + d07, p2 = d25 + d16, p3 = d34 + d16, p4 = d25 + d07;
    const u32 common = (p3 + p4) * fix(ref::kFix1175875602);
    const u32 q1 = u32{0} - p1 * fix(ref::kFix0899976223);
    const u32 q2 = u32{0} - p2 * fix(ref::kFix2562915447);
    const u32 q3 = common - p3 * fix(ref::kFix1961570560);
    const u32 q4 = common - p4 * fix(ref::kFix0390180644);
    out[7][lane] = descale(d34 * fix(ref::kFix0298631336) + q1 + q3, odd_shift);
    out[5][lane] = descale(d25 * fix(ref::kFix2053119869) + q2 + q4, odd_shift);
    out[3][lane] = descale(d16 * fix(ref::kFix3072711026) + q2 + q3, odd_shift);
    out[1][lane] = descale(d07 * fix(ref::kFix1501321110) + q1 + q4, odd_shift);
  }
}

}  // namespace

TANDEM_DCT_LOOP void fdct_islow_block(const uint8_t* samples, int16_t* coefs) {
  // Rows side by side: lane r holds row r, so input c of the butterfly is column c.
  int32_t columns[8][8];
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 8; ++c) columns[c][r] = int32_t{samples[r * 8 + c]} - 128;
  }
  int32_t row_freq[8][8];  // [k][r]: horizontal frequency k of row r
  butterfly8<true>(columns, row_freq);
  // Columns side by side: lane k holds column (frequency) k, input r is row r.
  int32_t by_row[8][8];
  for (int k = 0; k < 8; ++k) {
    for (int r = 0; r < 8; ++r) by_row[r][k] = row_freq[k][r];
  }
  int32_t out[8][8];  // [v][k]: vertical frequency v of column k
  butterfly8<false>(by_row, out);
  for (int v = 0; v < 8; ++v) {
    for (int k = 0; k < 8; ++k) coefs[v * 8 + k] = static_cast<int16_t>(out[v][k]);
  }
}

QuantReciprocals quant_reciprocals(const uint16_t* table) {
  constexpr uint32_t kNumeratorBits = 18;  // |c| + 4q <= 32768 + 131068 < 2^18
  QuantReciprocals r;
  for (int i = 0; i < 64; ++i) {
    const uint64_t d = uint64_t{table[i]} * 8;
    uint32_t l = 0;
    while ((uint64_t{1} << l) < d) ++l;  // ceil(log2 d)
    const uint32_t shift = kNumeratorBits + l;
    r.multiplier[i] = ((uint64_t{1} << shift) + d - 1) / d;  // ceil(2^shift / d): m*d - 2^shift < d <= 2^l
    r.shift[i] = shift;
    r.half[i] = static_cast<uint32_t>(d / 2);
  }
  return r;
}

TANDEM_DCT_LOOP void quantize_block(const int16_t* coefs, const QuantReciprocals& table, int16_t* out) {
  for (int i = 0; i < 64; ++i) {
    const int32_t c = coefs[i];
    const uint64_t n = static_cast<uint64_t>(c < 0 ? -c : c) + table.half[i];
    const auto magnitude = static_cast<int32_t>((n * table.multiplier[i]) >> table.shift[i]);
    out[i] = static_cast<int16_t>(c < 0 ? -magnitude : magnitude);
  }
}

}  // namespace tandem::funcs::kernels
