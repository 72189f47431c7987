// The kernels that have a Verilog accelerator (rtl/, docs/rtl.md): sobel, matmul, dct_quant and
// priority_queue. Their argument layouts are ABI (docs/abi.md); their software paths are the
// bit-exact references of src/funcs/ref, which the emulated fabric also uses for its results.
//
// How each one splits (FunctionInfo::slice, for cooperative calls):
//   sobel     by rows: a split point p (pixels) goes to row ceil(p / width); a part reads one halo
//             row above and below its rows where the image has them (TANDEM_SOBEL_HALO_*)
//   matmul    by rows of C: p (multiply-accumulates) goes to row ceil(p / (n * max(k, 1)))
//   dct_quant by 8x8 blocks
//   priority_queue is not splittable: its commands act on one queue in order
// Rounding a split point up to a row boundary is a function of the point alone, so the parts of
// any split cover the rows exactly once; a part may be empty.
#pragma once

#include <cstdint>

#include "funcs/function.hpp"

namespace tandem::funcs::kernels {

extern const FunctionInfo kSobel;
extern const FunctionInfo kMatmul;
extern const FunctionInfo kDctQuant;
extern const FunctionInfo kPriorityQueue;

// Limits of the argument words (the accelerators take less per hardware job; the RTL device tiles).
inline constexpr uint64_t kSobelMaxSide = uint64_t{1} << 20;  // width and height
inline constexpr uint64_t kMatmulMaxDim = 0xffff;               // m, k, n: 16-bit fields
inline constexpr uint64_t kDctMaxBlocks = 0xffffffff;           // 32-bit field
inline constexpr uint64_t kPqMaxCommands = uint64_t{1} << 24;

// Best-of-several software rate on a cache-resident input (units per second), for
// funcs::software_throughput. Measures; call once and cache.
double measure_software_throughput(uint16_t function);

// ---- argument words, decoded (the RTL device reads calls with these too) ----
struct SobelArgs {
  uint64_t width = 0;
  uint64_t rows = 0;       // output rows
  uint32_t above = 0;      // 1: the input starts one (halo) row above the first output row
  uint32_t below = 0;      // 1: the input ends one (halo) row below the last output row
  uint64_t input_rows() const { return rows + above + below; }
};
SobelArgs sobel_args(const Call& call);

struct MatmulArgs {
  uint64_t m = 0, k = 0, n = 0;
};
MatmulArgs matmul_args(const Call& call);
// Buffer indices in Call::buffers: A, B and C when k > 0; only C when k == 0.
inline uint32_t matmul_c_buffer(const MatmulArgs& a) { return a.k == 0 ? 0 : 2; }

struct DctArgs {
  uint64_t blocks = 0;
  uint32_t mode = 0;  // TANDEM_DCT_MODE_*
  uint64_t input_block_bytes() const { return mode == TANDEM_DCT_MODE_QUANTIZE ? 128 : 64; }
  bool uses_table() const { return mode != TANDEM_DCT_MODE_DCT; }
};
DctArgs dct_args(const Call& call);
// Every entry of a quantization table must lie in 1..32767 (else the call returns 1, writing nothing).
bool valid_quant_table(const uint16_t* table);

}  // namespace tandem::funcs::kernels
