#include "Vtandem_accumulate.h"
#include "devices/rtl/slots.hpp"
#include "devices/rtl/verilated_slot.hpp"

namespace tandem::devices::rtl::detail {

std::unique_ptr<RtlAccelerator> make_accumulate_slot(const RtlOptions& options) {
  return std::make_unique<VerilatedSlot<Vtandem_accumulate>>(
      RtlFunction::accumulate, options,
      RtlPortInfo{.num_args = 1, .in_beat_bytes = 8, .out_beat_bytes = 8});
}

}  // namespace tandem::devices::rtl::detail
