#include "devices/rtl/rtl_accelerator.hpp"

#include "devices/rtl/slots.hpp"

namespace tandem::devices::rtl {

std::mutex& detail::verilator_setup_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::string_view to_string(RtlFunction f) {
  switch (f) {
    case RtlFunction::accumulate: return "accumulate";
    case RtlFunction::sobel: return "sobel";
    case RtlFunction::matmul: return "matmul";
    case RtlFunction::dct_quant: return "dct_quant";
    case RtlFunction::priority_queue: return "priority_queue";
    case RtlFunction::list_walk: return "list_walk";
  }
  return "unknown";
}

Result<std::unique_ptr<RtlAccelerator>> make_rtl_accelerator(RtlFunction function,
                                                             const RtlOptions& options) {
  if (!(options.clock_hz > 0)) return {Status::invalid_argument, "clock_hz must be positive"};
  if (options.input_stall_per_mille >= 1000 || options.output_stall_per_mille >= 1000) {
    return {Status::invalid_argument, "stall fractions must be below 1000 per mille"};
  }
  if (options.sobel_small_variant && function != RtlFunction::sobel) {
    return {Status::invalid_argument, "sobel_small_variant applies to sobel only"};
  }
  switch (function) {
    case RtlFunction::accumulate: return detail::make_accumulate_slot(options);
    case RtlFunction::sobel: return detail::make_sobel_slot(options);
    case RtlFunction::matmul: return detail::make_matmul_slot(options);
    case RtlFunction::dct_quant: return detail::make_dct_quant_slot(options);
    case RtlFunction::priority_queue: return detail::make_priority_queue_slot(options);
    case RtlFunction::list_walk:
      if (options.mem_read_cycles == 0 || !(options.walk_reads >= 0) || options.walk_reads > 1e6) {
        return {Status::invalid_argument, "list_walk: mem_read_cycles must be positive, walk_reads in [0, 1e6]"};
      }
      return detail::make_list_walk_slot(options);
  }
  return {Status::invalid_argument, "unknown RTL function"};
}

}  // namespace tandem::devices::rtl
