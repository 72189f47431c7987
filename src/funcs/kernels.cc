#include "funcs/kernels.hpp"


#include <algorithm>
#include <cstring>
#include <vector>

#include "funcs/dct_datapath.hpp"
#include "funcs/ref/dct_quant_ref.hpp"
#include "funcs/ref/matmul_ref.hpp"
#include "funcs/ref/pq_ref.hpp"
#include "funcs/ref/sobel_ref.hpp"
#include "base/clock.hpp"

namespace tandem::funcs::kernels {

namespace {

int64_t add(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
int64_t either(int64_t a, int64_t b) { return a | b; }

// Whether [a, a + la) and [b, b + lb) share a byte, without overflowing.
bool overlap(uint64_t a, uint64_t la, uint64_t b, uint64_t lb) {
  if (la == 0 || lb == 0) return false;
  return a <= b ? b - a < la : a - b < lb;
}

// The row a split point (in units) falls to: rounded up, so that the rule depends on the point only.
uint64_t row_at(uint64_t point, uint64_t units_per_row, uint64_t rows) {
  if (units_per_row == 0) return 0;
  return std::min(rows, point / units_per_row + (point % units_per_row != 0 ? 1 : 0));
}

template <class T>
T* at(void* base, uint64_t byte_offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + byte_offset);
}

// ---- sobel: args[0] input, args[1] output, args[2] width, args[3] rows | halo flags. Units: pixels.
constexpr uint64_t kSobelFlagMask = TANDEM_SOBEL_HALO_ABOVE | TANDEM_SOBEL_HALO_BELOW;

Status sobel_describe(std::span<const uint64_t> args, uint64_t& workload, BufferList& buffers) {
  const uint64_t width = args[2];
  if ((args[3] >> 32) & ~(kSobelFlagMask >> 32)) return Status::invalid_argument;
  const uint64_t rows = args[3] & 0xffffffffu;
  if (width > kSobelMaxSide || rows > kSobelMaxSide) return Status::invalid_argument;
  workload = width * rows;
  if (workload == 0) return Status::ok;
  const uint64_t in_rows = rows + ((args[3] & TANDEM_SOBEL_HALO_ABOVE) ? 1 : 0) +
                           ((args[3] & TANDEM_SOBEL_HALO_BELOW) ? 1 : 0);
  if (overlap(args[0], in_rows * width, args[1], workload)) return Status::invalid_argument;
  buffers.add(0, in_rows * width, false);
  buffers.add(1, workload, true);
  return Status::ok;
}

int64_t sobel_run(const Call& call, uint64_t begin, uint64_t end) {
  const SobelArgs a = sobel_args(call);
  if (a.width == 0 || a.rows == 0) return 0;
  const uint64_t r0 = row_at(begin, a.width, a.rows), r1 = row_at(end, a.width, a.rows);
  if (r0 >= r1) return 0;
  const auto* in = static_cast<const uint8_t*>(call.buffers[0]);
  (void)ref::sobel_rows({in, a.input_rows() * a.width}, static_cast<uint32_t>(a.width),
                        static_cast<uint32_t>(a.input_rows()), static_cast<uint32_t>(r0 + a.above),
                        static_cast<uint32_t>(r1 + a.above),
                        {at<uint8_t>(call.buffers[1], r0 * a.width), (r1 - r0) * a.width});
  return 0;
}

void sobel_slice(const Call& whole, uint64_t begin, uint64_t end, Call& part) {
  const SobelArgs a = sobel_args(whole);
  const uint64_t r0 = row_at(begin, a.width, a.rows), r1 = std::max(r0, row_at(end, a.width, a.rows));
  part = whole;
  part.arg_count = std::max<uint32_t>(whole.arg_count, 4);
  if (r0 == r1) {  // an empty part: nothing read or written
    part.args[3] = 0;
    part.workload = 0;
    return;
  }
  // A part's first row has a row above it unless it is the image's first row; likewise below.
  const uint32_t above = r0 > 0 ? 1 : a.above;
  const uint32_t below = r1 < a.rows ? 1 : a.below;
  const uint64_t first_input_row = r0 + a.above - above;  // in the whole call's input
  part.args[0] = whole.args[0] + first_input_row * a.width;
  part.args[1] = whole.args[1] + r0 * a.width;
  part.args[3] = (r1 - r0) | (above ? TANDEM_SOBEL_HALO_ABOVE : 0) | (below ? TANDEM_SOBEL_HALO_BELOW : 0);
  part.workload = (r1 - r0) * a.width;
  if (whole.buffers[0] != nullptr) part.buffers[0] = at<void>(whole.buffers[0], first_input_row * a.width);
  if (whole.buffers[1] != nullptr) part.buffers[1] = at<void>(whole.buffers[1], r0 * a.width);
}

// ---- matmul: args[0] A, args[1] B, args[2] C, args[3] m | k << 16 | n << 32. Units: MACs,
// counting k = 0 as one per element of C (zeros are still written).
Status matmul_describe(std::span<const uint64_t> args, uint64_t& workload, BufferList& buffers) {
  if ((args[3] >> 48) != 0) return Status::invalid_argument;
  const uint64_t m = args[3] & 0xffff, k = (args[3] >> 16) & 0xffff, n = (args[3] >> 32) & 0xffff;
  workload = m * n * std::max<uint64_t>(k, 1);
  if (workload == 0) return Status::ok;
  const uint64_t a_bytes = m * k * 2, b_bytes = k * n * 2, c_bytes = m * n * 4;
  if (args[2] % 4 != 0 || (k > 0 && (args[0] % 2 != 0 || args[1] % 2 != 0))) return Status::invalid_argument;
  if (overlap(args[2], c_bytes, args[0], a_bytes) || overlap(args[2], c_bytes, args[1], b_bytes)) {
    return Status::invalid_argument;
  }
  if (k > 0) {
    buffers.add(0, a_bytes, false);
    buffers.add(1, b_bytes, false);
  }
  buffers.add(2, c_bytes, true);
  return Status::ok;
}

int64_t matmul_run(const Call& call, uint64_t begin, uint64_t end) {
  const MatmulArgs a = matmul_args(call);
  const uint64_t per_row = a.n * std::max<uint64_t>(a.k, 1);
  const uint64_t r0 = row_at(begin, per_row, a.m), r1 = row_at(end, per_row, a.m);
  if (r0 >= r1 || a.n == 0) return 0;
  int32_t* c = at<int32_t>(call.buffers[matmul_c_buffer(a)], r0 * a.n * 4);
  if (a.k == 0) {
    std::fill(c, c + (r1 - r0) * a.n, 0);
    return 0;
  }
  const auto* mat_a = at<const int16_t>(call.buffers[0], r0 * a.k * 2);
  const auto* mat_b = static_cast<const int16_t*>(call.buffers[1]);
  (void)ref::matmul({mat_a, (r1 - r0) * a.k}, {mat_b, a.k * a.n}, {c, (r1 - r0) * a.n},
                    static_cast<uint32_t>(r1 - r0), static_cast<uint32_t>(a.k), static_cast<uint32_t>(a.n));
  return 0;
}

void matmul_slice(const Call& whole, uint64_t begin, uint64_t end, Call& part) {
  const MatmulArgs a = matmul_args(whole);
  const uint64_t per_row = a.n * std::max<uint64_t>(a.k, 1);
  const uint64_t r0 = row_at(begin, per_row, a.m), r1 = std::max(r0, row_at(end, per_row, a.m));
  part = whole;
  part.workload = (r1 - r0) * per_row;
  part.args[3] = TANDEM_MATMUL_DIMS(r1 - r0, a.k, a.n);
  part.args[0] = whole.args[0] + r0 * a.k * 2;
  part.args[2] = whole.args[2] + r0 * a.n * 4;
  if (a.k > 0 && whole.buffers[0] != nullptr) part.buffers[0] = at<void>(whole.buffers[0], r0 * a.k * 2);
  const uint32_t c = matmul_c_buffer(a);
  if (whole.buffers[c] != nullptr) part.buffers[c] = at<void>(whole.buffers[c], r0 * a.n * 4);
}

// ---- dct_quant: args[0] input, args[1] output, args[2] blocks | mode << 32, args[3] quantization
// table (modes 2, 3). Units: 8x8 blocks. Returns 0, or 1 for a table entry outside 1..32767.
Status dct_describe(std::span<const uint64_t> args, uint64_t& workload, BufferList& buffers) {
  const uint64_t blocks = args[2] & 0xffffffffu, mode = args[2] >> 32;
  if (mode < TANDEM_DCT_MODE_DCT || mode > TANDEM_DCT_MODE_DCT_QUANTIZE) return Status::invalid_argument;
  const bool table = mode != TANDEM_DCT_MODE_DCT;
  if (table && args.size() < 4) return Status::invalid_argument;
  workload = blocks;
  if (blocks == 0) return Status::ok;
  const uint64_t in_bytes = blocks * (mode == TANDEM_DCT_MODE_QUANTIZE ? 128 : 64), out_bytes = blocks * 128;
  if (args[1] % 2 != 0 || (mode == TANDEM_DCT_MODE_QUANTIZE && args[0] % 2 != 0) || (table && args[3] % 2 != 0)) {
    return Status::invalid_argument;
  }
  if (overlap(args[1], out_bytes, args[0], in_bytes) || (table && overlap(args[1], out_bytes, args[3], 128))) {
    return Status::invalid_argument;
  }
  buffers.add(0, in_bytes, false);
  buffers.add(1, out_bytes, true);
  if (table) buffers.add(3, 128, false);
  return Status::ok;
}

int64_t dct_run(const Call& call, uint64_t begin, uint64_t end) {
  const DctArgs a = dct_args(call);
  end = std::min(end, a.blocks);
  if (begin >= end) return 0;
  ref::QuantTable table{};
  if (a.uses_table()) {
    std::memcpy(table.data(), call.buffers[2], sizeof table);
    if (!valid_quant_table(table.data())) return 1;
  }
  const auto* in = static_cast<const uint8_t*>(call.buffers[0]);
  auto* out = static_cast<int16_t*>(call.buffers[1]);
  for (uint64_t b = begin; b < end; ++b) {
    ref::CoefBlock coefs;
    if (a.mode == TANDEM_DCT_MODE_QUANTIZE) {
      std::memcpy(coefs.data(), in + b * 128, 128);
    } else {
      ref::SampleBlock samples;
      std::memcpy(samples.data(), in + b * 64, 64);
      coefs = ref::fdct_islow(samples);
    }
    if (a.uses_table()) coefs = ref::quantize(coefs, table);
    std::memcpy(out + b * 64, coefs.data(), 128);
  }
  return 0;
}

// The emulated accelerator's result: the same blocks through the fast datapath (dct_datapath.hpp), so
// that computing them fits in the modelled time of the RTL accelerator.
int64_t dct_accel(const Call& call, uint64_t begin, uint64_t end) {
  const DctArgs a = dct_args(call);
  end = std::min(end, a.blocks);
  if (begin >= end) return 0;
  QuantReciprocals table;
  if (a.uses_table()) {
    uint16_t entries[64];
    std::memcpy(entries, call.buffers[2], sizeof entries);
    if (!valid_quant_table(entries)) return 1;
    table = quant_reciprocals(entries);
  }
  const auto* in = static_cast<const uint8_t*>(call.buffers[0]);
  auto* out = static_cast<uint8_t*>(call.buffers[1]);
  for (uint64_t b = begin; b < end; ++b) {
    int16_t coefs[64];
    if (a.mode == TANDEM_DCT_MODE_QUANTIZE) {
      std::memcpy(coefs, in + b * 128, sizeof coefs);
    } else {
      fdct_islow_block(in + b * 64, coefs);
    }
    if (a.uses_table()) quantize_block(coefs, table, coefs);
    std::memcpy(out + b * 128, coefs, sizeof coefs);
  }
  return 0;
}

void dct_slice(const Call& whole, uint64_t begin, uint64_t end, Call& part) {
  const DctArgs a = dct_args(whole);
  part = whole;
  part.workload = end - begin;
  part.args[0] = whole.args[0] + begin * a.input_block_bytes();
  part.args[1] = whole.args[1] + begin * 128;
  part.args[2] = TANDEM_DCT_ARG(end - begin, a.mode);
  if (whole.buffers[0] != nullptr) part.buffers[0] = at<void>(whole.buffers[0], begin * a.input_block_bytes());
  if (whole.buffers[1] != nullptr) part.buffers[1] = at<void>(whole.buffers[1], begin * 128);
}

// ---- priority_queue: args[0] command words, args[1] response words, args[2] count. Units:
// commands. Each call starts from an empty queue (slots are shared: no state leaks between calls);
// returns the entries queued at the end.
Status pq_describe(std::span<const uint64_t> args, uint64_t& workload, BufferList& buffers) {
  const uint64_t count = args[2];
  if (count > kPqMaxCommands) return Status::invalid_argument;
  workload = count;
  if (count == 0) return Status::ok;
  if (args[0] % 8 != 0 || args[1] % 8 != 0 || overlap(args[0], count * 8, args[1], count * 8)) {
    return Status::invalid_argument;
  }
  buffers.add(0, count * 8, false);
  buffers.add(1, count * 8, true);
  return Status::ok;
}

int64_t pq_run(const Call& call, uint64_t begin, uint64_t end) {
  ref::PriorityQueueRef queue(ref::kPqRefCapacity);
  const auto* commands = static_cast<const uint64_t*>(call.buffers[0]);
  auto* responses = static_cast<uint64_t*>(call.buffers[1]);
  for (uint64_t i = begin; i < end; ++i) {
    responses[i] = ref::encode_pq_response(queue.execute(ref::decode_pq_command(commands[i])));
  }
  return static_cast<int64_t>(queue.size());
}

// Never called with a proper sub-range (the granularity forbids one): the whole call.
void pq_slice(const Call& whole, uint64_t, uint64_t, Call& part) { part = whole; }

// ---- software rates for funcs::software_throughput ----
double best_rate(const FunctionInfo& fn, const Call& call) {
  double best = 0;
  volatile int64_t sink = 0;
  for (int run = 0; run < 5; ++run) {
    const int64_t t0 = tandem::now_ns();
    sink = sink + fn.run_sw(call, 0, call.workload);
    const int64_t t1 = tandem::now_ns();
    if (t1 > t0) best = std::max(best, static_cast<double>(call.workload) * 1e9 / static_cast<double>(t1 - t0));
  }
  return best;
}

}  // namespace

SobelArgs sobel_args(const Call& call) {
  SobelArgs a;
  a.width = call.args[2];
  a.rows = call.args[3] & 0xffffffffu;
  a.above = (call.args[3] & TANDEM_SOBEL_HALO_ABOVE) ? 1 : 0;
  a.below = (call.args[3] & TANDEM_SOBEL_HALO_BELOW) ? 1 : 0;
  return a;
}

MatmulArgs matmul_args(const Call& call) {
  return MatmulArgs{call.args[3] & 0xffff, (call.args[3] >> 16) & 0xffff, (call.args[3] >> 32) & 0xffff};
}

DctArgs dct_args(const Call& call) {
  return DctArgs{call.args[2] & 0xffffffffu, static_cast<uint32_t>(call.args[2] >> 32)};
}

bool valid_quant_table(const uint16_t* table) {
  return std::all_of(table, table + 64, [](uint16_t q) { return q >= 1 && q <= 32767; });
}

// Split granularity 1 (a row or block boundary is found from the point); priority_queue: whole.
const FunctionInfo kSobel{TANDEM_FN_SOBEL, "sobel", "pixels", 4, 4, 1, sobel_describe, sobel_run, sobel_run,
                          add, sobel_slice, 8.0, 1e-6, 1e-3};
const FunctionInfo kMatmul{TANDEM_FN_MATMUL, "matmul", "MACs", 4, 4, 1, matmul_describe, matmul_run, matmul_run,
                           add, matmul_slice, 4.0, 2e-6, 1e-3};
// A part returns 1, writing nothing, when the table is invalid.
const FunctionInfo kDctQuant{TANDEM_FN_DCT_QUANT, "dct_quant", "blocks", 3, 4, 1, dct_describe, dct_run, dct_accel,
                             either, dct_slice, 8.0, 1e-6, 1e-3, false, false,
                             [](int64_t value) { return value == 0; }};
const FunctionInfo kPriorityQueue{TANDEM_FN_PRIORITY_QUEUE, "priority_queue", "commands", 3, 3, kNotSplittable,
                                  pq_describe, pq_run, pq_run, add, pq_slice, 2.0, 1e-6, 1e-3};

double measure_software_throughput(uint16_t function) {
  Call call;
  call.function = function;
  call.arg_count = 4;
  switch (function) {
    case TANDEM_FN_SOBEL: {
      constexpr uint64_t kSide = 256;
      std::vector<uint8_t> in(kSide * kSide), out(in.size());
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
      call.args[2] = kSide;
      call.args[3] = kSide;
      call.workload = kSide * kSide;
      call.buffers = {in.data(), out.data()};
      return best_rate(kSobel, call);
    }
    case TANDEM_FN_MATMUL: {
      constexpr uint64_t kDim = 64;
      std::vector<int16_t> a(kDim * kDim), b(kDim * kDim);
      std::vector<int32_t> c(kDim * kDim);
      for (size_t i = 0; i < a.size(); ++i) a[i] = b[a.size() - 1 - i] = static_cast<int16_t>(i * 40503u);
      call.args[3] = TANDEM_MATMUL_DIMS(kDim, kDim, kDim);
      call.workload = kDim * kDim * kDim;
      call.buffers = {a.data(), b.data(), c.data()};
      return best_rate(kMatmul, call);
    }
    case TANDEM_FN_DCT_QUANT: {
      constexpr uint64_t kBlocks = 256;
      std::vector<uint8_t> in(kBlocks * 64);
      std::vector<int16_t> out(kBlocks * 64);
      std::vector<uint16_t> table(64, 16);
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
      call.args[2] = TANDEM_DCT_ARG(kBlocks, TANDEM_DCT_MODE_DCT_QUANTIZE);
      call.workload = kBlocks;
      call.buffers = {in.data(), out.data(), table.data()};
      return best_rate(kDctQuant, call);
    }
    case TANDEM_FN_PRIORITY_QUEUE: {
      constexpr uint64_t kCommands = 4096;
      std::vector<uint64_t> commands(kCommands), responses(kCommands);
      for (uint64_t i = 0; i < kCommands; ++i) {
        const bool push = (i / 8) % 2 == 0;
        commands[i] = ref::encode_pq_command({static_cast<uint8_t>(push ? 1 : 2), static_cast<uint32_t>(i),
                                              static_cast<uint8_t>(i * 37), false, !push});
      }
      call.args[2] = kCommands;
      call.workload = kCommands;
      call.buffers = {commands.data(), responses.data()};
      return best_rate(kPriorityQueue, call);
    }
    default: return 0;
  }
}

}  // namespace tandem::funcs::kernels
