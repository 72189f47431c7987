#include "funcs/throughput.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <mutex>
#include <vector>

#include "funcs/function.hpp"
#include "base/clock.hpp"
#include "funcs/kernels.hpp"
#include "funcs/ref/list_walk_ref.hpp"

namespace tandem::funcs {

namespace {

// Best rate over several runs of the software path on a cache-resident input.
double measure_accumulate() {
  std::vector<int32_t> data(64 * 1024);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i * 2654435761u);
  Call call;
  call.function = TANDEM_FN_ACCUMULATE;
  call.workload = data.size() * sizeof(int32_t);
  call.buffers[0] = data.data();
  const FunctionInfo* fn = find_function(TANDEM_FN_ACCUMULATE);
  double best = 0;
  volatile int64_t sink = 0;
  for (int run = 0; run < 9; ++run) {
    const int64_t t0 = tandem::now_ns();
    sink = sink + fn->run_sw(call, 0, call.workload);
    const int64_t t1 = tandem::now_ns();
    if (t1 > t0) best = std::max(best, static_cast<double>(call.workload) * 1e9 / static_cast<double>(t1 - t0));
  }
  return best;
}

// Nodes per second of the software walk over a list of seed 004 Table 1's largest length (128K nodes,
// 2 MiB) laid out at random.
double measure_list_walk() {
  std::vector<tandem_list_node_t> nodes(128 * 1024);
  const tandem_list_node_t* head = ref::link_random_list(nodes, 4);
  double best = 0;
  volatile int64_t sink = 0;
  for (int run = 0; run < 2; ++run) {
    const int64_t t0 = tandem::now_ns();
    sink = sink + ref::list_walk(head, nodes.size());
    const int64_t t1 = tandem::now_ns();
    if (t1 > t0) best = std::max(best, static_cast<double>(nodes.size()) * 1e9 / static_cast<double>(t1 - t0));
  }
  return best;
}

bool is_work(uint16_t function) {
  return function == TANDEM_FN_WORK ||
         (function >= TANDEM_FN_WORK_BASE && function < TANDEM_FN_WORK_BASE + TANDEM_WORK_FUNCTIONS);
}

// The functions whose rate is measured (the others have none, or a `work` unit's).
bool measured(uint16_t function) {
  return function == TANDEM_FN_ACCUMULATE || function == TANDEM_FN_LIST_WALK ||
         (function >= TANDEM_FN_SOBEL && function <= TANDEM_FN_PRIORITY_QUEUE);
}

double measure(uint16_t function) {
  if (function == TANDEM_FN_ACCUMULATE) return measure_accumulate();
  if (function == TANDEM_FN_LIST_WALK) return measure_list_walk();
  // The kernels with Verilog accelerators.
  if (function >= TANDEM_FN_SOBEL && function <= TANDEM_FN_PRIORITY_QUEUE) return kernels::measure_software_throughput(function);
  return 0;
}

// The process's figures: 0 until measured or adopted. Measuring holds the lock (one at a time; each
// takes a few ms), reading a known figure does not.
struct Rates {
  std::mutex mutex;
  std::array<std::atomic<double>, TANDEM_FN_MAX> known{};
};

Rates& rates() {
  static Rates r;
  return r;
}

}  // namespace

double software_throughput(uint16_t function) {
  if (is_work(function)) return cycles_per_second();  // one unit is one cycle by definition
  if (function >= TANDEM_FN_MAX) return 0;
  Rates& r = rates();
  if (const double v = r.known[function].load(std::memory_order_acquire); v > 0) return v;
  std::lock_guard lock(r.mutex);
  double v = r.known[function].load(std::memory_order_relaxed);
  if (v <= 0) {
    v = measure(function);
    if (v > 0) r.known[function].store(v, std::memory_order_release);
  }
  return v;
}

bool adopt_software_throughput(uint16_t function, double units_per_second) {
  // Units per second of any function on any CPU lie far inside [1, 1e13]; outside, the figure is wrong.
  if (!measured(function) || !(units_per_second >= 1 && units_per_second <= 1e13)) return false;
  Rates& r = rates();
  std::lock_guard lock(r.mutex);
  if (r.known[function].load(std::memory_order_relaxed) > 0) return false;
  r.known[function].store(units_per_second, std::memory_order_release);
  return true;
}

}  // namespace tandem::funcs
