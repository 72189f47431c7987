// The C API of the kernels' high-level calls (tandem_sobel, tandem_matmul, tandem_dct_quant,
// tandem_priority_queue) and of the call counters: argument checks with a message each, then
// client/calls.hpp.
#include <algorithm>
#include <cstring>
#include <string>

#include "client/c_api_internal.hpp"
#include "client/calls.hpp"
#include "funcs/kernels.hpp"
#include "tandem/tandem.h"

namespace {

using tandem::Status;
using tandem::client::capi::fail;
using tandem::client::capi::runtime_of;

tandem_status_t finish(Status s, const char* call) {
  if (s == Status::ok) return TANDEM_OK;
  return fail(s, std::string(call) + (s == Status::invalid_argument
                                          ? ": arguments refused (sizes, alignment or overlapping buffers)"
                                          : " failed"));
}

}  // namespace

extern "C" {

tandem_status_t tandem_sobel(tandem_runtime_t* r, const uint8_t* image, uint8_t* out, uint32_t width, uint32_t height) {
  auto* rt = runtime_of(r);
  const bool empty = width == 0 || height == 0;
  if (rt == nullptr || (!empty && (image == nullptr || out == nullptr))) {
    return fail(Status::invalid_argument, "tandem_sobel: null runtime, image or output");
  }
  if (width > tandem::funcs::kernels::kSobelMaxSide || height > tandem::funcs::kernels::kSobelMaxSide) {
    return fail(Status::invalid_argument, "tandem_sobel: width and height must be at most 2^20");
  }
  return finish(tandem::client::sobel(*rt, image, out, width, height), "tandem_sobel");
}

tandem_status_t tandem_matmul(tandem_runtime_t* r, const int16_t* a, const int16_t* b, int32_t* c, uint32_t m,
                              uint32_t k, uint32_t n) {
  auto* rt = runtime_of(r);
  const bool writes = m > 0 && n > 0;
  if (rt == nullptr || (writes && c == nullptr) || (writes && k > 0 && (a == nullptr || b == nullptr))) {
    return fail(Status::invalid_argument, "tandem_matmul: null runtime or matrix");
  }
  constexpr uint64_t kMax = tandem::funcs::kernels::kMatmulMaxDim;
  if (m > kMax || k > kMax || n > kMax) {
    return fail(Status::invalid_argument, "tandem_matmul: m, k and n must be at most 65535");
  }
  return finish(tandem::client::matmul(*rt, a, b, c, m, k, n), "tandem_matmul");
}

tandem_status_t tandem_dct_quant(tandem_runtime_t* r, uint32_t mode, const void* input, int16_t* output, size_t blocks,
                                 const uint16_t* table) {
  auto* rt = runtime_of(r);
  if (rt == nullptr) return fail(Status::invalid_argument, "tandem_dct_quant: null runtime");
  if (mode < TANDEM_DCT_MODE_DCT || mode > TANDEM_DCT_MODE_DCT_QUANTIZE) {
    return fail(Status::invalid_argument, "tandem_dct_quant: unknown mode " + std::to_string(mode) +
                                              " (TANDEM_DCT_MODE_DCT, _QUANTIZE or _DCT_QUANTIZE)");
  }
  if (blocks > tandem::funcs::kernels::kDctMaxBlocks) {
    return fail(Status::invalid_argument, "tandem_dct_quant: more than 2^32 - 1 blocks");
  }
  if (blocks > 0 && (input == nullptr || output == nullptr)) {
    return fail(Status::invalid_argument, "tandem_dct_quant: null input or output");
  }
  if (mode != TANDEM_DCT_MODE_DCT) {
    if (table == nullptr) return fail(Status::invalid_argument, "tandem_dct_quant: this mode needs a quantization table");
    const uint16_t* bad = std::find_if(table, table + 64, [](uint16_t q) { return q < 1 || q > 32767; });
    if (bad != table + 64) {
      return fail(Status::invalid_argument, "tandem_dct_quant: table entry " + std::to_string(bad - table) + " is " +
                                                std::to_string(*bad) + " (must be 1..32767)");
    }
  }
  return finish(tandem::client::dct_quant(*rt, mode, input, output, blocks, table), "tandem_dct_quant");
}

tandem_status_t tandem_priority_queue(tandem_runtime_t* r, const uint64_t* commands, uint64_t* responses, size_t count,
                                      uint64_t* remaining) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || (count > 0 && (commands == nullptr || responses == nullptr))) {
    return fail(Status::invalid_argument, "tandem_priority_queue: null runtime, commands or responses");
  }
  if (count > tandem::funcs::kernels::kPqMaxCommands) {
    return fail(Status::invalid_argument, "tandem_priority_queue: more than 2^24 commands");
  }
  uint64_t left = 0;
  const tandem_status_t s = finish(tandem::client::priority_queue(*rt, commands, responses, count, left),
                                   "tandem_priority_queue");
  if (s == TANDEM_OK && remaining != nullptr) *remaining = left;
  return s;
}

tandem_status_t tandem_get_call_stats(tandem_runtime_t* r, tandem_call_stats_t* stats, size_t stats_size) {
  auto* rt = runtime_of(r);
  if (rt == nullptr || stats == nullptr) return fail(Status::invalid_argument, "tandem_get_call_stats: null argument");
  const tandem::client::CallStats& s = rt->stats();
  constexpr auto relaxed = std::memory_order_relaxed;
  tandem_call_stats_t all{};
  all.calls = s.calls.load(relaxed);
  all.sw_calls = s.sw_calls.load(relaxed);
  all.accelerated_calls = s.accelerated_calls.load(relaxed);
  all.hw_jobs = s.hw_jobs.load(relaxed);
  all.hw_units = s.hw_units.load(relaxed);
  all.sw_units = s.sw_units.load(relaxed);
  all.demand_jobs = s.demand_jobs.load(relaxed);
  all.fallbacks = s.fallbacks.load(relaxed);
  // A caller built against an older header knows a prefix of the struct.
  std::memcpy(stats, &all, std::min(stats_size, sizeof all));
  return TANDEM_OK;
}

}  // extern "C"
