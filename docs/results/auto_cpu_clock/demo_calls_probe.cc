// The `make run` demo's calls (T threads x 100 pairs of tandem_accumulate over 256 KiB and tandem_work of
// 200k cycles, embedded runtime, built-in default fabric), printing each phase's makespan and how many
// calls ran wholly in software (docs/results/auto.md, "X_c from the CPU clock").
//   g++ -O2 -std=c++20 demo_calls_probe.cc -o /tmp/demo_calls_probe -I include -L build/lib -ltandem \
//       -Wl,-rpath,$PWD/build/lib -lpthread
//   /tmp/demo_calls_probe T MODE REPS    MODE: 0 auto, 1 sw, 2 hw, 9 = sw, hw, auto in one process (the demo)
#include <tandem/tandem.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

double phase(int threads, tandem_mode_t mode) {
  tandem_options_t o;
  tandem_options_init(&o);
  o.embedded = 1;
  o.mode = mode;
  tandem_runtime_t* rt = nullptr;
  if (tandem_open(&o, &rt) != TANDEM_OK) {
    std::puts(tandem_last_error());
    return 0;
  }
  std::vector<std::vector<int32_t>> in(threads, std::vector<int32_t>(65536, 3));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> th;
  for (int t = 0; t < threads; ++t) {
    th.emplace_back([&, t] {
      for (int c = 0; c < 100; ++c) {
        int64_t s = 0;
        tandem_accumulate(rt, in[t].data(), 65536, &s);
        tandem_work(rt, 200000);
      }
    });
  }
  for (auto& x : th) x.join();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  tandem_call_stats_t st;
  tandem_get_call_stats(rt, &st, sizeof st);
  std::printf("mode %d %.1f ms sw_calls %lu acc %lu jobs %lu\n", static_cast<int>(mode), ms,
              static_cast<unsigned long>(st.sw_calls), static_cast<unsigned long>(st.accelerated_calls),
              static_cast<unsigned long>(st.hw_jobs));
  tandem_close(rt);
  return ms;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  const int mode = argc > 2 ? std::atoi(argv[2]) : 0;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 10;
  for (int i = 0; i < reps; ++i) {
    if (mode == 9) {
      phase(threads, TANDEM_MODE_SW);
      phase(threads, TANDEM_MODE_HW);
      phase(threads, TANDEM_MODE_AUTO);
    } else {
      phase(threads, static_cast<tandem_mode_t>(mode));
    }
  }
}
