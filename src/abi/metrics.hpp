// Seqlock access to the metrics page: the driver writes an entry, any number of readers copy it and
// never see a torn update. Fields are accessed through atomic_ref (relaxed) so that a racing read is
// defined behaviour; the sequence word carries the ordering.
#pragma once

#include <cstring>

#include "abi/atomics.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::abi {

static_assert(TANDEM_FN_MAX == 256, "the metrics page has one entry per function id");

// A plain copy of one entry.
struct FunctionMetrics {
  uint16_t accelerators = 0;
  uint16_t configuring = 0;
  uint32_t queued_jobs = 0;
  uint32_t running_jobs = 0;
  uint64_t queued_work = 0;
  uint64_t outstanding_work = 0;
  uint64_t submitted_work = 0;
  double queue_wait_s = 0;
  double effective_throughput = 0;
  double utilization = 0;
  double demand = 0;
  double demand_per_accelerator = 0;
  uint64_t requests = 0;

  bool operator==(const FunctionMetrics&) const = default;
};

void init_metrics_page(tandem_metrics_page_t& page, uint32_t slot_count, uint64_t period_ns);

// Writer (one thread): publishes `m` for `function`.
void write_metrics(tandem_metrics_page_t& page, uint16_t function, const FunctionMetrics& m);
void write_page_header(tandem_metrics_page_t& page, uint64_t updated_ns, double available_bandwidth,
                       double engine_cores = 0);

// Reader (any thread or process): a consistent copy. Retries while a write is in progress, at most
// `max_tries` times (a dead writer cannot hang a reader); false if no consistent copy was obtained.
bool read_metrics(const tandem_metrics_page_t& page, uint16_t function, FunctionMetrics& out, int max_tries = 1000);

}  // namespace tandem::abi
