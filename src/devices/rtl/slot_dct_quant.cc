#include "Vtandem_dct_quant.h"
#include "devices/rtl/slots.hpp"
#include "devices/rtl/verilated_slot.hpp"

namespace tandem::devices::rtl::detail {

std::unique_ptr<RtlAccelerator> make_dct_quant_slot(const RtlOptions& options) {
  return std::make_unique<VerilatedSlot<Vtandem_dct_quant>>(
      RtlFunction::dct_quant, options,
      RtlPortInfo{.num_args = 2, .in_beat_bytes = 8, .out_beat_bytes = 8});
}

}  // namespace tandem::devices::rtl::detail
