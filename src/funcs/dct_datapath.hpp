// The emulated dct_quant accelerator's datapath: the same results as the references ref::fdct_islow and
// ref::quantize (bit for bit), computed fast enough that the emulated fabric can honour its modelled
// time (the RTL accelerator's 80 ns per block) instead of spending the reference's microsecond per
// block on the dispatcher thread. The DCT runs on 32-bit lanes, the 8 rows of a block side by side,
// then the 8 columns (libjpeg's own SIMD versions show that 32 bits hold every intermediate value);
// quantization multiplies by exact reciprocals instead of dividing.
#pragma once

#include <array>
#include <cstdint>

namespace tandem::funcs::kernels {

// Quantization by a table as multiply-and-shift: (|c| + 4q) / 8q == ((|c| + 4q) * multiplier) >> shift
// for every int16 coefficient (Granlund and Montgomery's exact division by invariant integers, with
// numerators below 2^18).
struct QuantReciprocals {
  std::array<uint64_t, 64> multiplier{};
  std::array<uint32_t, 64> half{};   // 4q: rounds half away from zero
  std::array<uint32_t, 64> shift{};
};
// Every entry must be in 1..32767 (valid_quant_table).
QuantReciprocals quant_reciprocals(const uint16_t* table);

// 64 samples (row-major) -> 64 coefficients: ref::fdct_islow.
void fdct_islow_block(const uint8_t* samples, int16_t* coefs);
// 64 coefficients -> quantized: ref::quantize.
void quantize_block(const int16_t* coefs, const QuantReciprocals& table, int16_t* out);

}  // namespace tandem::funcs::kernels
