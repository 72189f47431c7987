#include "dropin/open_runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
