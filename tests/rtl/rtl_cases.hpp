// Calls of the RTL-backed catalog functions with their data, built from a seed, so that two equal
// cases can run on two paths (software, device, runtime) and be compared byte for byte.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "funcs/function.hpp"
#include "funcs/ref/pq_ref.hpp"

namespace tandem::testing {

using funcs::Call;

inline uint64_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// One call's data, built from a seed, so that two equal cases can run on two paths and be compared.
// Buffers are 16-byte aligned (operator new), as the kernels' argument rules ask.
struct Case {
  uint16_t function = 0;
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<uint64_t> args;
  size_t output = SIZE_MAX;  // index of the output buffer; SIZE_MAX: none
  uint64_t workload = 0;

  uint8_t* add(size_t bytes, std::mt19937_64& rng) {
    buffers.emplace_back(bytes);
    for (auto& b : buffers.back()) b = static_cast<uint8_t>(rng());
    return buffers.back().data();
  }
  const std::vector<uint8_t>& out() const { return buffers.at(output); }
};

inline Case accumulate_case(uint64_t seed, uint64_t count) {
  std::mt19937_64 rng(seed);
  Case c;
  c.function = TANDEM_FN_ACCUMULATE;
  c.buffers.reserve(1);
  c.args = {address(c.add(count * 4, rng)), count};
  return c;
}

inline Case sobel_case(uint64_t seed, uint32_t width, uint32_t height) {
  std::mt19937_64 rng(seed);
  Case c;
  c.function = TANDEM_FN_SOBEL;
  c.buffers.reserve(2);
  const uint64_t in = address(c.add(size_t{width} * height, rng));
  const uint64_t out = address(c.add(size_t{width} * height, rng));
  c.args = {in, out, width, height};
  c.output = 1;
  return c;
}

inline Case matmul_case(uint64_t seed, uint32_t m, uint32_t k, uint32_t n) {
  std::mt19937_64 rng(seed);
  Case c;
  c.function = TANDEM_FN_MATMUL;
  c.buffers.reserve(3);
  const uint64_t a = address(c.add(size_t{m} * k * 2, rng));
  const uint64_t b = address(c.add(size_t{k} * n * 2, rng));
  const uint64_t out = address(c.add(size_t{m} * n * 4, rng));
  c.args = {a, b, out, TANDEM_MATMUL_DIMS(m, k, n)};
  c.output = 2;
  return c;
}

inline Case dct_case(uint64_t seed, uint32_t blocks, uint32_t mode, uint16_t bad_entry = 1) {
  std::mt19937_64 rng(seed);
  Case c;
  c.function = TANDEM_FN_DCT_QUANT;
  c.buffers.reserve(3);
  const uint64_t in = address(c.add(size_t{blocks} * (mode == TANDEM_DCT_MODE_QUANTIZE ? 128 : 64), rng));
  const uint64_t out = address(c.add(size_t{blocks} * 128, rng));
  uint8_t* table = c.add(128, rng);
  for (int i = 0; i < 64; ++i) {
    const uint16_t q = i == 5 ? bad_entry : static_cast<uint16_t>(1 + rng() % (i < 32 ? 255 : 32767));
    std::memcpy(table + 2 * i, &q, 2);
  }
  c.args = {in, out, TANDEM_DCT_ARG(blocks, mode), address(table)};
  c.output = 1;
  return c;
}

inline Case pq_case(uint64_t seed, uint32_t count) {
  std::mt19937_64 rng(seed);
  Case c;
  c.function = TANDEM_FN_PRIORITY_QUEUE;
  c.buffers.reserve(2);
  uint8_t* cmds = c.add(size_t{count} * 8, rng);
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t r = rng();
    // Mostly pushes and pops at the highest priority, over few priorities (many ties); some peeks,
    // unknown opcodes and reserved bits.
    const uint8_t op = r % 10 < 5 ? 1 : r % 10 < 8 ? 2 : r % 10 == 8 ? 3 : 9;
    uint64_t word = funcs::ref::encode_pq_command(
        {op, static_cast<uint32_t>(r >> 8), static_cast<uint8_t>((r >> 40) % 4 * 60), ((r >> 50) & 1) != 0,
         ((r >> 51) % 4) != 0});
    if (r % 61 == 0) word |= uint64_t{1} << 44;
    std::memcpy(cmds + 8 * i, &word, 8);
  }
  const uint64_t out = address(c.add(size_t{count} * 8, rng));
  c.args = {address(cmds), out, count};
  c.output = 1;
  return c;
}

// The call with its buffers at the addresses the arguments name (embedded mode).
inline Call call_of(Case& c) {
  Call call;
  funcs::BufferList buffers;
  const Status s = funcs::describe_call(*funcs::find_function(c.function), c.args, call, buffers);
  EXPECT_EQ(s, Status::ok);
  for (uint32_t i = 0; i < buffers.count; ++i) {
    call.buffers[i] = reinterpret_cast<void*>(static_cast<uintptr_t>(call.args[buffers.items[i].arg]));
  }
  c.workload = call.workload;
  return call;
}

inline int64_t run_software(Case& c) {
  const Call call = call_of(c);
  return funcs::run_sw(*funcs::find_function(c.function), call);
}

}  // namespace tandem::testing
