#include "dropin/open_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* TANDEM_WAIT: how the library's calls wait for their accelerator jobs. */
static int wait_policy(tandem_options_t* options, char* why, size_t why_size) {
  const char* wait = getenv("TANDEM_WAIT");
  char* end = NULL;
  double us;
  if (wait == NULL || *wait == '\0') return 1;
  if (strcmp(wait, "spin") == 0) {
    options->wait_mode = TANDEM_WAIT_SPIN;
    return 1;
  }
  if (strcmp(wait, "block") == 0) {
    options->wait_mode = TANDEM_WAIT_BLOCK;
    return 1;
  }
  us = strtod(wait, &end);
  if (end != wait && *end == '\0' && us >= 0 && us <= 1e6) {
    options->wait_mode = TANDEM_WAIT_SPIN_THEN_BLOCK;
    options->spin_ns = (int64_t)(us * 1000);
    return 1;
  }
  snprintf(why, why_size, "TANDEM_WAIT='%s' is not spin, block or a spin budget in microseconds", wait);
  return 0;
}

tandem_status_t tandem_dropin_open(tandem_runtime_t** runtime, int* fell_back, char* why, size_t why_size) {
  const char* choice = getenv("TANDEM_RUNTIME");
  tandem_options_t options;
  tandem_status_t status;
  if (choice == NULL || *choice == '\0') choice = "auto";
  if (fell_back != NULL) *fell_back = 0;
  if (why_size > 0) why[0] = '\0';
  *runtime = NULL;
  if (strcmp(choice, "auto") != 0 && strcmp(choice, "embedded") != 0 && strcmp(choice, "daemon") != 0) {
    snprintf(why, why_size, "TANDEM_RUNTIME='%s' is not auto, embedded or daemon", choice);
    return TANDEM_INVALID_ARGUMENT;
  }
  tandem_options_init(&options);
  options.embedded = strcmp(choice, "embedded") == 0;
  if (!wait_policy(&options, why, why_size)) return TANDEM_INVALID_ARGUMENT;
  status = tandem_open(&options, runtime);
  if (status != TANDEM_OK && strcmp(choice, "auto") == 0) {
    snprintf(why, why_size, "tandemd unusable (%s: %s)", tandem_status_name(status), tandem_last_error());
    if (fell_back != NULL) *fell_back = 1;
    options.embedded = 1;
    status = tandem_open(&options, runtime);
  }
  if (status != TANDEM_OK) {
    *runtime = NULL;
    snprintf(why, why_size, "%s: %s", tandem_status_name(status), tandem_last_error());
  }
  return status;
}
