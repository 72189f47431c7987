// One tandem_accumulate call of N ints on the embedded runtime with the configuration given (an OpenCL
// device), in hw mode (or auto with a third argument): its time, value check and tandem_get_call_stats.
// docs/devices.md, "The largest job". Build and run from the repository root:
//   gcc -O2 docs/results/opencl/big_call_probe.c -Iinclude -Lbuild/lib -ltandem -Wl,-rpath,$PWD/build/lib -o /tmp/big_call_probe
//   printf '[device]\nkinds = ["opencl"]\n[device.opencl]\nslots = 2\nresident = ["accumulate", "accumulate"]\n' > /tmp/ocl.toml
//   POCL_MEMORY_LIMIT=1 TANDEM_LEARNED_DIR=off /tmp/big_call_probe 419430400 /tmp/ocl.toml   # 1600 MiB, 256 MiB largest allocation
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "tandem/tandem.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char** argv) {
  size_t n = (size_t)atol(argv[1]);
  tandem_options_t o; tandem_options_init(&o); o.embedded = 1; o.config_path = argv[2]; o.mode = argc > 3 ? TANDEM_MODE_AUTO : TANDEM_MODE_HW;
  tandem_runtime_t* rt; if (tandem_open(&o, &rt)) { printf("open: %s\n", tandem_last_error()); return 1; }
  int32_t* d = malloc(n * 4); int64_t ref = 0; for (size_t i = 0; i < n; ++i) { d[i] = (int32_t)(i * 2654435761u); ref += d[i]; }
  int64_t s = 0; double t0 = now(); int rc = tandem_accumulate(rt, d, n, &s); double t1 = now();
  tandem_call_stats_t st; tandem_get_call_stats(rt, &st, sizeof st);
  printf("n=%zu (%.0f MiB) rc=%d ok=%d %.1f ms hw_jobs %lu hw_frac %.2f fallbacks %lu\n", n, n * 4.0 / (1 << 20), rc, s == ref, (t1 - t0) * 1e3, st.hw_jobs,
         (double)st.hw_units / (st.hw_units + st.sw_units + 1e-9), st.fallbacks);
  tandem_close(rt); return 0;
}
