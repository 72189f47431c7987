#include "client/calls.hpp"

#include "funcs/kernels.hpp"

namespace tandem::client {

Status run_catalog_call(Runtime& runtime, uint16_t function, std::span<const uint64_t> args, int64_t& value,
                        CallReport* report) {
  const funcs::FunctionInfo* fn = funcs::find_function(function);
  if (fn == nullptr || fn->describe == nullptr) return Status::unknown_function;
  funcs::Call call;
  funcs::BufferList buffers;
  if (Status s = funcs::describe_call(*fn, args, call, buffers); s != Status::ok) return s;
  for (uint32_t i = 0; i < buffers.count; ++i) {
    if (args[buffers.items[i].arg] == 0) return Status::invalid_argument;  // a null buffer with bytes to move
  }
  // The caller's pointers are this process's addresses: the software side uses them as they are, and
  // the runtime translates them for the accelerators (or runs the call in software where it cannot).
  for (uint32_t i = 0; i < buffers.count; ++i) call.buffers[i] = reinterpret_cast<void*>(args[buffers.items[i].arg]);
  return runtime.run(*fn, call, value, report);
}

namespace {

uint64_t word(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

}  // namespace

Status sobel(Runtime& runtime, const uint8_t* image, uint8_t* out, uint32_t width, uint32_t height,
             CallReport* report) {
  const uint64_t args[4] = {word(image), word(out), width, height};
  int64_t value = 0;
  return run_catalog_call(runtime, TANDEM_FN_SOBEL, args, value, report);
}

Status matmul(Runtime& runtime, const int16_t* a, const int16_t* b, int32_t* c, uint32_t m, uint32_t k, uint32_t n,
              CallReport* report) {
  if (m > funcs::kernels::kMatmulMaxDim || k > funcs::kernels::kMatmulMaxDim || n > funcs::kernels::kMatmulMaxDim) {
    return Status::invalid_argument;
  }
  const uint64_t args[4] = {word(a), word(b), word(c), TANDEM_MATMUL_DIMS(m, k, n)};
  int64_t value = 0;
  return run_catalog_call(runtime, TANDEM_FN_MATMUL, args, value, report);
}

Status dct_quant(Runtime& runtime, uint32_t mode, const void* input, int16_t* output, uint64_t blocks,
                 const uint16_t* table, CallReport* report) {
  if (blocks > funcs::kernels::kDctMaxBlocks) return Status::invalid_argument;
  const bool quantizes = mode == TANDEM_DCT_MODE_QUANTIZE || mode == TANDEM_DCT_MODE_DCT_QUANTIZE;
  // Checked here once rather than by every part of a split call (each would refuse alone).
  if (quantizes && (table == nullptr || !funcs::kernels::valid_quant_table(table))) return Status::invalid_argument;
  const uint64_t args[4] = {word(input), word(output), TANDEM_DCT_ARG(blocks, mode), word(table)};
  int64_t value = 0;
  Status s = run_catalog_call(runtime, TANDEM_FN_DCT_QUANT, std::span(args, quantizes ? 4 : 3), value, report);
  // A part that saw an invalid table returns 1; the table was valid when checked, so it changed meanwhile.
  return s == Status::ok && value != 0 ? Status::invalid_argument : s;
}

Status priority_queue(Runtime& runtime, const uint64_t* commands, uint64_t* responses, uint64_t count,
                      uint64_t& remaining, CallReport* report) {
  const uint64_t args[3] = {word(commands), word(responses), count};
  int64_t value = 0;
  Status s = run_catalog_call(runtime, TANDEM_FN_PRIORITY_QUEUE, args, value, report);
  remaining = s == Status::ok ? static_cast<uint64_t>(value) : 0;
  return s;
}

}  // namespace tandem::client
