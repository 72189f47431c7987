// Software reference of the Sobel accelerator (rtl/sobel), bit-exact.
//
//   out(r,c) = min(255, |Gx| + |Gy|)
//   Gx = (p(r-1,c+1) + 2p(r,c+1) + p(r+1,c+1)) - (p(r-1,c-1) + 2p(r,c-1) + p(r+1,c-1))
//   Gy = (p(r+1,c-1) + 2p(r+1,c) + p(r+1,c+1)) - (p(r-1,c-1) + 2p(r-1,c) + p(r-1,c+1))
// Border pixels (first/last row, first/last column) are 0, so images narrower or shorter than 3
// pixels are all zero.
#pragma once

#include <cstdint>
#include <span>

#include "abi/status.hpp"

namespace tandem::funcs::ref {

// pixels and out are row-major, width * height bytes each; invalid_argument if a size differs.
Status sobel(std::span<const uint8_t> pixels, std::span<uint8_t> out, uint32_t width,
             uint32_t height);

// Output rows [row_begin, row_end) of the width x height image (the same border rule: rows 0 and
// height-1 of the image are zero), into out ((row_end - row_begin) * width bytes). What a job
// that covers part of an image computes: tandem's sobel splits by rows with a halo row each side.
Status sobel_rows(std::span<const uint8_t> image, uint32_t width, uint32_t height,
                  uint32_t row_begin, uint32_t row_end, std::span<uint8_t> out);

}  // namespace tandem::funcs::ref
