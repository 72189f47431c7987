/* libaccumulate: the accumulator of the thesis's case study (Ch4) as an application library. One header,
 * one soname (libaccumulate.so.1), two builds: software-only (lib/tandem-accumulate/sw) and accelerated
 * through tandem (lib/tandem-accumulate/tandem). A program linked with -laccumulate runs either; which
 * one is chosen by LD_LIBRARY_PATH, as the thesis's login scripts choose (Section 5.4, [BNP10]). */
#ifndef TANDEM_ACCUMULATE_H
#define TANDEM_ACCUMULATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The sum of data[0..count) as a 64-bit integer (wrapping modulo 2^64). */
int64_t accumulate_sum(const int32_t* data, size_t count);

/* Which build answers: "software", or "tandem (embedded)" / "tandem (daemon)", or "software (no tandem
 * runtime: <why>)" when the accelerated build could not open one. */
const char* accumulate_backend(void);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_ACCUMULATE_H */
