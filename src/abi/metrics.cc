#include "abi/metrics.hpp"

#include <bit>

namespace tandem::abi {

namespace {

template <class T>
void put(T& field, T value) {
  store_relaxed(field, value);
}
void put(double& field, double value) { store_relaxed(reinterpret_cast<uint64_t&>(field), std::bit_cast<uint64_t>(value)); }

template <class T>
T get(const T& field) {
  return load_relaxed(field);
}
double get(const double& field) { return std::bit_cast<double>(load_relaxed(reinterpret_cast<const uint64_t&>(field))); }

}  // namespace

void init_metrics_page(tandem_metrics_page_t& page, uint32_t slot_count, uint64_t period_ns) {
  std::memset(&page, 0, sizeof page);
  page.k_magic = TANDEM_METRICS_MAGIC;
  page.k_version = TANDEM_ABI_VERSION;
  page.k_function_count = TANDEM_FN_MAX;
  page.k_slot_count = slot_count;
  page.k_period_ns = period_ns;
}

void write_metrics(tandem_metrics_page_t& page, uint16_t function, const FunctionMetrics& m) {
  tandem_function_metrics_t& e = page.functions[function];
  const uint32_t seq = load_relaxed(e.seq);
  store_relaxed(e.seq, seq + 1);                        // odd: write in progress
  std::atomic_thread_fence(std::memory_order_release);  // the odd seq is visible before any field
  put(e.accelerators, m.accelerators);
  put(e.configuring, m.configuring);
  put(e.queued_jobs, m.queued_jobs);
  put(e.running_jobs, m.running_jobs);
  put(e.queued_work, m.queued_work);
  put(e.outstanding_work, m.outstanding_work);
  put(e.submitted_work, m.submitted_work);
  put(e.queue_wait_s, m.queue_wait_s);
  put(e.effective_throughput, m.effective_throughput);
  put(e.utilization, m.utilization);
  put(e.demand, m.demand);
  put(e.demand_per_accelerator, m.demand_per_accelerator);
  put(e.requests, m.requests);
  store_release(e.seq, seq + 2);  // pairs with the reader's acquire of seq: fields before the even seq
}

void write_page_header(tandem_metrics_page_t& page, uint64_t updated_ns, double available_bandwidth,
                       double engine_cores) {
  const uint32_t seq = load_relaxed(page.k_seq);
  store_relaxed(page.k_seq, seq + 1);
  std::atomic_thread_fence(std::memory_order_release);
  put(page.k_updated_ns, updated_ns);
  put(page.k_available_bandwidth, available_bandwidth);
  put(page.k_engine_cores, engine_cores);
  store_release(page.k_seq, seq + 2);
}

bool read_metrics(const tandem_metrics_page_t& page, uint16_t function, FunctionMetrics& out, int max_tries) {
  const tandem_function_metrics_t& e = page.functions[function];
  for (int i = 0; i < max_tries; ++i) {
    const uint32_t before = load_acquire(e.seq);  // pairs with the writer's final release
    if (before & 1u) {
      cpu_relax();
      continue;
    }
    out.accelerators = get(e.accelerators);
    out.configuring = get(e.configuring);
    out.queued_jobs = get(e.queued_jobs);
    out.running_jobs = get(e.running_jobs);
    out.queued_work = get(e.queued_work);
    out.outstanding_work = get(e.outstanding_work);
    out.submitted_work = get(e.submitted_work);
    out.queue_wait_s = get(e.queue_wait_s);
    out.effective_throughput = get(e.effective_throughput);
    out.utilization = get(e.utilization);
    out.demand = get(e.demand);
    out.demand_per_accelerator = get(e.demand_per_accelerator);
    out.requests = get(e.requests);
    std::atomic_thread_fence(std::memory_order_acquire);  // field loads before the re-check of seq
    if (load_relaxed(e.seq) == before) return true;
  }
  return false;
}

}  // namespace tandem::abi
