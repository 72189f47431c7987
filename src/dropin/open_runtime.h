/* How a drop-in library opens its tandem runtime (shared by libtandem_jpeg.so and libaccumulate). */
#ifndef TANDEM_DROPIN_OPEN_RUNTIME_H
#define TANDEM_DROPIN_OPEN_RUNTIME_H

#include <stddef.h>

#include "tandem/tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens a runtime as TANDEM_RUNTIME says: "embedded" (never a daemon), "daemon" (tandemd only, as
 * tandem_open finds it: TANDEM_SOCKET, else the default socket) or "auto" (the default: tandemd if one
 * runs, else the embedded runtime, also when a daemon was named but cannot be used). On failure *runtime is
 * NULL and `why` (why_size bytes) says what failed; when auto fell back from a daemon, `why` says why and
 * *fell_back (may be NULL) is 1. TANDEM_WAIT sets how calls wait for their jobs: "spin", "block" or a spin
 * budget in microseconds before blocking (default: tandem_options_init's). TANDEM_MODE, TANDEM_CONFIG and
 * the rest apply as in tandem_open. */
tandem_status_t tandem_dropin_open(tandem_runtime_t** runtime, int* fell_back, char* why, size_t why_size);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_DROPIN_OPEN_RUNTIME_H */
