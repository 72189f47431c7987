// What `tandem trace export` and `tandem trace report` make of a dump tandemd hands out
// (abi/trace.hpp, docs/tracing.md): the records joined across processes (the client library's call
// and job records with the dispatcher's job records, by session and packet tag), a Chrome/Perfetto
// trace (a track per slot, per session and per client thread, flows linking a job's phases across
// processes), CSV, and the latency breakdown per function and access method.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "abi/status.hpp"
#include "abi/trace.hpp"
#include "rt/trace.hpp"

namespace tandem::client {

using rt::TraceFile;

// One dispatcher job (or refused packet) with what the client library recorded of it, if anything.
struct TracedJob {
  const abi::trace::Record* job = nullptr;         // Kind::job or Kind::refused
  const abi::trace::Record* client_job = nullptr;  // Kind::client_job of the same session and tag
  const abi::trace::Record* call = nullptr;        // the call it belongs to
  uint32_t pid = 0;                                // the client process (0: unknown)
};

// Dispatcher records in completion order, each joined with its client records.
std::vector<TracedJob> join_jobs(const TraceFile& file);

// Chrome trace event JSON (ui.perfetto.dev and chrome://tracing open it).
std::string perfetto_json(const TraceFile& file);
// One row per dispatcher record, its client phases joined; timestamps in CLOCK_MONOTONIC ns.
std::string jobs_csv(const TraceFile& file);
// One row per high-level call.
std::string calls_csv(const TraceFile& file);

// ---- the latency breakdown (seed 001 Table 6, GPPU Fig 12, HybridOS Fig 4) ----

struct PhaseStats {
  std::string phase;
  size_t samples = 0;
  double median_us = 0;
  double p99_us = 0;
  double mean_us = 0;
};

struct BreakdownGroup {
  std::string function;
  std::string method;
  size_t jobs = 0;
  size_t failed = 0;           // jobs that completed with an error
  double median_bytes = 0;     // host bytes in + out per job
  std::vector<PhaseStats> phases;  // in the order they happen; phases no job of the group went through are left out
  PhaseStats total;            // first to last phase seen (publish or visible -> observed or completed)
};

struct CallGroup {
  std::string function;
  std::string method;
  size_t calls = 0;
  size_t hardware = 0;  // calls that ran some work on an accelerator
  std::vector<PhaseStats> phases;  // plan (entered -> split), run (split -> returned)
  PhaseStats total;
};

struct Breakdown {
  std::vector<BreakdownGroup> jobs;
  std::vector<CallGroup> calls;
  size_t refused = 0;
};

Breakdown breakdown(const TraceFile& file);
// The tables, for a terminal.
std::string breakdown_text(const Breakdown& b, const TraceFile& file);
// group,phase,samples,median_us,p99_us,mean_us: the data of the stacked-bar plot.
std::string breakdown_csv(const Breakdown& b);

}  // namespace tandem::client
