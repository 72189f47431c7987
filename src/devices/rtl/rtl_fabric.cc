#include "devices/rtl/rtl_fabric.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <span>

#include "devices/rtl/rtl_jobs.hpp"
#include "funcs/kernels.hpp"

namespace tandem::devices::rtl {

// Streams carry little-endian words, and the kernels' buffers hold host-order words that are copied
// into beats byte for byte.
static_assert(std::endian::native == std::endian::little, "the RTL device assumes a little-endian host");

namespace {

namespace kernels = funcs::kernels;

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

// One call's hardware jobs on one accelerator: their cycles, and why the first failure failed.
class Tally {
 public:
  explicit Tally(RtlAccelerator& accelerator) : acc_(accelerator) {}
  RtlAccelerator& accelerator() { return acc_; }

  // Runs one hardware job. False if it failed, or (expect_ok_ret) if the accelerator refused it.
  bool run(const RtlJob& job, RtlResult& r, bool expect_ok_ret) {
    r = acc_.run(job);
    ++hardware_jobs;
    cycles += r.cycles + r.bus_cycles;  // a job that timed out counts the cycles it ran
    if (r.status != Status::ok) {
      error = std::string(to_string(acc_.function())) + ": " + r.message;
      return false;
    }
    if (expect_ok_ret && r.value != kRetOk) {
      error = std::string(to_string(acc_.function())) + ": the accelerator refused the job (RET " +
              std::to_string(r.value) + ")";
      return false;
    }
    return true;
  }

  uint64_t cycles = 0;
  uint64_t hardware_jobs = 0;
  int64_t stall_ns = 0;  // time outside the cycles (demand paging served by the CPU)
  std::string error;
  Status failure = Status::device_error;  // the call's status when run() returns false

