// Counts the heap allocations made through operator new while counting is on. Linking
// alloc_counter.cc replaces the global operator new/delete of the test binary.
#pragma once

#include <cstdint>

namespace tandem::testing {

void count_allocations(bool on);
uint64_t allocations_counted();  // since the last count_allocations(true)

}  // namespace tandem::testing
