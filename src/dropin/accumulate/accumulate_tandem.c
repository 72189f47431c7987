/* libaccumulate, accelerated build: every call goes to tandem_accumulate, which splits it between this
 * thread and the accelerators. The runtime is opened on the first call (the thesis's library opens its
 * session at load time; opening lazily costs programs that never call nothing) and closed at exit. Without a
 * runtime the library is the software build. TANDEM_VERBOSE=1 prints what it used at exit. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "dropin/accumulate/accumulate.h"
#include "dropin/open_runtime.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_once_t open_once = PTHREAD_ONCE_INIT;
static tandem_runtime_t* runtime = NULL;
static pid_t opener = 0; /* a forked child has the runtime's state but not its threads or session */
static char backend[320] = "software (no call yet)";

static int verbose(void) {
  const char* v = getenv("TANDEM_VERBOSE");
  return v != NULL && *v != '\0' && !(v[0] == '0' && v[1] == '\0');
}

static int64_t sum_in_software(const int32_t* data, size_t count) {
  uint64_t sum = 0;
  size_t i;
  for (i = 0; i < count; ++i) sum += (uint64_t)(int64_t)data[i];
  return (int64_t)sum;
}

static void close_runtime(void) {
  tandem_call_stats_t stats;
  if (runtime == NULL || getpid() != opener) return;
  if (verbose() && tandem_get_call_stats(runtime, &stats, sizeof stats) == TANDEM_OK) {
    fprintf(stderr, "libaccumulate: %s: %llu calls, %llu accelerator jobs, %llu bytes on accelerators, %llu in software\n",
            backend, (unsigned long long)stats.calls, (unsigned long long)stats.hw_jobs,
            (unsigned long long)stats.hw_units, (unsigned long long)stats.sw_units);
  }
  tandem_close(runtime);
  runtime = NULL;
}

static void open_runtime(void) {
  char why[256];
  int fell_back = 0;
  if (tandem_dropin_open(&runtime, &fell_back, why, sizeof why) != TANDEM_OK) {
    snprintf(backend, sizeof backend, "software (no tandem runtime: %s)", why);
    if (verbose()) fprintf(stderr, "libaccumulate: %s\n", backend);
    return;
  }
  if (fell_back && verbose()) fprintf(stderr, "libaccumulate: %s: the embedded runtime instead\n", why);
  opener = getpid();
  snprintf(backend, sizeof backend, "tandem (%s)", tandem_runtime_kind(runtime));
  atexit(close_runtime); /* after libtandem's own set-up, so it runs before libtandem is torn down */
}

EXPORT int64_t accumulate_sum(const int32_t* data, size_t count) {
  int64_t sum = 0;
  pthread_once(&open_once, open_runtime);
  if (runtime != NULL && getpid() == opener && tandem_accumulate(runtime, data, count, &sum) == TANDEM_OK) return sum;
  return sum_in_software(data, count); /* no runtime, or it failed (e.g. the daemon went away) */
}

EXPORT const char* accumulate_backend(void) {
  pthread_once(&open_once, open_runtime);
  return backend;
}
