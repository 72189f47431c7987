#include "funcs/ref/sobel_ref.hpp"

#include <algorithm>
#include <cstdlib>

namespace tandem::funcs::ref {

Status sobel(std::span<const uint8_t> pixels, std::span<uint8_t> out, uint32_t width,
             uint32_t height) {
  const size_t size = size_t{width} * height;
  if (pixels.size() != size || out.size() != size) return Status::invalid_argument;
  std::fill(out.begin(), out.end(), uint8_t{0});
  if (width < 3 || height < 3) return Status::ok;
  auto p = [&](uint32_t r, uint32_t c) { return int{pixels[size_t{r} * width + c]}; };
  for (uint32_t r = 1; r + 1 < height; ++r) {
    for (uint32_t c = 1; c + 1 < width; ++c) {
      const int gx = (p(r - 1, c + 1) + 2 * p(r, c + 1) + p(r + 1, c + 1)) -
                     (p(r - 1, c - 1) + 2 * p(r, c - 1) + p(r + 1, c - 1));
      const int gy = (p(r + 1, c - 1) + 2 * p(r + 1, c) + p(r + 1, c + 1)) -
                     (p(r - 1, c - 1) + 2 * p(r - 1, c) + p(r - 1, c + 1));
      out[size_t{r} * width + c] = static_cast<uint8_t>(std::min(255, std::abs(gx) + std::abs(gy)));
    }
  }
  return Status::ok;
}

}  // namespace tandem::funcs::ref
