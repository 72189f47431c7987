// Software reference of service_chain (FastPath, issue 12): a job that asks its client `steps` times,
// each request's arguments depending on the previous answer. The emulated fabric and the software path
// use these same steps; the software path calls the client's callback directly.
#pragma once

#include <array>
#include <cstdint>

#include "tandem/tandem_abi.h"

namespace tandem::funcs::ref {

using ServiceArgs = std::array<uint64_t, TANDEM_SERVICE_ARGS>;

// The arguments of request `step` (0-based) given the chain's value so far.
inline ServiceArgs service_chain_args(uint64_t value, uint64_t step, uint64_t seed) {
  return {value, step, seed, value ^ (step * 0x9e3779b97f4a7c15ull)};
}

// The chain's value after an answer: every answer and its order count.
inline uint64_t service_chain_next(uint64_t value, uint64_t answer) {
  return (value ^ answer) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
}

// The whole chain with `call(args) -> answer` serving each request.
template <class Call>
uint64_t service_chain(uint64_t steps, uint64_t seed, Call&& call) {
  uint64_t value = seed;
  for (uint64_t step = 0; step < steps; ++step) value = service_chain_next(value, call(service_chain_args(value, step, seed)));
  return value;
}

}  // namespace tandem::funcs::ref