 private:
  RtlAccelerator& acc_;
};

// ---- accumulate: args[1] int32 values at buffers[0]; chunks summed on the host (int64, exact) ----
bool run_accumulate(Tally& t, const RtlFabricOptions& o, const funcs::Call& call, int64_t& value) {
  const uint64_t count = call.args[1];
  const auto* data = static_cast<const int32_t*>(call.buffers[0]);
  const uint64_t chunk = std::max<uint32_t>(o.accumulate_values_per_job, 1);
  uint64_t sum = 0;  // unsigned: the chunks' int64 partial sums add modulo 2^64, as the software does
  uint64_t done = 0;
  RtlResult r;
  do {
    const uint64_t n = std::min(chunk, count - done);
    if (!t.run(accumulate_job({data + done, n}), r, false)) return false;
    sum += r.value;
    done += n;
  } while (done < count);
  value = static_cast<int64_t>(sum);
  return true;
}

// ---- sobel: tiles of the input image with a one-pixel halo; each tile's border outputs (zero in
// the hardware) are the halo and are dropped, except where they are the image's own border ----
bool run_sobel(Tally& t, const RtlFabricOptions& o, const funcs::Call& call) {
  const kernels::SobelArgs a = kernels::sobel_args(call);
  RtlResult r;
  if (a.width == 0 || a.rows == 0) return t.run(RtlJob{{0, 0}, {}, 0}, r, true);
  const uint64_t width = a.width, height = a.input_rows();
  const auto* in = static_cast<const uint8_t*>(call.buffers[0]);
  auto* out = static_cast<uint8_t*>(call.buffers[1]);
  const uint32_t lanes = t.accelerator().ports().in_beat_bytes;
  const uint64_t max_width = t.accelerator().options().sobel_small_variant ? 40 : kSobelMaxWidth;
  const uint64_t strip = width <= max_width ? width : max_width - 2;  // output columns per tile
  const uint64_t band = std::clamp<uint64_t>(o.sobel_rows_per_job, 1, kSobelMaxHeight - 2);
  RtlJob job;
  // Output rows are input rows [above, above + rows).
  for (uint64_t ia = a.above; ia < a.above + a.rows; ia += band) {
    const uint64_t ib = std::min(ia + band, a.above + a.rows);
    const uint64_t sr0 = ia > 0 ? ia - 1 : 0, sr1 = ib < height ? ib + 1 : height;
    for (uint64_t c0 = 0; c0 < width; c0 += strip) {
      const uint64_t c1 = std::min(c0 + strip, width);
      const uint64_t sc0 = c0 > 0 ? c0 - 1 : 0, sc1 = c1 < width ? c1 + 1 : width;
      const uint64_t sw = sc1 - sc0, sh = sr1 - sr0, stride = round_up(sw, lanes);
      job.args = {static_cast<uint32_t>(sw), static_cast<uint32_t>(sh)};
      job.input.assign(stride * sh, 0);
      for (uint64_t row = sr0; row < sr1; ++row) {
        std::memcpy(job.input.data() + (row - sr0) * stride, in + row * width + sc0, sw);
      }
      job.output_bytes = stride * sh;
      if (!t.run(job, r, true)) return false;
      for (uint64_t row = ia; row < ib; ++row) {
        std::memcpy(out + (row - a.above) * width + c0, r.output.data() + (row - sr0) * stride + (c0 - sc0),
                    c1 - c0);
      }
    }
  }
  return true;
}

// ---- matmul: blocks of at most `tile` rows, columns and inner terms; partial products of the
// inner blocks add modulo 2^32, exactly as the hardware's own accumulator wraps ----
bool run_matmul(Tally& t, const RtlFabricOptions& o, const funcs::Call& call) {
  const kernels::MatmulArgs a = kernels::matmul_args(call);
  RtlResult r;
  if (a.m == 0 || a.n == 0) return t.run(RtlJob{{0, 0, 0}, {}, 0}, r, true);
  const uint64_t tile = std::clamp<uint64_t>(o.matmul_tile, 1, kMatmulMaxDim);
  const auto* mat_a = a.k > 0 ? static_cast<const int16_t*>(call.buffers[0]) : nullptr;
  const auto* mat_b = a.k > 0 ? static_cast<const int16_t*>(call.buffers[1]) : nullptr;
  auto* mat_c = static_cast<int32_t*>(call.buffers[kernels::matmul_c_buffer(a)]);
  std::vector<int16_t> a_tile, b_tile;
  std::vector<int32_t> c_tile;
  std::vector<uint32_t> acc;
  for (uint64_t i0 = 0; i0 < a.m; i0 += tile) {
    const uint64_t mi = std::min(tile, a.m - i0);
    for (uint64_t j0 = 0; j0 < a.n; j0 += tile) {
      const uint64_t nj = std::min(tile, a.n - j0);
      acc.assign(mi * nj, 0);
      c_tile.assign(mi * nj, 0);
      // k == 0 still runs one job: the hardware writes the zero block.
      for (uint64_t k0 = 0; k0 < std::max<uint64_t>(a.k, 1); k0 += tile) {
        const uint64_t kk = std::min(tile, a.k - std::min(a.k, k0));
        a_tile.resize(mi * kk);
        b_tile.resize(kk * nj);
        for (uint64_t i = 0; i < mi; ++i) {
          for (uint64_t x = 0; x < kk; ++x) a_tile[i * kk + x] = mat_a[(i0 + i) * a.k + k0 + x];
        }
        for (uint64_t x = 0; x < kk; ++x) {
          for (uint64_t j = 0; j < nj; ++j) b_tile[x * nj + j] = mat_b[(k0 + x) * a.n + j0 + j];
        }
        auto job = matmul_job(a_tile, b_tile, static_cast<uint32_t>(mi), static_cast<uint32_t>(kk),
                              static_cast<uint32_t>(nj));
        if (!job) {
          t.error = job.message();
          return false;
        }
        if (!t.run(job.value(), r, true)) return false;
        if (matmul_unpack(r, static_cast<uint32_t>(mi), static_cast<uint32_t>(nj), c_tile) != Status::ok) {
          t.error = "matmul: output stream of the wrong size";
          return false;
        }
        for (size_t e = 0; e < acc.size(); ++e) acc[e] += static_cast<uint32_t>(c_tile[e]);
      }
      for (uint64_t i = 0; i < mi; ++i) {
        for (uint64_t j = 0; j < nj; ++j) mat_c[(i0 + i) * a.n + j0 + j] = static_cast<int32_t>(acc[i * nj + j]);
      }
    }
  }
  return true;
}

// ---- dct_quant: chunks of blocks; the quantization table goes first in every job that uses it ----
bool run_dct(Tally& t, const RtlFabricOptions& o, const funcs::Call& call, int64_t& value) {
  const kernels::DctArgs a = kernels::dct_args(call);
  uint8_t table[128] = {};
  if (a.uses_table() && a.blocks == 0) {
    // An empty call names no buffers; the hardware still takes a table first (any valid one).
    for (size_t i = 0; i < sizeof table; i += 2) table[i] = 1;
  } else if (a.uses_table()) {
    std::memcpy(table, call.buffers[2], sizeof table);
    uint16_t q[64];
    std::memcpy(q, table, sizeof q);
    if (!kernels::valid_quant_table(q)) {  // the driver refuses it: the divider assumes q >= 1
      value = 1;
      return true;
    }
  }
  const uint64_t in_block = a.input_block_bytes();
  const auto* in = static_cast<const uint8_t*>(call.buffers[0]);
  auto* out = static_cast<uint8_t*>(call.buffers[1]);
  const uint64_t chunk = std::max<uint32_t>(o.dct_blocks_per_job, 1);
  RtlJob job;
  RtlResult r;
  uint64_t done = 0;
  do {
    const uint64_t n = std::min(chunk, a.blocks - done);
    job.args = {a.mode, static_cast<uint32_t>(n)};
    job.input.clear();
    if (a.uses_table()) job.input.insert(job.input.end(), table, table + sizeof table);
    if (n > 0) job.input.insert(job.input.end(), in + done * in_block, in + (done + n) * in_block);
    job.output_bytes = n * 128;
    if (!t.run(job, r, true)) return false;
    if (n > 0) std::memcpy(out + done * 128, r.output.data(), n * 128);
    done += n;
  } while (done < a.blocks);
  value = 0;
  return true;
}

// ---- priority_queue: the first chunk empties the queue, later ones continue on its contents ----
bool run_pq(Tally& t, const RtlFabricOptions& o, const funcs::Call& call, int64_t& value) {
  const uint64_t count = call.args[2];
  const auto* in = static_cast<const uint8_t*>(call.buffers[0]);
  auto* out = static_cast<uint8_t*>(call.buffers[1]);
  const uint64_t chunk = std::max<uint32_t>(o.pq_commands_per_job, 1);
  RtlJob job;
  RtlResult r;
  uint64_t done = 0;
  do {
    const uint64_t n = std::min(chunk, count - done);
    job.args = {static_cast<uint32_t>(n), done == 0 ? 1u : 0u};
    job.input.assign(in + done * 8, in + (done + n) * 8);
    job.output_bytes = n * 8;
    if (!t.run(job, r, false)) return false;
    if (n > 0) std::memcpy(out + done * 8, r.output.data(), n * 8);
    done += n;
  } while (done < count);
  value = static_cast<int64_t>(r.value);
  return true;
}

// ---- list_walk: args[0] head (client virtual address), args[1] max nodes; one hardware job that reads
// client memory through the call's port and the slot's TLB ----
bool run_list_walk(Tally& t, const funcs::Call& call, const MemoryContext& m, int64_t& value, ExecResult& out) {
  if (call.memory == nullptr) {  // the driver gave it no way to reach memory: a driver bug
    t.error = "list_walk: the call has no memory port";
    return false;
  }
  RtlJob job;
  job.args = {static_cast<uint32_t>(call.args[0]), static_cast<uint32_t>(call.args[0] >> 32),
              static_cast<uint32_t>(call.args[1]), static_cast<uint32_t>(call.args[1] >> 32)};
  job.memory = call.memory;
  job.asid = m.asid;
  job.page_walks = m.address_mode == TANDEM_ADDRESS_PHASEV;
  job.flush_tlb = m.flush_tlb;
  RtlResult r;
  const uint64_t faults_before = call.memory->faults();
  const int64_t fault_ns_before = call.memory->fault_ns();
  const bool ok = t.run(job, r, false);
  out.tlb.hits = r.tlb_hits;
  out.tlb.misses = r.tlb_misses;
  out.tlb.faults = call.memory->faults() - faults_before;
  out.nodes = r.nodes;
  // The job waited while the CPU served the pages it faulted in, as on the emulated device.
  t.stall_ns += call.memory->fault_ns() - fault_ns_before;
  if (!ok) {
    if (r.status == Status::translation_fault || r.status == Status::disconnected ||
        r.status == Status::invalid_argument) {
      t.failure = r.status;
    }
    return false;
  }
  value = static_cast<int64_t>(r.value);
  return true;
}

}  // namespace

bool rtl_function_for(uint16_t function, RtlFunction& out) {
  switch (function) {
    case TANDEM_FN_ACCUMULATE: out = RtlFunction::accumulate; return true;
    case TANDEM_FN_SOBEL: out = RtlFunction::sobel; return true;
    case TANDEM_FN_MATMUL: out = RtlFunction::matmul; return true;
    case TANDEM_FN_DCT_QUANT: out = RtlFunction::dct_quant; return true;
    case TANDEM_FN_PRIORITY_QUEUE: out = RtlFunction::priority_queue; return true;
    case TANDEM_FN_LIST_WALK: out = RtlFunction::list_walk; return true;
    default: return false;
  }
}

RtlFabric::RtlFabric(uint32_t slots, const RtlFabricOptions& options) : options_(options), slots_(slots) {}

RtlFabric::~RtlFabric() = default;

bool RtlFabric::supports(uint16_t function) {
  RtlFunction f;
  return rtl_function_for(function, f);
}

void RtlFabric::configure(uint32_t slot, uint16_t function) {
  if (slot >= slots_.size()) return;
  Slot& s = slots_[slot];
  s.accelerator.reset();  // the old accelerator's region is overwritten
  s.function = kEmpty;
  RtlFunction f;
  if (!rtl_function_for(function, f)) {
    s.last_error = "no RTL accelerator implements function " + std::to_string(function);
    return;
  }
  auto accelerator = make_rtl_accelerator(f, options_.accelerator);
  if (!accelerator) {
    s.last_error = accelerator.message();
    return;
  }
  s.accelerator = std::move(accelerator).value();
  s.function = function;
  ++s.stats.models_built;
}

ExecResult RtlFabric::execute(uint32_t slot, const funcs::Call& call, const MemoryContext& memory) {
  ExecResult result;
  result.status = Status::device_error;
  if (slot >= slots_.size()) return result;
  Slot& s = slots_[slot];
  if (s.function != call.function || !s.accelerator) {
    s.last_error = "slot " + std::to_string(slot) + " is not loaded with function " + std::to_string(call.function);
    return result;
  }
  Tally tally(*s.accelerator);
  int64_t value = 0;
  bool ok = false;
  result.status = Status::ok;
  switch (s.accelerator->function()) {
    case RtlFunction::accumulate: ok = run_accumulate(tally, options_, call, value); break;
    case RtlFunction::sobel: ok = run_sobel(tally, options_, call); break;
    case RtlFunction::matmul: ok = run_matmul(tally, options_, call); break;
    case RtlFunction::dct_quant: ok = run_dct(tally, options_, call, value); break;
    case RtlFunction::priority_queue: ok = run_pq(tally, options_, call, value); break;
    case RtlFunction::list_walk: ok = run_list_walk(tally, call, memory, value, result); break;
  }
  ++s.stats.jobs;
  s.stats.hardware_jobs += tally.hardware_jobs;
  s.stats.cycles += tally.cycles;
  result.device_ns = static_cast<int64_t>(
                         std::ceil(static_cast<double>(tally.cycles) * 1e9 / options_.accelerator.clock_hz)) +
                     std::max<int64_t>(0, tally.stall_ns);
  if (!ok) {
    s.last_error = std::move(tally.error);
    result.status = tally.failure;
    return result;
  }
  result.value = value;
  return result;
}

}  // namespace tandem::devices::rtl
