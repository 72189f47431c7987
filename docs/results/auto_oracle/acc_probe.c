// T threads x CALLS (60) tandem_accumulate of N ints (256 Ki = 1 MiB) on the embedded default (or $PROBE_CONFIG): makespan and
// how the calls split (tandem_get_call_stats). The case where auto loses in every run of `tandem
// experiment auto` (docs/results/auto.md, 12:05 UTC section). Build and run from the repository root:
//   gcc -O2 docs/results/auto_oracle/acc_probe.c -Iinclude -Lbuild/lib -ltandem -Wl,-rpath,$PWD/build/lib -lpthread -o /tmp/acc_probe
//   for m in sw hw auto; do TANDEM_LEARNED_DIR=off /tmp/acc_probe 2 $m; done
//   TANDEM_LEARNED_DIR=off /tmp/acc_probe 2 hw 16384 960    # T mode [N [CALLS]]: 960 calls of 64 KiB
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tandem/tandem.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static tandem_runtime_t* rt; static int32_t* bufs[16];
static int N = 256 * 1024, CALLS = 60;
static void* worker(void* arg) { int32_t* b = arg; int64_t s; for (int i = 0; i < CALLS; ++i) tandem_accumulate(rt, b, N, &s); return NULL; }
int main(int argc, char** argv) {
  int T = atoi(argv[1]); const char* m = argv[2]; if (argc > 3) N = atoi(argv[3]); if (argc > 4) CALLS = atoi(argv[4]);
  tandem_options_t o; tandem_options_init(&o); o.embedded = 1; o.config_path = getenv("PROBE_CONFIG");
  o.mode = !strcmp(m, "sw") ? TANDEM_MODE_SW : !strcmp(m, "hw") ? TANDEM_MODE_HW : TANDEM_MODE_AUTO;
  if (tandem_open(&o, &rt)) { puts("open"); return 1; }
  for (int t = 0; t < T; ++t) { bufs[t] = malloc((size_t)N * 4); for (int i = 0; i < N; ++i) bufs[t][i] = i; }
  pthread_t th[16]; double t0 = now();
  for (int t = 0; t < T; ++t) pthread_create(&th[t], NULL, worker, bufs[t]);
  for (int t = 0; t < T; ++t) pthread_join(th[t], NULL);
  double t1 = now();
  tandem_call_stats_t st; tandem_get_call_stats(rt, &st, sizeof st);
  printf("T=%d %-4s %7.2f ms  calls %lu sw_calls %lu hw_jobs %lu hw_frac %.2f fallbacks %lu\n", T, m, (t1 - t0) * 1e3, st.calls, st.sw_calls, st.hw_jobs,
         (double)st.hw_units / (st.hw_units + st.sw_units + 1e-9), st.fallbacks);
  tandem_close(rt); return 0;
}
