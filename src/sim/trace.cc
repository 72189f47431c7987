// Timeline files of one traced run (thesis Fig 5.13/5.14): Chrome/Perfetto trace JSON and CSVs for
// the resident-accelerator heat map.
#include <cstdio>

#include "sim/experiment.hpp"

namespace tandem::sim {

namespace {

void append(std::string& out, const char* fmt, auto... args) {
  char buf[320];
  const int n = std::snprintf(buf, sizeof buf, fmt, args...);
  if (n > 0) out.append(buf, static_cast<size_t>(std::min<int>(n, sizeof buf - 1)));
}

int work_index(engine::FunctionId f) { return static_cast<int>(f) - TANDEM_FN_WORK_BASE; }

}  // namespace

std::string chrome_trace_json(const SimResult& r, const std::vector<AppSpec>& apps) {
  // Chrome's trace event format: complete events ("X") in microseconds; pid 1 = applications, pid 2 =
  // accelerator slots; metadata events name the rows.
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  append(out, "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"applications\"}},\n");
  append(out, "{\"ph\":\"M\",\"pid\":2,\"name\":\"process_name\",\"args\":{\"name\":\"accelerator slots\"}},\n");
  for (size_t a = 0; a < apps.size(); ++a) {
    append(out, "{\"ph\":\"M\",\"pid\":1,\"tid\":%zu,\"name\":\"thread_name\",\"args\":{\"name\":\"app %zu\"}},\n", a, a);
  }
  uint32_t max_slot = 0;
  for (const TraceSpan& s : r.trace) {
    if (s.kind != TraceSpan::call) max_slot = std::max(max_slot, s.lane + 1);
  }
  for (uint32_t s = 0; s < max_slot; ++s) {
    append(out, "{\"ph\":\"M\",\"pid\":2,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":\"slot %u\"}},\n", s, s);
  }
  bool first = true;
  for (const TraceSpan& s : r.trace) {
    if (s.kind == TraceSpan::resident) continue;  // the heat map shows residency
    if (!first) out += ",\n";
    first = false;
    const double ts = static_cast<double>(s.begin) * 1e-3;
    const double dur = static_cast<double>(s.end - s.begin) * 1e-3;
    switch (s.kind) {
      case TraceSpan::call:
        append(out,
               "{\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"work%d\",\"cat\":\"call\","
               "\"args\":{\"sw_only_ms\":%.3f}}",
               s.lane, ts, dur, work_index(s.function), s.sw_only_s * 1e3);
        break;
      case TraceSpan::job:
        append(out,
               "{\"ph\":\"X\",\"pid\":2,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"work%d\",\"cat\":\"job\","
               "\"args\":{\"app\":%u}}",
               s.lane, ts, dur, work_index(s.function), s.app);
        break;
      case TraceSpan::configure:
        append(out,
               "{\"ph\":\"X\",\"pid\":2,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"configure work%d\","
               "\"cat\":\"reconfiguration\"}",
               s.lane, ts, dur, work_index(s.function));
        break;
      case TraceSpan::resident:
        break;
    }
  }
  out += "\n]}\n";
  return out;
}

std::string residency_csv(const SimResult& r) {
  std::string out = "slot,function,begin_s,end_s\n";
  for (const TraceSpan& s : r.trace) {
    if (s.kind != TraceSpan::resident) continue;
    append(out, "%u,%d,%.9f,%.9f\n", s.lane, work_index(s.function), static_cast<double>(s.begin) * 1e-9,
           static_cast<double>(s.end) * 1e-9);
  }
  return out;
}

std::string calls_csv(const SimResult& r) {
  std::string out = "app,function,begin_s,end_s,sw_only_s\n";
  for (const TraceSpan& s : r.trace) {
    if (s.kind != TraceSpan::call) continue;
    append(out, "%u,%d,%.9f,%.9f,%.9f\n", s.lane, work_index(s.function), static_cast<double>(s.begin) * 1e-9,
           static_cast<double>(s.end) * 1e-9, s.sw_only_s);
  }
  return out;
}

}  // namespace tandem::sim
