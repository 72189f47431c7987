#include "devices/kernel_plan.hpp"

#include "funcs/kernels.hpp"

namespace tandem::devices {

namespace {
constexpr std::array<std::string_view, kKernelCount> kNames{"nop", "accumulate", "work", "sobel", "matmul", "dct_quant"};
}  // namespace

std::string_view kernel_name(KernelId id) { return kNames[static_cast<size_t>(id)]; }

bool kernel_for_function(uint16_t function, KernelId& out) {
  switch (function) {
    case TANDEM_FN_NOP: out = KernelId::nop; return true;
    case TANDEM_FN_ACCUMULATE: out = KernelId::accumulate; return true;
    case TANDEM_FN_WORK: out = KernelId::work; return true;
    case TANDEM_FN_SOBEL: out = KernelId::sobel; return true;
    case TANDEM_FN_MATMUL: out = KernelId::matmul; return true;
    case TANDEM_FN_DCT_QUANT: out = KernelId::dct_quant; return true;
    default:
      if (function >= TANDEM_FN_WORK_BASE && function < TANDEM_FN_WORK_BASE + TANDEM_WORK_FUNCTIONS) {
        out = KernelId::work;
        return true;
      }
      return false;
  }
}

Status plan_kernel_job(const funcs::Call& call, KernelJob& job, const void* table) {
  job = KernelJob{};
  if (!kernel_for_function(call.function, job.kernel)) return Status::invalid_argument;
  auto add = [&job](uint32_t slot, uint64_t bytes, bool read, bool write, uint32_t element) {
    job.buffers[job.buffer_count++] = KernelBuffer{slot, bytes, read, write, element};
  };
  switch (job.kernel) {
    case KernelId::nop: break;
    case KernelId::accumulate:
      job.count = call.args[1];
      if (job.count == 0) {
        job.launch = false;
        break;
      }
      add(0, job.count * 4, true, false, 4);
      break;
    case KernelId::work:
      job.count = call.args[0];
      if (job.count == 0) job.launch = false;
      break;
    case KernelId::sobel: {
      const funcs::kernels::SobelArgs a = funcs::kernels::sobel_args(call);
      job.width = static_cast<uint32_t>(a.width);
      job.rows = static_cast<uint32_t>(a.rows);
      job.above = a.above;
      job.below = a.below;
      if (a.width == 0 || a.rows == 0) {
        job.launch = false;
        break;
      }
      add(0, a.input_rows() * a.width, true, false, 1);
      add(1, a.rows * a.width, false, true, 1);
      break;
    }
    case KernelId::matmul: {
      const funcs::kernels::MatmulArgs a = funcs::kernels::matmul_args(call);
      job.m = static_cast<uint32_t>(a.m);
      job.k = static_cast<uint32_t>(a.k);
      job.n = static_cast<uint32_t>(a.n);
      if (a.m == 0 || a.n == 0) {
        job.launch = false;
        break;
      }
      if (a.k > 0) {
        add(0, a.m * a.k * 2, true, false, 2);
        add(1, a.k * a.n * 2, true, false, 2);
      }
      add(funcs::kernels::matmul_c_buffer(a), a.m * a.n * 4, false, true, 4);
      break;
    }
    case KernelId::dct_quant: {
      const funcs::kernels::DctArgs a = funcs::kernels::dct_args(call);
      job.count = a.blocks;
      job.mode = a.mode;
      if (a.blocks == 0) {
        job.launch = false;
        break;
      }
      if (a.uses_table() &&
          !funcs::kernels::valid_quant_table(static_cast<const uint16_t*>(table != nullptr ? table : call.buffers[2]))) {
        job.launch = false;  // the reference's answer: 1, nothing written
        job.value = 1;
        break;
      }
      add(0, a.blocks * a.input_block_bytes(), true, false, a.mode == TANDEM_DCT_MODE_QUANTIZE ? 2 : 1);
      add(1, a.blocks * 128, false, true, 2);
      if (a.uses_table()) add(2, 128, true, false, 2);
      break;
    }
  }
  return Status::ok;
}

uint32_t partial_words(KernelId kernel, uint32_t groups) {
  switch (kernel) {
    case KernelId::accumulate: return groups;
    case KernelId::work: return 2 * groups;
    default: return 0;
  }
}

int64_t reduce_partials(KernelId kernel, const int64_t* partials, uint32_t groups) {
  uint64_t sum = 0;  // unsigned: the wrap-around of the catalog's combine
  const uint32_t stride = kernel == KernelId::work ? 2 : 1;
  for (uint32_t g = 0; g < groups; ++g) sum += static_cast<uint64_t>(partials[g * stride]);
  return static_cast<int64_t>(sum);
}

}  // namespace tandem::devices
