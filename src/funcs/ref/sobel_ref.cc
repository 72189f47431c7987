#include "funcs/ref/sobel_ref.hpp"

#include <algorithm>
#include <cstdlib>

namespace tandem::funcs::ref {

Status sobel_rows(std::span<const uint8_t> image, uint32_t width, uint32_t height,
                  uint32_t row_begin, uint32_t row_end, std::span<uint8_t> out) {
  if (image.size() != size_t{width} * height || row_begin > row_end || row_end > height ||
      out.size() != size_t{row_end - row_begin} * width) {
    return Status::invalid_argument;
  }
  std::fill(out.begin(), out.end(), uint8_t{0});
  if (width < 3) return Status::ok;
  auto p = [&](uint32_t r, uint32_t c) { return int{image[size_t{r} * width + c]}; };
  // Rows 0 and height-1 are borders: they stay zero.
  for (uint32_t r = std::max(row_begin, 1u); r < row_end && r + 1 < height; ++r) {
    uint8_t* line = out.data() + size_t{r - row_begin} * width;
    for (uint32_t c = 1; c + 1 < width; ++c) {
      const int gx = (p(r - 1, c + 1) + 2 * p(r, c + 1) + p(r + 1, c + 1)) -
                     (p(r - 1, c - 1) + 2 * p(r, c - 1) + p(r + 1, c - 1));
      const int gy = (p(r + 1, c - 1) + 2 * p(r + 1, c) + p(r + 1, c + 1)) -
                     (p(r - 1, c - 1) + 2 * p(r - 1, c) + p(r - 1, c + 1));
      line[c] = static_cast<uint8_t>(std::min(255, std::abs(gx) + std::abs(gy)));
    }
  }
  return Status::ok;
}

Status sobel(std::span<const uint8_t> pixels, std::span<uint8_t> out, uint32_t width,
             uint32_t height) {
  return sobel_rows(pixels, width, height, 0, height, out);
}

}  // namespace tandem::funcs::ref
