#include "funcs/throughput.hpp"


#include <algorithm>
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

}  // namespace

double software_throughput(uint16_t function) {
  if (function == TANDEM_FN_WORK || (function >= TANDEM_FN_WORK_BASE &&
                                     function < TANDEM_FN_WORK_BASE + TANDEM_WORK_FUNCTIONS)) {
    return cycles_per_second();  // one unit is one cycle by definition
  }
  if (function == TANDEM_FN_ACCUMULATE) {
    static const double rate = measure_accumulate();
    return rate;
  }
  if (function == TANDEM_FN_LIST_WALK) {
    static const double rate = measure_list_walk();
    return rate;
  }
  // The kernels with Verilog accelerators: measured once each, on first use.
  static std::once_flag once[4];
  static double rates[4];
  if (function >= TANDEM_FN_SOBEL && function <= TANDEM_FN_PRIORITY_QUEUE) {
    const size_t i = function - TANDEM_FN_SOBEL;
    std::call_once(once[i], [&] { rates[i] = kernels::measure_software_throughput(function); });
    return rates[i];
  }
  return 0;
}

}  // namespace tandem::funcs
