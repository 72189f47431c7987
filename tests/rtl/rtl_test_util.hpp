// Helpers shared by the RTL tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "devices/rtl/rtl_accelerator.hpp"
#include "devices/rtl/rtl_jobs.hpp"

namespace tandem::testing {

namespace rtl = tandem::devices::rtl;

// Deterministic data (splitmix64), so a failing case can be rerun.
class TestRng {
 public:
  explicit TestRng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
  uint8_t byte() { return static_cast<uint8_t>(next()); }

 private:
  uint64_t s_;
};

inline std::unique_ptr<rtl::RtlAccelerator> make_slot(rtl::RtlFunction f,
                                                      const rtl::RtlOptions& options = {}) {
  auto slot = rtl::make_rtl_accelerator(f, options);
  EXPECT_TRUE(slot.ok()) << slot.message();
  return slot.ok() ? std::move(slot).value() : nullptr;
}

// Back-pressure on both streams, to exercise every handshake path.
inline rtl::RtlOptions stalling_options(uint64_t seed = 7) {
  rtl::RtlOptions o;
  o.input_stall_per_mille = 300;
  o.output_stall_per_mille = 400;
  o.stall_seed = seed;
  return o;
}

}  // namespace tandem::testing
