// Software reference of the matrix-multiplication accelerator (rtl/matmul), bit-exact:
// C (m x n) = A (m x k) * B (k x n); int16 inputs, int32 results modulo 2^32 (wrap-around).
#pragma once

#include <cstdint>
#include <span>

#include "abi/status.hpp"

namespace tandem::funcs::ref {

// Row-major a (m*k), b (k*n), c (m*n); invalid_argument if a size differs.
Status matmul(std::span<const int16_t> a, std::span<const int16_t> b, std::span<int32_t> c,
              uint32_t m, uint32_t k, uint32_t n);

}  // namespace tandem::funcs::ref
