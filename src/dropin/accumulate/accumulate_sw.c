/* libaccumulate, software-only build: the tuned loop, nothing else (no check for accelerators per call;
 * the thesis's reason for two builds). */
#include "dropin/accumulate/accumulate.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int64_t accumulate_sum(const int32_t* data, size_t count) {
  uint64_t sum = 0; /* unsigned: wraps instead of overflowing */
  size_t i;
  for (i = 0; i < count; ++i) sum += (uint64_t)(int64_t)data[i];
  return (int64_t)sum;
}

EXPORT const char* accumulate_backend(void) { return "software"; }
