// How a high-level call's data reaches the accelerators (docs/access.md). The runtime picks, per call,
// the access method together with the split: for each method that can reach the call's buffers it
// folds the method's costs into the cost model's parameters (D_a gains the set-up, X_a the transfer
// and any copy) and keeps the plan the model predicts fastest.
//
//   zero_copy       the buffers are session memory (tandem_alloc / tandem_register; any memory of the
//                   embedded runtime): the device works in place. User-mapped DMA (HybridOS), AGD.
//   copy            the library copies each job's input into staging session memory, and its output
//                   back: works on any memory, costs the caller's CPU. User-space buffers (HybridOS).
//   scatter_gather  the device walks the client's own pages: tandemd gathers them with
//                   process_vm_readv before the job and scatters the output after. AGSG (seed 001).
//   device_local    the buffers are device addresses (tandem_buffer_alloc): already on the device.
#pragma once

#include <cstdint>
#include <string_view>

#include "model/access_model.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::client {

// What a call (or TANDEM_ACCESS) asks for: the runtime's choice, or one method forced (experiments).
enum class AccessChoice : uint8_t { automatic, zero_copy, copy, scatter_gather, device_local };

// "auto", "zero_copy", "copy", "sg" (or "scatter_gather"), "local" (or "device_local"). False if none.
bool parse_access(std::string_view text, AccessChoice& out);
std::string_view access_name(uint8_t method);  // TANDEM_ACCESS_*: "zero_copy", "copy", "sg", "local"

// The host side's costs of the access methods: rt::host_access_costs() (rt/host_access.hpp), or
// tandemd's figures, or `tandem calibrate`'s.
using model::HostAccessCosts;

}  // namespace tandem::client
