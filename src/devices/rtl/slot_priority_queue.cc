#include "Vtandem_priority_queue.h"
#include "devices/rtl/slots.hpp"
#include "devices/rtl/verilated_slot.hpp"

namespace tandem::devices::rtl::detail {

std::unique_ptr<RtlAccelerator> make_priority_queue_slot(const RtlOptions& options) {
  return std::make_unique<VerilatedSlot<Vtandem_priority_queue>>(
      RtlFunction::priority_queue, options,
      RtlPortInfo{.num_args = 2, .in_beat_bytes = 8, .out_beat_bytes = 8});
}

}  // namespace tandem::devices::rtl::detail
