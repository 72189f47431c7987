// The CPU's software throughput of each function on this machine (units per second), measured once
// per process (or adopted from tandemd's). The emulated fabric sets accelerator speeds relative to it, so that a configured
// speedup means the same on any host (issue 4's `tandem calibrate` refines these numbers).
#pragma once

#include <cstdint>

namespace tandem::funcs {

// Units per second of the software path; 0 for functions without work (nop). Measured on first use
// (a few ms each), unless adopted before.
double software_throughput(uint16_t function);

// Takes a figure measured elsewhere on this machine (tandemd's, sent in its hello) instead of measuring
// it here. False, and nothing changes, for a figure already known, a function whose rate is not
// measured (`work`: its unit is a cycle; nop, copy, ...), or a rate outside [1, 1e13] units/s.
bool adopt_software_throughput(uint16_t function, double units_per_second);

}  // namespace tandem::funcs
