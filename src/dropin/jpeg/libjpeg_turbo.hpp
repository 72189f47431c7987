// What libtandem_jpeg.so knows about the libjpeg it is preloaded into: the real entry points it wraps,
// whether the library is the one whose internals it relies on, and whether one compression is a kind it
// can take over. Everything here reads public structures (jpeglib.h, jerror.h) or asks the dynamic
// linker; nothing of libjpeg-turbo's source is used.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include <jpeglib.h>

namespace tandem::dropin::jpeg {

// libjpeg's per-component forward DCT + quantization method (jpegint.h's jpeg_forward_dct::forward_DCT):
// blocks [start_col / 8, + num_blocks) of the 8 sample rows from start_row into coef_blocks.
using ForwardDctFn = void (*)(j_compress_ptr cinfo, jpeg_component_info* component, JSAMPARRAY samples,
                              JBLOCKROW coef_blocks, JDIMENSION start_row, JDIMENSION start_col, JDIMENSION num_blocks);

// The public head of libjpeg's forward-DCT object (jpegint.h, not installed): the methods the
// compressor calls through cinfo->fdct.
struct ForwardDctHead {
  void (*start_pass)(j_compress_ptr cinfo);
  ForwardDctFn forward_DCT;
};

inline ForwardDctHead* fdct_head(j_compress_ptr cinfo) { return reinterpret_cast<ForwardDctHead*>(cinfo->fdct); }

// The libjpeg behind this process's jpeg_* symbols (the next definition after ours, of the jpeg62 ABI).
struct Library {
  void (*start_compress)(j_compress_ptr, boolean) = nullptr;
  void (*destroy_compress)(j_compress_ptr) = nullptr;
  void (*destroy)(j_common_ptr) = nullptr;
  std::string path;            // the shared object that defines them
  const void* base = nullptr;  // its load address (a method inside it has the same one)
  // True only for libjpeg-turbo of the jpeg62 ABI with exactly the message table of the jpeglib.h/jerror.h
  // this shim was built with (the same release series): the library whose internals the shim relies on
  // (the forward-DCT object's head, forward_DCT's arguments, sample rows padded to whole blocks).
  bool recognised = false;
  std::string why_not;  // when not recognised
};

// Found once per process. The entry points are always set (the process could not have bound to our
// jpeg_* symbols otherwise); a process without them aborts with a message.
const Library& library();

// The quantization entries libjpeg-turbo's integer DCT divides by exactly: it keeps 8 * q in 16 bits.
inline constexpr unsigned kMaxExactQuant = 8191;

// Why this compression (just set up by jpeg_start_compress) cannot be taken over, or "" if it can:
// the islow DCT, 8-bit samples, a forward_DCT method of the recognised library, quantization tables
// present with entries up to kMaxExactQuant, at most 4 block rows per component in an MCU row.
std::string unhandled_reason(j_compress_ptr cinfo, const Library& lib);

}  // namespace tandem::dropin::jpeg
