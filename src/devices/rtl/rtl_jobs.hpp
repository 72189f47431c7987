// Typed jobs for the RTL accelerators: lay the data out as each accelerator's stream expects it
// and decode what comes back. The layouts are documented in docs/rtl.md and in the Verilog.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "abi/status.hpp"
#include "devices/rtl/rtl_accelerator.hpp"

namespace tandem::devices::rtl {

// Sizes of the default builds (rtl/*/tandem_*.sv parameters).
inline constexpr uint32_t kSobelLanes = 16;
inline constexpr uint32_t kSobelMaxWidth = 1920;
inline constexpr uint32_t kSobelMaxHeight = 65535;
inline constexpr uint32_t kMatmulMaxDim = 100;
inline constexpr uint32_t kPqCapacity = 256;

// Return value of the accelerators that can refuse a job (sobel, matmul, dct_quant).
inline constexpr uint64_t kRetOk = 0;
inline constexpr uint64_t kRetBadArguments = 1;

// ---- accumulate: arg0 = count; two int32 per 64-bit beat; returns the int64 sum ----
RtlJob accumulate_job(std::span<const int32_t> values);
inline int64_t accumulate_sum(const RtlResult& r) {
  return static_cast<int64_t>(r.value);
}

// ---- sobel: arg0 = width, arg1 = height; rows start on beat boundaries ----
// `lanes` is the accelerator's pixels per beat (ports().in_beat_bytes).
Result<RtlJob> sobel_job(std::span<const uint8_t> pixels, uint32_t width, uint32_t height,
                         uint32_t lanes);
Status sobel_unpack(const RtlResult& r, uint32_t width, uint32_t height, uint32_t lanes,
                    std::span<uint8_t> out);

// ---- matmul: arg0..2 = m, k, n; B then A row-major int16, C row-major int32 ----
Result<RtlJob> matmul_job(std::span<const int16_t> a, std::span<const int16_t> b, uint32_t m,
                          uint32_t k, uint32_t n);
Status matmul_unpack(const RtlResult& r, uint32_t m, uint32_t n, std::span<int32_t> c);

// ---- dct_quant: arg0 = mode, arg1 = blocks ----
enum class DctMode : uint32_t { dct = 1, quantize = 2, dct_quantize = 3 };
using SampleBlock8x8 = std::array<uint8_t, 64>;  // row-major samples
using CoefBlock8x8 = std::array<int16_t, 64>;    // natural order
using QuantValues = std::array<uint16_t, 64>;    // natural order, 1..32767

RtlJob dct_job(std::span<const SampleBlock8x8> blocks);
RtlJob quantize_job(std::span<const CoefBlock8x8> coefs, const QuantValues& table);
RtlJob dct_quantize_job(std::span<const SampleBlock8x8> blocks, const QuantValues& table);
std::vector<CoefBlock8x8> coef_blocks(const RtlResult& r);

// ---- priority_queue: arg0 = commands, arg1 bit0 = clear first; one 64-bit word each way ----
enum class PqOpcode : uint8_t { push = 1, pop = 2, peek = 3 };
struct PqResponseWord {
  uint32_t handle = 0;
  uint8_t priority = 0;
  bool ok = false;
  uint16_t occupancy = 0;
};
uint64_t pq_command_word(uint8_t opcode, uint32_t handle, uint8_t priority, bool at_head,
                         bool highest);
PqResponseWord pq_response(uint64_t word);
RtlJob pq_job(std::span<const uint64_t> commands, bool clear_first);
std::vector<PqResponseWord> pq_responses(const RtlResult& r);

}  // namespace tandem::devices::rtl
