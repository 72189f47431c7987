/* A program written against libaccumulate only (accumulate.h, -laccumulate): it neither knows nor links
 * tandem. Which build of the library answers is up to LD_LIBRARY_PATH. Prints the backend and the sums,
 * and fails if a sum differs from its own loop. */
#include <stdio.h>
#include <stdlib.h>

#include "accumulate.h"

int main(void) {
  static const size_t sizes[] = {0, 1, 1000, 100000, 1u << 20};
  size_t s, i;
  int wrong = 0;
  printf("backend: %s\nsums:", accumulate_backend());
  for (s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
    int32_t* data = (int32_t*)malloc((sizes[s] + 1) * sizeof(int32_t));
    int64_t expected = 0, sum;
    if (data == NULL) return 2;
    for (i = 0; i < sizes[s]; ++i) {
      /* Unsigned arithmetic wraps where the signed form would overflow (UBSan caught it). */
      data[i] = (int32_t)((uint32_t)((i * 2654435761u) ^ (i << 7)) - (uint32_t)(i % 1000) * 1000u);
      expected += data[i];
    }
    sum = accumulate_sum(data, sizes[s]);
    printf(" %lld", (long long)sum);
    if (sum != expected) wrong = 1;
    free(data);
  }
  printf("\n");
  return wrong;
}
