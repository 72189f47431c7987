// Per-call CallReport histogram of work calls (200k cycles) from T threads: jobs, withdrawals, CPU steps, waits.
// Uses the internal C++ API. Build (from the repository root, after a release build):
//   g++ -O2 -std=c++20 -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -I src -I include call_report_probe.cc build/lib/libtandem.a \
//       -ltomlplusplus -lfmt -lOpenCL -L/usr/local/cuda/lib64 -lcudart_static -lrt -lpthread -ldl
// Run:   TANDEM_LEARNED_DIR=off ./a.out T CALLS [hw|norebal]
#include "client/runtime.hpp"
#include "funcs/function.hpp"
#include <cstdio>
#include <thread>
#include <vector>
#include <atomic>
#include <mutex>
#include <map>
#include <chrono>
#include <string>
using namespace tandem;
int main(int argc, char** argv) {
  unsigned T = atoi(argv[1]); unsigned calls = atoi(argv[2]); uint64_t units = 200000;
  client::RuntimeOptions ro; ro.embedded = true; ro.mode = (argc > 3 && std::string(argv[3]) == "hw") ? client::Mode::hw : client::Mode::auto_mode;
  if (argc > 3 && std::string(argv[3]) == "norebal") ro.partition.rebalance = false;
  auto r = client::Runtime::open(ro); if (!r) { puts(r.message().c_str()); return 1; }
  auto rt = std::move(r).value();
  const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_WORK);
  std::mutex mu; std::map<std::string,int> hist;
  std::vector<std::thread> th; std::atomic<bool> go{false};
  for (unsigned k = 0; k < T; ++k) th.emplace_back([&]{
    while(!go) std::this_thread::yield();
    for (unsigned c = 0; c < calls; ++c) {
      const uint64_t args[1] = {units}; funcs::Call call; funcs::BufferList b; funcs::describe_call(*fn, args, call, b);
      int64_t v; client::CallReport rep; rt->run(*fn, call, v, &rep);
      char key[200]; snprintf(key, sizeof key, "through=%d part=%d alpha=%.2f jobs=%u cancels=%u sw_steps=%u sw_units=%llu waits=%u",
        rep.through_partitioner, rep.partitioned, rep.alpha, (unsigned)rep.counters.jobs_submitted, (unsigned)rep.counters.jobs_cancelled,
        (unsigned)rep.counters.sw_steps, (unsigned long long)rep.counters.sw_units, (unsigned)rep.counters.waits);
      std::lock_guard l(mu); hist[key]++;
    }});
  auto t0 = std::chrono::steady_clock::now(); go = true; for (auto& x : th) x.join();
  printf("makespan %.0f us\n", std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  for (auto& [k, n] : hist) printf("%5d  %s\n", n, k.c_str());
}
