#include "devices/rtl/rtl_jobs.hpp"

#include <cstring>

namespace tandem::devices::rtl {
namespace {

template <class T>
void put_le(std::vector<uint8_t>& bytes, size_t at, T value) {
  using U = std::make_unsigned_t<T>;
  const U u = static_cast<U>(value);
  for (size_t i = 0; i < sizeof(T); ++i) bytes[at + i] = static_cast<uint8_t>(u >> (8 * i));
}

template <class T>
T get_le(std::span<const uint8_t> bytes, size_t at) {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (size_t i = 0; i < sizeof(T); ++i) u = static_cast<U>(u | (U{bytes[at + i]} << (8 * i)));
  return static_cast<T>(u);
}

size_t round_up(size_t v, size_t to) {
  return (v + to - 1) / to * to;
}

void append_table(std::vector<uint8_t>& bytes, const QuantValues& table) {
  const size_t at = bytes.size();
  bytes.resize(at + 128);
  for (size_t i = 0; i < 64; ++i) put_le<uint16_t>(bytes, at + 2 * i, table[i]);
}

RtlJob sample_blocks_job(DctMode mode, std::span<const SampleBlock8x8> blocks,
                         const QuantValues* table) {
  RtlJob job;
  job.args = {static_cast<uint32_t>(mode), static_cast<uint32_t>(blocks.size())};
  if (table != nullptr) append_table(job.input, *table);
  for (const auto& b : blocks) job.input.insert(job.input.end(), b.begin(), b.end());
  job.output_bytes = blocks.size() * 128;
  return job;
}

}  // namespace

RtlJob accumulate_job(std::span<const int32_t> values) {
  RtlJob job;
  job.args = {static_cast<uint32_t>(values.size())};
  job.input.resize(values.size() * 4);
  for (size_t i = 0; i < values.size(); ++i) put_le<int32_t>(job.input, 4 * i, values[i]);
  return job;
}

Result<RtlJob> sobel_job(std::span<const uint8_t> pixels, uint32_t width, uint32_t height,
                         uint32_t lanes) {
  if (lanes == 0 || pixels.size() != size_t{width} * height) {
    return {Status::invalid_argument, "sobel: pixel count differs from width * height"};
  }
  RtlJob job;
  job.args = {width, height};
  const size_t stride = round_up(width, lanes);
  job.input.assign(stride * height, 0);
  for (uint32_t r = 0; r < height; ++r) {
    std::memcpy(job.input.data() + r * stride, pixels.data() + size_t{r} * width, width);
  }
  job.output_bytes = stride * height;
  return job;
}

Status sobel_unpack(const RtlResult& r, uint32_t width, uint32_t height, uint32_t lanes,
                    std::span<uint8_t> out) {
  const size_t stride = lanes == 0 ? 0 : round_up(width, lanes);
  if (out.size() != size_t{width} * height || r.output.size() != stride * height) {
    return Status::invalid_argument;
  }
  for (uint32_t row = 0; row < height; ++row) {
    std::memcpy(out.data() + size_t{row} * width, r.output.data() + row * stride, width);
  }
  return Status::ok;
}

Result<RtlJob> matmul_job(std::span<const int16_t> a, std::span<const int16_t> b, uint32_t m,
                          uint32_t k, uint32_t n) {
  if (a.size() != size_t{m} * k || b.size() != size_t{k} * n) {
    return {Status::invalid_argument, "matmul: matrix sizes differ from m, k, n"};
  }
  RtlJob job;
  job.args = {m, k, n};
  if (m == 0 || n == 0) return job;  // empty result: no data either way
  const size_t b_stride = round_up(n, 4) * 2, a_stride = round_up(k, 4) * 2;
  job.input.assign(k * b_stride + m * a_stride, 0);
  for (uint32_t x = 0; x < k; ++x) {
    for (uint32_t j = 0; j < n; ++j)
      put_le<int16_t>(job.input, x * b_stride + 2 * j, b[size_t{x} * n + j]);
  }
  const size_t a_base = k * b_stride;
  for (uint32_t i = 0; i < m; ++i) {
    for (uint32_t x = 0; x < k; ++x) {
      put_le<int16_t>(job.input, a_base + i * a_stride + 2 * x, a[size_t{i} * k + x]);
    }
  }
  job.output_bytes = size_t{m} * round_up(n, 2) * 4;
  return job;
}

Status matmul_unpack(const RtlResult& r, uint32_t m, uint32_t n, std::span<int32_t> c) {
  const size_t stride = round_up(n, 2) * 4;
  if (c.size() != size_t{m} * n || r.output.size() != (n == 0 ? 0 : m * stride)) {
    return Status::invalid_argument;
  }
  for (uint32_t i = 0; i < m; ++i) {
    for (uint32_t j = 0; j < n; ++j)
      c[size_t{i} * n + j] = get_le<int32_t>(r.output, i * stride + 4 * j);
  }
  return Status::ok;
}

RtlJob dct_job(std::span<const SampleBlock8x8> blocks) {
  return sample_blocks_job(DctMode::dct, blocks, nullptr);
}

RtlJob dct_quantize_job(std::span<const SampleBlock8x8> blocks, const QuantValues& table) {
  return sample_blocks_job(DctMode::dct_quantize, blocks, &table);
}

RtlJob quantize_job(std::span<const CoefBlock8x8> coefs, const QuantValues& table) {
  RtlJob job;
  job.args = {static_cast<uint32_t>(DctMode::quantize), static_cast<uint32_t>(coefs.size())};
  append_table(job.input, table);
  const size_t base = job.input.size();
  job.input.resize(base + coefs.size() * 128);
  for (size_t b = 0; b < coefs.size(); ++b) {
    for (size_t i = 0; i < 64; ++i) put_le<int16_t>(job.input, base + b * 128 + 2 * i, coefs[b][i]);
  }
  job.output_bytes = coefs.size() * 128;
  return job;
}

std::vector<CoefBlock8x8> coef_blocks(const RtlResult& r) {
  std::vector<CoefBlock8x8> blocks(r.output.size() / 128);
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (size_t i = 0; i < 64; ++i) blocks[b][i] = get_le<int16_t>(r.output, b * 128 + 2 * i);
  }
  return blocks;
}

uint64_t pq_command_word(uint8_t opcode, uint32_t handle, uint8_t priority, bool at_head,
                         bool highest) {
  return uint64_t{handle} | (uint64_t{priority} << 32) | (uint64_t{at_head} << 40) |
         (uint64_t{highest} << 41) | (uint64_t{opcode} << 56);
}

PqResponseWord pq_response(uint64_t word) {
  return PqResponseWord{.handle = static_cast<uint32_t>(word),
                        .priority = static_cast<uint8_t>(word >> 32),
                        .ok = ((word >> 40) & 1) != 0,
                        .occupancy = static_cast<uint16_t>(word >> 48)};
}

RtlJob pq_job(std::span<const uint64_t> commands, bool clear_first) {
  RtlJob job;
  job.args = {static_cast<uint32_t>(commands.size()), clear_first ? 1u : 0u};
  job.input.resize(commands.size() * 8);
  for (size_t i = 0; i < commands.size(); ++i) put_le<uint64_t>(job.input, 8 * i, commands[i]);
  job.output_bytes = commands.size() * 8;
  return job;
}

std::vector<PqResponseWord> pq_responses(const RtlResult& r) {
  std::vector<PqResponseWord> out(r.output.size() / 8);
  for (size_t i = 0; i < out.size(); ++i) out[i] = pq_response(get_le<uint64_t>(r.output, 8 * i));
  return out;
}

}  // namespace tandem::devices::rtl
