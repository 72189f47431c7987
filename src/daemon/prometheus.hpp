// tandemd's figures in the Prometheus text exposition format (version 0.0.4): what `tandem status`
// shows, as counters and gauges with Prometheus names and labels (docs/tracing.md lists them).
// Tested against the official parser (prometheus_client) in tests/python.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "abi/metrics.hpp"
#include "engine/translation.hpp"
#include "rt/dispatcher.hpp"
#include "rt/trace.hpp"

namespace tandem::daemon {

// Everything tandemd reports, taken at one moment from threads that may read it safely (the
// dispatcher's snapshot, the metrics page's seqlock, the TLB through the dispatcher, the collector's
// counters). `tandem status --json` and /metrics are both made from it.
struct Figures {
  rt::Snapshot snapshot;
  engine::TlbStats tlb;
  std::vector<std::pair<uint16_t, abi::FunctionMetrics>> functions;  // the snapshot's functions, same order
  rt::TraceCounters trace;
  double uptime_s = 0;
};

// Appends families in the text format. Each family is announced (HELP, TYPE) once, before its samples.
class PrometheusText {
 public:
  using Labels = std::vector<std::pair<std::string_view, std::string>>;
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const Labels& labels, double value);
  void sample(std::string_view name, double value) { sample(name, {}, value); }
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// The text of /metrics.
std::string prometheus_text(const Figures& figures);

// A slot state's name ("empty", "configuring", "idle", "busy").
const char* slot_state_name(engine::SlotState state);
// A function's catalog name ("fn<id>" if it has none).
std::string function_name(uint16_t function);

}  // namespace tandem::daemon
