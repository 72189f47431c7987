#include "Vtandem_sobel.h"
#include "Vtandem_sobel_l3.h"
#include "devices/rtl/rtl_jobs.hpp"
#include "devices/rtl/slots.hpp"
#include "devices/rtl/verilated_slot.hpp"

namespace tandem::devices::rtl::detail {

std::unique_ptr<RtlAccelerator> make_sobel_slot(const RtlOptions& options) {
  if (options.sobel_small_variant) {
    return std::make_unique<VerilatedSlot<Vtandem_sobel_l3>>(
        RtlFunction::sobel, options,
        RtlPortInfo{.num_args = 2, .in_beat_bytes = 3, .out_beat_bytes = 3});
  }
  return std::make_unique<VerilatedSlot<Vtandem_sobel>>(
      RtlFunction::sobel, options,
      RtlPortInfo{.num_args = 2, .in_beat_bytes = kSobelLanes, .out_beat_bytes = kSobelLanes});
}

}  // namespace tandem::devices::rtl::detail
