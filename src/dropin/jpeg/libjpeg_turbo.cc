#include "dropin/jpeg/libjpeg_turbo.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include <jerror.h>

namespace tandem::dropin::jpeg {

namespace {

constexpr const char* kAbiVersion = "LIBJPEG_6.2";  // the symbol version of the jpeg62 ABI

// The next definition of `name` after this object, of the jpeg62 ABI if the library versions its symbols.
void* next_symbol(const char* name) {
  void* p = dlvsym(RTLD_NEXT, name, kAbiVersion);
  return p != nullptr ? p : dlsym(RTLD_NEXT, name);
}

template <class Fn>
void resolve(Fn& out, const char* name) {
  out = reinterpret_cast<Fn>(next_symbol(name));
  if (out == nullptr) {
    // Our jpeg_* symbols were bound, so a libjpeg was expected after us; without it nothing can proceed.
    std::fprintf(stderr, "tandem_jpeg: no libjpeg defines %s after libtandem_jpeg.so; cannot continue\n", name);
    std::abort();
  }
}

Library find_library() {
  Library lib;
  resolve(lib.start_compress, "jpeg_start_compress");
  resolve(lib.destroy_compress, "jpeg_destroy_compress");
  resolve(lib.destroy, "jpeg_destroy");
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(lib.start_compress), &info) == 0 || info.dli_fname == nullptr) {
    lib.why_not = "cannot tell which library defines jpeg_start_compress";
    return lib;
  }
  lib.path = info.dli_fname;
  lib.base = info.dli_fbase;
  const std::string_view file = std::string_view(lib.path).substr(lib.path.rfind('/') + 1);
  if (!file.starts_with("libjpeg.so.62")) {
    lib.why_not = lib.path + " is not libjpeg.so.62";
    return lib;
  }
  // The library's own message table says who made it, which ABI it speaks and, by its length, which
  // release series: the same as the headers this shim was compiled with, or not recognised.
  auto std_error = reinterpret_cast<jpeg_error_mgr* (*)(jpeg_error_mgr*)>(next_symbol("jpeg_std_error"));
  if (std_error == nullptr) {
    lib.why_not = lib.path + " has no jpeg_std_error";
    return lib;
  }
  jpeg_error_mgr err{};
  std_error(&err);
  const auto message = [&err](int code) -> std::string_view {
    return err.jpeg_message_table != nullptr && code <= err.last_jpeg_message && err.jpeg_message_table[code] != nullptr
               ? std::string_view(err.jpeg_message_table[code])
               : std::string_view();
  };
  if (message(JMSG_COPYRIGHT).find("libjpeg-turbo") == std::string_view::npos) {
    lib.why_not = lib.path + " is not libjpeg-turbo (copyright message: '" + std::string(message(JMSG_COPYRIGHT)) + "')";
  } else if (!message(JMSG_VERSION).starts_with("6b")) {
    lib.why_not = lib.path + " does not speak the jpeg62 ABI (version message '" + std::string(message(JMSG_VERSION)) + "')";
  } else if (err.last_jpeg_message != static_cast<int>(JMSG_LASTMSGCODE) - 1) {
    lib.why_not = lib.path + " is a libjpeg-turbo release this shim was not built for (" +
                  std::to_string(err.last_jpeg_message + 1) + " messages, expected " +
                  std::to_string(static_cast<int>(JMSG_LASTMSGCODE)) + ")";
  } else {
    lib.recognised = true;
  }
  return lib;
}

}  // namespace

const Library& library() {
  static std::once_flag once;
  static Library lib;
  std::call_once(once, [] { lib = find_library(); });
  return lib;
}

std::string unhandled_reason(j_compress_ptr cinfo, const Library& lib) {
  if (!lib.recognised) return lib.why_not;
  if (cinfo->dct_method != JDCT_ISLOW) {
    return cinfo->dct_method == JDCT_FLOAT ? "the float DCT (-dct float)" : "the fast integer DCT (-dct fast)";
  }
  if (cinfo->data_precision != 8) return std::to_string(cinfo->data_precision) + "-bit samples";
  const ForwardDctHead* head = fdct_head(cinfo);
  if (head == nullptr || head->forward_DCT == nullptr) return "no forward-DCT object";
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(head->forward_DCT), &info) == 0 || info.dli_fbase != lib.base) {
    return "a forward_DCT method outside " + lib.path;
  }
  if (cinfo->num_components < 1 || cinfo->num_components > MAX_COMPONENTS) return "an unusual number of components";
  for (int ci = 0; ci < cinfo->num_components; ++ci) {
    const jpeg_component_info& comp = cinfo->comp_info[ci];
    if (comp.component_index != ci || comp.v_samp_factor < 1 || comp.v_samp_factor > 4) {
      return "an unusual component layout";
    }
    if (comp.quant_tbl_no < 0 || comp.quant_tbl_no >= NUM_QUANT_TBLS || cinfo->quant_tbl_ptrs[comp.quant_tbl_no] == nullptr) {
      return "a missing quantization table";
    }
    for (UINT16 q : cinfo->quant_tbl_ptrs[comp.quant_tbl_no]->quantval) {
      if (q < 1 || q > kMaxExactQuant) {
        return "a quantization entry of " + std::to_string(q) + " (libjpeg-turbo divides by 8q in 16 bits)";
      }
    }
  }
  return "";
}

}  // namespace tandem::dropin::jpeg
