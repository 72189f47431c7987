// Software reference of the accumulator (thesis Ch4): the int64 sum of int32 values.
#pragma once

#include <cstdint>
#include <span>

namespace tandem::funcs::ref {

// Exact for fewer than 2^32 values (the sum cannot leave the int64 range).
int64_t accumulate(std::span<const int32_t> values);

}  // namespace tandem::funcs::ref
