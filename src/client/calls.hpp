// The high-level calls of the catalog's kernels (sobel, matmul, dct_quant, priority_queue) over the
// caller's own memory. Each describes its call exactly as a packet would carry it, then hands it to
// Runtime::run: the partitioner splits it between this thread and the accelerators (rows of an image,
// rows of C, runs of blocks; a priority-queue batch is never split) and the function's software
// reference runs whatever the accelerators do not. The C API (c_api_calls.cc) checks its arguments
// and turns these statuses into messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "client/runtime.hpp"

namespace tandem::client {

// One call of a catalog function: `args` are the argument words with addresses of this process; the
// function's description (FunctionInfo::describe) validates them and names the buffers. invalid_argument
// for arguments the function refuses.
Status run_catalog_call(Runtime& runtime, uint16_t function, std::span<const uint64_t> args, int64_t& value,
                        CallReport* report = nullptr);

// 3x3 Sobel edge magnitude of a width x height 8-bit image (docs/abi.md).
Status sobel(Runtime& runtime, const uint8_t* image, uint8_t* out, uint32_t width, uint32_t height,
             CallReport* report = nullptr);

// C (m x n, int32 modulo 2^32) = A (m x k) * B (k x n), int16, row-major. k = 0 writes zeros.
Status matmul(Runtime& runtime, const int16_t* a, const int16_t* b, int32_t* c, uint32_t m, uint32_t k, uint32_t n,
              CallReport* report = nullptr);

// JPEG forward DCT (libjpeg's islow) and/or quantization of `blocks` 8x8 blocks (TANDEM_DCT_MODE_*).
// The table must hold 64 entries in 1..32767 for the modes that quantize (invalid_argument otherwise,
// nothing written).
Status dct_quant(Runtime& runtime, uint32_t mode, const void* input, int16_t* output, uint64_t blocks,
                 const uint16_t* table, CallReport* report = nullptr);

// A batch of priority-queue commands on a queue that starts empty; `remaining` gets the entries left.
Status priority_queue(Runtime& runtime, const uint64_t* commands, uint64_t* responses, uint64_t count,
                      uint64_t& remaining, CallReport* report = nullptr);

}  // namespace tandem::client
