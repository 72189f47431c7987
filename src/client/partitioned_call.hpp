// The driver of the workload partitioner on the calling thread: every high-level call (Runtime::run)
// goes through here. It performs the steps of engine::Partitioner (thesis Algorithm 2, docs/model.md
// "Driver protocol") with real resources: run_sw runs the function's software path on a range and
// combines the partial value; submit_job slices the call and dispatches one job with its own
// completion record; submit_demand sends a demand-only packet; cancel_job sends a cancel packet; wait
// polls the outstanding records (spin, then futex_waitv on all of them) until an event or wake_at.
#pragma once

#include <cstdint>

#include "client/runtime.hpp"

namespace tandem::client {

// Jobs one call may have outstanding: thread records [0, kMaxCallJobs) are the jobs', by job id.
inline constexpr uint32_t kMaxCallJobs = 48;
// The runtime's partitioners use fewer: n_j jobs a round plus top-ups; a smaller table is cheaper to
// reset and scan on every call.
inline constexpr uint32_t kDefaultCallJobs = 16;
// The thread record that answers this thread's cancel packets.
inline constexpr uint32_t kCancelRecord = Runtime::kThreadRecords - 1;
static_assert(kMaxCallJobs < kCancelRecord, "job records and the cancel record must not overlap");

// One high-level call of `fn` over all of `call`'s work units, split per the runtime's mode and cost
// parameters. The partial values are combined with fn.combine. Returns ok unless the runtime itself
// failed (e.g. DISCONNECTED); refused jobs are redone in software.
Status run_partitioned(Runtime& runtime, const funcs::FunctionInfo& fn, const funcs::Call& call, int64_t& value,
                       CallReport* report);

// The same with a caller-owned partitioner, whose parameters and configuration replace the runtime's
// policy for this call (experiments sweep fixed splits this way without touching the runtime).
Status run_partitioned(Runtime& runtime, const funcs::FunctionInfo& fn, const funcs::Call& call,
                       engine::Partitioner& partitioner, int64_t& value, CallReport* report);

// A job size of `call`, in units, whose host buffers (device addresses are not staged) are each at most
// `max_buffer_bytes` wherever the job lies in the call: whole rows (units_per_row), about one row or
// granule below the largest; UINT64_MAX when the whole call fits (or there is no bound, 0); 0 when not
// even the smallest job fits.
uint64_t units_within_buffer_bound(const funcs::FunctionInfo& fn, const funcs::Call& call, uint64_t max_buffer_bytes);
// The units of `call` its smallest job covers: a row of pixels or of C for a function whose jobs round
// out to whole rows (sobel, matmul), else the granularity. A job of k rows' units covers k rows.
uint64_t units_per_row(const funcs::FunctionInfo& fn, const funcs::Call& call);
// What the partitioner may hand the hardware as one job of `call` (Partitioner::set_max_job_units; 0:
// no bound): the engine's bound on a job's time and the devices' largest job buffer, whichever is lower;
// also 0 where no job of the call fits at all (its jobs fail as too large, and software takes over).
uint64_t max_job_units(const Runtime& runtime, const funcs::FunctionInfo& fn, const funcs::Call& call);

// The monitor's live figures for `function` from the runtime's metrics page (thesis 5.4.6) into
// `out`. False, leaving `out` as it was, if no consistent copy could be read (the seqlock kept
// changing under the reader).
bool read_live_metrics(const Runtime& runtime, uint16_t function, model::LiveMetrics& out);
// The same as a value; n_a = 0 when no consistent copy could be read.
model::LiveMetrics live_metrics(const Runtime& runtime, uint16_t function);

}  // namespace tandem::client
