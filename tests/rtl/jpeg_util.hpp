// libjpeg helpers for the DCT/quantizer tests: write a grayscale JPEG from quantized coefficients
// (jpeg_write_coefficients) with cjpeg's settings, read the coefficients back out of a JPEG, and
// run cjpeg itself.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tandem::testing {

using Coefs = std::array<int16_t, 64>;  // natural order

struct GrayImage {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> pixels;  // row-major
};

// A JPEG as cjpeg -quality `quality` writes it (JFIF header, baseline Huffman coding with the
// standard tables, quantization tables from jpeg_set_quality without forcing baseline), holding
// the given blocks (row-major block order, ceil(w/8) x ceil(h/8)). Empty on a libjpeg error.
std::vector<uint8_t> jpeg_from_coefficients(uint32_t width, uint32_t height, int quality,
                                            const std::vector<Coefs>& blocks);

// The luminance quantization table libjpeg's jpeg_set_quality(quality, FALSE) installs.
std::array<uint16_t, 64> libjpeg_quant_table(int quality);

// The quantized blocks stored in a grayscale JPEG; empty on error.
std::vector<Coefs> coefficients_of(const std::vector<uint8_t>& jpeg);

// Binary PGM (P5, maxval 255).
void write_pgm(const std::filesystem::path& path, const GrayImage& image);

// Runs `cjpeg -dct int -quality Q` on a PGM and returns the JPEG (empty if cjpeg failed).
std::vector<uint8_t> run_cjpeg(const std::filesystem::path& pgm, int quality);

// A fresh directory under the system's temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tandem::testing
