// The no-op job round trip, as the benchmarks measure it: submit -> null accelerator -> completion seen.
#pragma once

#include <cstddef>
#include <vector>

#include "client/runtime.hpp"

namespace tandem::tools {

// A closed loop of `samples` no-op jobs on `q` (after a warm-up), pinned to `cpu` (< 0: not pinned).
// Two records alternate: the next one is reset while the current job is in flight, as any pipelined
// client would, so that preparing it is not part of the round trip. Each sample is one round trip, ns.
Result<std::vector<double>> noop_round_trips(client::Runtime& rt, client::Queue& q, rt::WaitMode mode, size_t samples,
                                             int cpu);

}  // namespace tandem::tools
