/* CHECK(cond) for the C tests: reports a failed condition with its place and counts it in `failures`,
 * which the including file defines (static int failures = 0;) and returns from main. */
#ifndef TANDEM_TESTS_C_CHECK_H
#define TANDEM_TESTS_C_CHECK_H

#include <stdio.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

#endif
