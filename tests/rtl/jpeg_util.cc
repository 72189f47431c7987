#include "jpeg_util.hpp"

#include <jpeglib.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace tandem::testing {
namespace {

// libjpeg reports errors through error_exit, which must not return: jump back to the caller.
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf escape;
};

void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  std::longjmp(err->escape, 1);
}

}  // namespace

std::vector<uint8_t> jpeg_from_coefficients(uint32_t width, uint32_t height, int quality,
                                            const std::vector<Coefs>& blocks) {
  const JDIMENSION bw = (width + 7) / 8, bh = (height + 7) / 8;
  if (blocks.size() != size_t{bw} * bh) return {};
  jpeg_compress_struct cinfo{};
  ErrorManager err{};
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  std::vector<uint8_t> out;
  if (setjmp(err.escape) == 0) {
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &buffer, &size);
    cinfo.image_width = width;
    cinfo.image_height = height;
    cinfo.input_components = 1;
    cinfo.in_color_space = JCS_GRAYSCALE;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, FALSE);  // cjpeg forces baseline only with -baseline
    jvirt_barray_ptr arrays[1];
    arrays[0] = (*cinfo.mem->request_virt_barray)(reinterpret_cast<j_common_ptr>(&cinfo),
                                                  JPOOL_IMAGE, TRUE, bw, bh, 1);
    jpeg_write_coefficients(&cinfo, arrays);  // realizes the arrays
    for (JDIMENSION by = 0; by < bh; ++by) {
      JBLOCKARRAY row = (*cinfo.mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(&cinfo),
                                                         arrays[0], by, 1, TRUE);
      for (JDIMENSION bx = 0; bx < bw; ++bx) {
        const Coefs& b = blocks[size_t{by} * bw + bx];
        for (int i = 0; i < 64; ++i) row[0][bx][i] = b[i];
      }
    }
    jpeg_finish_compress(&cinfo);
    out.assign(buffer, buffer + size);
  }
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
  return out;
}

std::array<uint16_t, 64> libjpeg_quant_table(int quality) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  cinfo.in_color_space = JCS_GRAYSCALE;
  cinfo.input_components = 1;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, FALSE);
  std::array<uint16_t, 64> table{};
  for (int i = 0; i < 64; ++i) table[i] = cinfo.quant_tbl_ptrs[0]->quantval[i];
  jpeg_destroy_compress(&cinfo);
  return table;
}

std::vector<Coefs> coefficients_of(const std::vector<uint8_t>& jpeg) {
  jpeg_decompress_struct cinfo{};
  ErrorManager err{};
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  std::vector<Coefs> blocks;
  if (setjmp(err.escape) == 0) {
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
    jpeg_read_header(&cinfo, TRUE);
    jvirt_barray_ptr* arrays = jpeg_read_coefficients(&cinfo);
    const jpeg_component_info& comp = cinfo.comp_info[0];
    for (JDIMENSION by = 0; by < comp.height_in_blocks; ++by) {
      JBLOCKARRAY row = (*cinfo.mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(&cinfo),
                                                         arrays[0], by, 1, FALSE);
      for (JDIMENSION bx = 0; bx < comp.width_in_blocks; ++bx) {
        Coefs b{};
        for (int i = 0; i < 64; ++i) b[i] = row[0][bx][i];
        blocks.push_back(b);
      }
    }
    jpeg_finish_decompress(&cinfo);
  } else {
    blocks.clear();
  }
  jpeg_destroy_decompress(&cinfo);
  return blocks;
}

void write_pgm(const std::filesystem::path& path, const GrayImage& image) {
  std::ofstream f(path, std::ios::binary);
  f << "P5\n" << image.width << " " << image.height << "\n255\n";
  f.write(reinterpret_cast<const char*>(image.pixels.data()),
          static_cast<std::streamsize>(image.pixels.size()));
}

std::vector<uint8_t> run_cjpeg(const std::filesystem::path& pgm, int quality) {
  const std::filesystem::path jpg = pgm.string() + ".q" + std::to_string(quality) + ".jpg";
  std::ostringstream cmd;
  cmd << TANDEM_CJPEG << " -dct int -quality " << quality << " -outfile '" << jpg.string() << "' '"
      << pgm.string() << "'";
  if (std::system(cmd.str().c_str()) != 0) return {};
  std::ifstream f(jpg, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tandem-rtl-XXXXXX").string();
  if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

}  // namespace tandem::testing
