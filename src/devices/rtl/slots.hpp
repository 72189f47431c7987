// Internal: one factory per accelerator, each in its own .cc with its Verilated model.
#pragma once

#include <memory>

#include "devices/rtl/rtl_accelerator.hpp"

namespace tandem::devices::rtl::detail {

std::unique_ptr<RtlAccelerator> make_accumulate_slot(const RtlOptions& options);
std::unique_ptr<RtlAccelerator> make_sobel_slot(const RtlOptions& options);
std::unique_ptr<RtlAccelerator> make_matmul_slot(const RtlOptions& options);
std::unique_ptr<RtlAccelerator> make_dct_quant_slot(const RtlOptions& options);
std::unique_ptr<RtlAccelerator> make_priority_queue_slot(const RtlOptions& options);

}  // namespace tandem::devices::rtl::detail
