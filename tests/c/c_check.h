/* For the C tests: CHECK(cond) reports a failed condition with its place and counts it in `failures`,
 * which the including file defines (static int failures = 0;) and returns from main;
 * open_embedded_hw() opens the runtime they use. */
#ifndef TANDEM_TESTS_C_CHECK_H
#define TANDEM_TESTS_C_CHECK_H

#include <stdio.h>

#include "tandem/tandem.h"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* An embedded runtime in hw mode; NULL (with the message on stderr) if it cannot be opened. */
static inline tandem_runtime_t* open_embedded_hw(void) {
  tandem_options_t options;
  tandem_runtime_t* rt = NULL;
  tandem_options_init(&options);
  options.embedded = 1;
  options.mode = TANDEM_MODE_HW;
  if (tandem_open(&options, &rt) != TANDEM_OK) fprintf(stderr, "tandem_open: %s\n", tandem_last_error());
  return rt;
}

#endif
