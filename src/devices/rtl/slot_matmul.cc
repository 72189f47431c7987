#include "Vtandem_matmul.h"
#include "devices/rtl/slots.hpp"
#include "devices/rtl/verilated_slot.hpp"

namespace tandem::devices::rtl::detail {

std::unique_ptr<RtlAccelerator> make_matmul_slot(const RtlOptions& options) {
  return std::make_unique<VerilatedSlot<Vtandem_matmul>>(
      RtlFunction::matmul, options,
      RtlPortInfo{.num_args = 3, .in_beat_bytes = 8, .out_beat_bytes = 8});
}

}  // namespace tandem::devices::rtl::detail
