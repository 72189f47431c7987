// What the C API's translation units share (defined in c_api.cc): the checked handle and the failure path
// that records tandem_last_error()'s message.
#pragma once

#include <string>

#include "client/runtime.hpp"
#include "tandem/tandem.h"

namespace tandem::client::capi {

// The runtime behind a handle; null for a null or foreign handle.
Runtime* runtime_of(tandem_runtime_t* runtime);
// Records `message` for tandem_last_error() on this thread and returns the status's wire code.
tandem_status_t fail(Status status, std::string message);

}  // namespace tandem::client::capi
