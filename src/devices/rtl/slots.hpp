// Internal: one factory per accelerator, each in its own .cc with its Verilated model.
#pragma once

#include <memory>
#include <mutex>

#include "devices/rtl/rtl_accelerator.hpp"

namespace tandem::devices::rtl::detail {

// Verilator's runtime writes process-wide state (Verilated::s_lastContextp) when a context is
// made; slots are therefore created and destroyed under this lock, so that slots in different
// threads can be set up concurrently. Running (eval) needs no lock: each slot has its own context.
std::mutex& verilator_setup_mutex();

std::unique_ptr<RtlAccelerator> make_accumulate_slot(const RtlOptions& options);
std::unique_ptr<RtlAccelerator> make_sobel_slot(const RtlOptions& options);
std::unique_ptr<RtlAccelerator> make_matmul_slot(const RtlOptions& options);
std::unique_ptr<RtlAccelerator> make_dct_quant_slot(const RtlOptions& options);
std::unique_ptr<RtlAccelerator> make_priority_queue_slot(const RtlOptions& options);
std::unique_ptr<RtlAccelerator> make_list_walk_slot(const RtlOptions& options);

}  // namespace tandem::devices::rtl::detail
