// Repeated tandem_accumulate calls of N ints in session memory on the embedded runtime with the
// configuration given (an OpenCL device), in hw mode, with the access method of $TANDEM_ACCESS: the
// median and minimum time per call, and tandem_open's time (the device's start-up). With [device.opencl] access =
// "job" a copy on session memory is the device's alone; with access = "copy" the library stages it
// first as well (docs/access.md, "A device that copies"). Build and run from the repository root:
//   gcc -O2 docs/results/opencl/copy_probe.c -Iinclude -Lbuild/lib -ltandem -Wl,-rpath,$PWD/build/lib -o /tmp/copy_probe
//   printf '[device]\nkinds = ["opencl"]\n[device.opencl]\nslots = 2\nresident = ["accumulate", "accumulate"]\naccess = "job"\n' > /tmp/job.toml
//   TANDEM_ACCESS=copy TANDEM_LEARNED_DIR=off /tmp/copy_probe 4194304 25 /tmp/job.toml
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "tandem/tandem.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int by_value(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return (x > y) - (x < y); }
int main(int argc, char** argv) {
  if (argc < 4) { fprintf(stderr, "usage: copy_probe N REPEATS CONFIG\n"); return 2; }
  size_t n = (size_t)atol(argv[1]); int reps = atoi(argv[2]);
  tandem_options_t o; tandem_options_init(&o); o.embedded = 1; o.config_path = argv[3]; o.mode = TANDEM_MODE_HW;
  double t_open = now();
  tandem_runtime_t* rt; if (tandem_open(&o, &rt)) { printf("open: %s\n", tandem_last_error()); return 1; }
  t_open = now() - t_open;
  int32_t* d = tandem_alloc(rt, n * 4); int64_t ref = 0; for (size_t i = 0; i < n; ++i) { d[i] = (int32_t)(i * 2654435761u); ref += d[i]; }
  double* t = malloc(sizeof(double) * reps); int wrong = 0;
  for (int r = 0; r < reps; ++r) {
    int64_t s = 0; double t0 = now(); int rc = tandem_accumulate(rt, d, n, &s); t[r] = now() - t0;
    wrong += rc != 0 || s != ref;
  }
  qsort(t, reps, sizeof(double), by_value);
  printf("n=%zu (%.0f MiB) access=%s: median %.2f ms, min %.2f ms over %d calls, %d wrong; tandem_open %.0f ms\n", n,
         n * 4.0 / (1 << 20), getenv("TANDEM_ACCESS") ? getenv("TANDEM_ACCESS") : "auto", t[reps / 2] * 1e3, t[0] * 1e3, reps,
         wrong, t_open * 1e3);
  tandem_free(rt, d); tandem_close(rt); return wrong != 0;
}
