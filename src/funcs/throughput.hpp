// The CPU's software throughput of each function on this machine (units per second), measured once
// per process. The emulated fabric sets accelerator speeds relative to it, so that a configured
// speedup means the same on any host (issue 4's `tandem calibrate` refines these numbers).
#pragma once

#include <cstdint>

namespace tandem::funcs {

// Units per second of the software path; 0 for functions without work (nop).
double software_throughput(uint16_t function);

}  // namespace tandem::funcs
