#include "client/trace_export.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <queue>
#include <unordered_map>

#include "base/stats.hpp"
#include "client/access.hpp"
#include "funcs/function.hpp"

namespace tandem::client {

namespace {

using abi::trace::Kind;
using abi::trace::Record;
namespace tr = abi::trace;

void append(std::string& out, const char* fmt, auto... args) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof buf, fmt, args...);
  if (n > 0) out.append(buf, static_cast<size_t>(std::min<int>(n, sizeof buf - 1)));
}

bool is(const Record& r, Kind k) { return r.kind == static_cast<uint16_t>(k); }

std::string function_name(uint16_t f) {
  const funcs::FunctionInfo* fn = funcs::find_function(f);
  return fn != nullptr ? std::string(fn->name) : "fn" + std::to_string(f);
}

std::string status_name(uint8_t wire) { return std::string(to_string(from_wire(wire))); }

// A JSON string's body: quotes and backslashes escaped, control characters dropped, and bytes that are
// not UTF-8 (a dump is a file anyone may hand in) replaced by U+FFFD, so that the JSON stays valid.
std::string escaped(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') out += '\\';
      if (c >= 0x20) out += static_cast<char>(c);
      ++i;
      continue;
    }
    // The sequence's length from its lead byte (no overlong two-byte forms, nothing past U+10FFFF).
    const size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    bool valid = n > 0 && i + n <= s.size();
    for (size_t k = 1; valid && k < n; ++k) valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (valid && n == 3) {  // no overlong forms, no surrogates
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      valid = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
    }
    if (valid && n == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      valid = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (valid) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  return out;
}

// Microseconds with nanosecond digits: exact for integer ns, so nested slices never poke out of
// their parents by rounding.
std::string us(int64_t ns) {
  char buf[40];
  const int64_t whole = ns / 1000, frac = ns % 1000;
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, whole, frac < 0 ? -frac : frac);
  return buf;
}

const char* const kJobPhaseNames[tr::kJobPhases] = {"visible",     "decoded",     "queued",       "started",
                                                    "transfer_in", "device_done", "transfer_out", "completed"};

std::string device_of_slot(const TraceFile& f, uint32_t slot) {
  for (const tr::DumpSlot& s : f.slots) {
    if (s.slot == slot) return std::string(s.device_name, strnlen(s.device_name, sizeof s.device_name));
  }
  return "";
}

uint32_t pid_of(const TraceFile& f, uint32_t session) {
  for (const tr::DumpSession& s : f.sessions) {
    if (s.session == session) return s.pid;
  }
  return 0;
}

// The end of a job's time on its slot: after the scatter if there was one.
int64_t slot_end(const Record& r) {
  return std::max({r.t[tr::kStarted], r.t[tr::kTransferIn], r.t[tr::kDeviceDone], r.t[tr::kTransferOut]});
}

uint64_t key(uint32_t session, uint64_t id) { return (uint64_t{session} << 44) ^ id; }

}  // namespace

std::vector<TracedJob> join_jobs(const TraceFile& f) {
  std::unordered_map<uint64_t, const Record*> client_jobs, calls;
  for (const Record& r : f.records) {
    if (is(r, Kind::client_job)) client_jobs[key(r.session, r.id)] = &r;
    if (is(r, Kind::call)) calls[key(r.session, r.id)] = &r;
  }
  std::vector<TracedJob> out;
  for (const Record& r : f.records) {
    if (!is(r, Kind::job) && !is(r, Kind::refused)) continue;
    TracedJob j;
    j.job = &r;
    j.pid = pid_of(f, r.session);
    if (r.id != 0) {
      if (auto it = client_jobs.find(key(r.session, r.id)); it != client_jobs.end()) {
        j.client_job = it->second;
        if (auto c = calls.find(key(r.session, it->second->parent)); c != calls.end()) j.call = c->second;
      }
    }
    out.push_back(j);
  }
  return out;
}

// ---------------------------------------------------------------- Chrome / Perfetto JSON

std::string perfetto_json(const TraceFile& f) {
  // Tracks: the daemon's process holds one thread track per slot; each session is a process of its own
  // whose thread tracks are lanes of its jobs in flight (a job on the first lane free when it became
  // visible, so that slices never overlap on one track); each client thread is a thread of its real
  // process. Flows (v2: bind_id with flow_out / flow_in) link a job's publish on the client thread,
  // its life in the session, its run on the slot and its completion seen by the client.
  const uint32_t daemon_pid = f.header.daemon_pid != 0 ? f.header.daemon_pid : 1;
  constexpr uint32_t kSlotTid = 0x7f000000;     // + slot, in the daemon's process
  constexpr uint32_t kSessionPid = 0x40000000;  // + session: a session's lanes
  constexpr uint32_t kClientPid = 0x60000000;   // + session: a client whose pid is unknown
  const auto lane_tid = [](uint32_t session, uint32_t lane) { return 0x40000000u + (session << 12) + lane; };
  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"tandem trace export\"},\"traceEvents\":[\n";
  bool first = true;
  const auto event = [&](const std::string& e) {
    if (!first) out += ",\n";
    first = false;
    out += e;
  };
  const auto meta = [&](const char* what, uint32_t pid, uint32_t tid, const std::string& name) {
    std::string e;
    append(e, "{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"%s\",\"args\":{\"name\":\"%s\"}}", pid, tid, what,
           escaped(name).c_str());
    event(e);
  };
  const auto sort_index = [&](uint32_t pid, uint32_t tid, uint32_t index) {
    std::string e;
    append(e, "{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%u}}", pid,
           tid, index);
    event(e);
  };
  // A complete event; `flow` 0: none; flow_dir 1 out, 2 in, 3 both (a step).
  const auto slice = [&](uint32_t pid, uint32_t tid, const std::string& name, const char* cat, int64_t begin,
                         int64_t end, const std::string& args, uint64_t flow, int flow_dir) {
    std::string e = "{\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
                     ",\"name\":\"" + escaped(name) + "\",\"cat\":\"" + cat + "\",\"ts\":" + us(begin) +
                     ",\"dur\":" + us(std::max<int64_t>(0, end - begin));
    if (flow != 0) {
      e += ",\"bind_id\":" + std::to_string(flow);
      if (flow_dir & 1) e += ",\"flow_out\":true";
      if (flow_dir & 2) e += ",\"flow_in\":true";
    }
    if (!args.empty()) e += ",\"args\":{" + args + "}";
    e += "}";
    event(e);
  };

  meta("process_name", daemon_pid, 0, "tandemd (pid " + std::to_string(daemon_pid) + ")");
  for (const tr::DumpSlot& s : f.slots) {
    const std::string device(s.device_name, strnlen(s.device_name, sizeof s.device_name));
    meta("thread_name", daemon_pid, kSlotTid + s.slot, "slot " + std::to_string(s.slot) + " (" + device + ")");
    sort_index(daemon_pid, kSlotTid + s.slot, s.slot);
  }

  const std::vector<TracedJob> jobs = join_jobs(f);
  // Flow ids: one per dispatcher job, 1-based.
  std::unordered_map<const Record*, uint64_t> flow_of_client_job;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].client_job != nullptr) flow_of_client_job[jobs[i].client_job] = i + 1;
  }

  // ---- sessions: lanes of jobs in flight ----
  std::map<uint32_t, std::vector<size_t>> by_session;
  for (size_t i = 0; i < jobs.size(); ++i) by_session[jobs[i].job->session].push_back(i);
  for (auto& [session, list] : by_session) {
    const uint32_t pid = kSessionPid + session;
    const uint32_t client = pid_of(f, session);
    meta("process_name", pid, 0, "session " + std::to_string(session) +
                                     (client != 0 ? " (client pid " + std::to_string(client) + ")" : "") + " in tandemd");
    std::sort(list.begin(), list.end(),
              [&](size_t a, size_t b) { return jobs[a].job->t[tr::kVisible] < jobs[b].job->t[tr::kVisible]; });
    std::vector<int64_t> lane_end;  // when each lane's last job ended
    for (size_t i : list) {
      const TracedJob& tj = jobs[i];
      const Record& r = *tj.job;
      // The dispatcher stamps "visible" once per pass over the rings, which may start just before the
      // client published; a packet is never visible before its client's publish stamp.
      int64_t begin = r.t[tr::kVisible];
      if (tj.client_job != nullptr && begin != 0) begin = std::max(begin, tj.client_job->t[tr::kPublished]);
      const int64_t end = is(r, Kind::refused) ? r.t[tr::kDecoded] : std::max(r.t[tr::kCompleted], begin);
      if (begin == 0) continue;
      uint32_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > begin) ++lane;
      if (lane == lane_end.size()) {
        lane_end.push_back(0);
        meta("thread_name", pid, lane_tid(session, lane), "jobs in flight, lane " + std::to_string(lane));
        sort_index(pid, lane_tid(session, lane), lane);
      }
      lane_end[lane] = std::max(end, begin + 1);
      const uint32_t tid = lane_tid(session, lane);
      const std::string fn = function_name(r.function);
      std::string args;
      append(args, "\"session\":%u,\"tag\":%" PRIu64 ",\"method\":\"%s\",\"status\":\"%s\",\"bytes_in\":%" PRIu64
                   ",\"bytes_out\":%" PRIu64,
             r.session, r.id, std::string(access_name(r.method)).c_str(), status_name(r.status).c_str(), r.bytes_in,
             r.bytes_out);
      if (is(r, Kind::refused)) {
        slice(pid, tid, fn + " refused: " + status_name(r.status), "refused", begin, end, args, 0, 0);
        continue;
      }
      append(args, ",\"slot\":%d,\"device_ns\":%" PRIu64, r.slot == tr::kNoSlot ? -1 : static_cast<int>(r.slot),
             r.value);
      const bool ran = r.t[tr::kStarted] != 0;
      const uint64_t flow = i + 1;
      const int dir = tj.client_job != nullptr ? 3 : ran ? 1 : 0;
      slice(pid, tid, fn, "job", begin, end, args, dir != 0 ? flow : 0, dir);
      // Its phases, each from the phase before it that the job went through.
      int64_t prev = begin;
      const struct {
        tr::JobPhase phase;
        const char* name;
      } steps[] = {{tr::kDecoded, "decode"},           {tr::kQueued, "accept"},
                   {tr::kStarted, "queue"},            {tr::kTransferIn, "transfer in"},
                   {tr::kDeviceDone, "device"},        {tr::kTransferOut, "transfer out"},
                   {tr::kCompleted, "complete"}};
      for (const auto& st : steps) {
        const int64_t t = r.t[st.phase];
        if (t == 0 || t < prev) continue;
        slice(pid, tid, st.name, "phase", prev, t, "", 0, 0);
        prev = t;
      }
      if (ran) {  // the slot's track: the job's time there, and its transfers
        const uint32_t slot_tid = kSlotTid + r.slot;
        std::string slot_args;
        append(slot_args, "\"session\":%u,\"tag\":%" PRIu64 ",\"method\":\"%s\"", r.session, r.id,
               std::string(access_name(r.method)).c_str());
        const bool client_end = tj.client_job != nullptr && tj.client_job->t[tr::kObserved] != 0;
        slice(daemon_pid, slot_tid, fn, "slot", r.t[tr::kStarted], slot_end(r), slot_args, flow, client_end ? 3 : 2);
        if (r.t[tr::kTransferIn] != 0) {
          slice(daemon_pid, slot_tid, "transfer in", "phase", r.t[tr::kStarted], r.t[tr::kTransferIn], "", 0, 0);
        }
        if (r.t[tr::kTransferIn] != 0 && r.t[tr::kDeviceDone] != 0) {
          slice(daemon_pid, slot_tid, "device", "phase", r.t[tr::kTransferIn], r.t[tr::kDeviceDone], "", 0, 0);
        }
        if (r.t[tr::kTransferOut] != 0 && r.t[tr::kDeviceDone] != 0) {
          slice(daemon_pid, slot_tid, "transfer out", "phase", r.t[tr::kDeviceDone], r.t[tr::kTransferOut], "", 0, 0);
        }
      }
    }
  }

  // ---- client threads: calls, and their jobs' publish and completion ----
  std::map<std::pair<uint32_t, uint32_t>, bool> named;  // (pid, tid)
  std::map<uint32_t, bool> named_process;
  const auto client_track = [&](const Record& r) {
    const uint32_t real = pid_of(f, r.session);
    const uint32_t pid = real != 0 ? real : kClientPid + r.session;
    const uint32_t tid = r.thread != 0 ? r.thread : pid + 1 + r.slot;
    if (!named_process[pid]) {
      named_process[pid] = true;
      meta("process_name", pid, 0, "client pid " + std::to_string(real) + " (session " + std::to_string(r.session) + ")");
    }
    if (!named[{pid, tid}]) {
      named[{pid, tid}] = true;
      meta("thread_name", pid, tid, "client thread " + std::to_string(r.thread));
    }
    return std::pair{pid, tid};
  };
  for (const Record& r : f.records) {
    if (is(r, Kind::call)) {
      const auto [pid, tid] = client_track(r);
      if (r.t[tr::kEntered] == 0 || r.t[tr::kReturned] < r.t[tr::kEntered]) continue;
      std::string args;
      append(args, "\"call\":%" PRIu64 ",\"method\":\"%s\",\"units\":%" PRIu64 ",\"jobs\":%u,\"hardware\":%s", r.id,
             std::string(access_name(r.method)).c_str(), r.value, r.count,
             (r.flags & tr::kFlagHardware) ? "true" : "false");
      slice(pid, tid, function_name(r.function) + " call", "call", r.t[tr::kEntered], r.t[tr::kReturned], args, 0, 0);
      if (r.t[tr::kSplit] >= r.t[tr::kEntered] && r.t[tr::kSplit] <= r.t[tr::kReturned]) {
        slice(pid, tid, "plan", "phase", r.t[tr::kEntered], r.t[tr::kSplit], "", 0, 0);
      }
    } else if (is(r, Kind::client_job)) {
      const auto [pid, tid] = client_track(r);
      const auto it = flow_of_client_job.find(&r);
      const uint64_t flow = it != flow_of_client_job.end() ? it->second : 0;
      std::string args;
      append(args, "\"tag\":%" PRIu64 ",\"call\":%" PRIu64, r.id, r.parent);
      if (r.t[tr::kPublished] != 0) {
        slice(pid, tid, "publish " + function_name(r.function), "client_job", r.t[tr::kPublished], r.t[tr::kPublished],
              args, flow, 1);
      }
      if (r.t[tr::kObserved] != 0) {
        slice(pid, tid, "observe " + function_name(r.function) + " " + status_name(r.status), "client_job",
              r.t[tr::kObserved], r.t[tr::kObserved], args, flow, 2);
      }
    }
  }
  out += "\n]}\n";
  return out;
}

// ---------------------------------------------------------------- CSV

std::string jobs_csv(const TraceFile& f) {
  std::string out =
      "kind,session,pid,thread,call,tag,function,method,status,slot,device,bytes_in,bytes_out,device_ns,"
      "published_ns";
  for (const char* p : kJobPhaseNames) out += std::string(",") + p + "_ns";
  out += ",observed_ns\n";
  const auto t = [](int64_t v) { return v == 0 ? std::string() : std::to_string(v); };
  for (const TracedJob& j : join_jobs(f)) {
    const Record& r = *j.job;
    const bool ran = r.slot != tr::kNoSlot && is(r, Kind::job);
    append(out, "%s,%u,%u,%u,%s,%" PRIu64 ",%s,%s,%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s",
           is(r, Kind::job) ? "job" : "refused", r.session, j.pid, j.client_job ? j.client_job->thread : 0,
           j.client_job ? std::to_string(j.client_job->parent).c_str() : "", r.id, function_name(r.function).c_str(),
           std::string(access_name(r.method)).c_str(), status_name(r.status).c_str(),
           ran ? std::to_string(r.slot).c_str() : "", ran ? device_of_slot(f, r.slot).c_str() : "", r.bytes_in,
           r.bytes_out, is(r, Kind::job) ? r.value : 0,
           t(j.client_job ? j.client_job->t[tr::kPublished] : 0).c_str());
    for (size_t p = 0; p < tr::kJobPhases; ++p) out += "," + t(r.t[p]);
    out += "," + t(j.client_job ? j.client_job->t[tr::kObserved] : 0) + "\n";
  }
  return out;
}

std::string calls_csv(const TraceFile& f) {
  std::string out = "session,pid,thread,call,function,method,units,jobs,hardware,entered_ns,split_ns,returned_ns\n";
  for (const Record& r : f.records) {
    if (!is(r, Kind::call)) continue;
    append(out, "%u,%u,%u,%" PRIu64 ",%s,%s,%" PRIu64 ",%u,%d,%" PRId64 ",%" PRId64 ",%" PRId64 "\n", r.session,
           pid_of(f, r.session), r.thread, r.id, function_name(r.function).c_str(),
           std::string(access_name(r.method)).c_str(), r.value, r.count, (r.flags & tr::kFlagHardware) ? 1 : 0,
           r.t[tr::kEntered], r.t[tr::kSplit], r.t[tr::kReturned]);
  }
  return out;
}

// ---------------------------------------------------------------- the breakdown

namespace {

PhaseStats stats_of(std::string name, std::vector<double> v) {
  PhaseStats s;
  s.phase = std::move(name);
  s.samples = v.size();
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean_us = sum / static_cast<double>(v.size());
  std::sort(v.begin(), v.end());
  s.median_us = median(v);
  s.p99_us = percentile_sorted(v, 0.99);
  return s;
}

// The phases of the breakdown: from one moment to the next that the job went through.
struct Step {
  const char* name;
  int from;  // -1: the client's publish; 0..7: JobPhase; 8: the client's observation
  int to;
};
constexpr int kPublish = -1, kObserve = 8;
constexpr Step kSteps[] = {
    {"ring (publish -> seen)", kPublish, tr::kVisible},
    {"decode", tr::kVisible, tr::kDecoded},
    {"accept", tr::kDecoded, tr::kQueued},
    {"queue", tr::kQueued, tr::kStarted},
    {"transfer in", tr::kStarted, tr::kTransferIn},
    {"device", tr::kTransferIn, tr::kDeviceDone},  // from the transfer, else from the start
    {"transfer out", tr::kDeviceDone, tr::kTransferOut},
    {"complete", tr::kTransferOut, tr::kCompleted},  // from the scatter, else from the device
    {"wake-up (completion -> seen)", tr::kCompleted, kObserve},
};

int64_t moment(const TracedJob& j, int which) {
  if (which == kPublish) return j.client_job ? j.client_job->t[tr::kPublished] : 0;
  if (which == kObserve) return j.client_job ? j.client_job->t[tr::kObserved] : 0;
  return j.job->t[which];
}

// The moment a step starts from: its own, or the one before it that the job went through.
int64_t step_from(const TracedJob& j, const Step& s) {
  int64_t t = moment(j, s.from);
  if (t == 0 && s.from == tr::kTransferIn) t = moment(j, tr::kStarted);
  if (t == 0 && s.from == tr::kTransferOut) t = moment(j, tr::kDeviceDone);
  return t;
}

}  // namespace

Breakdown breakdown(const TraceFile& f) {
  Breakdown b;
  std::map<std::pair<std::string, std::string>, std::vector<const TracedJob*>> groups;
  const std::vector<TracedJob> jobs = join_jobs(f);
  for (const TracedJob& j : jobs) {
    if (is(*j.job, Kind::refused)) {
      ++b.refused;
      continue;
    }
    if (j.job->t[tr::kStarted] == 0) continue;  // cancelled before it ran
    groups[{function_name(j.job->function), std::string(access_name(j.job->method))}].push_back(&j);
  }
  for (const auto& [name, list] : groups) {
    BreakdownGroup g;
    g.function = name.first;
    g.method = name.second;
    g.jobs = list.size();
    std::vector<double> bytes, total;
    for (const TracedJob* j : list) {
      bytes.push_back(static_cast<double>(j->job->bytes_in + j->job->bytes_out));
      if (j->job->status != TANDEM_OK) ++g.failed;
      const int64_t begin = j->client_job && moment(*j, kPublish) ? moment(*j, kPublish) : moment(*j, tr::kVisible);
      const int64_t end = j->client_job && moment(*j, kObserve) ? moment(*j, kObserve) : moment(*j, tr::kCompleted);
      if (begin != 0 && end >= begin) total.push_back(static_cast<double>(end - begin) / 1e3);
    }
    g.median_bytes = median(bytes);
    for (const Step& s : kSteps) {
      std::vector<double> v;
      for (const TracedJob* j : list) {
        const int64_t from = step_from(*j, s), to = moment(*j, s.to);
        if (from != 0 && to != 0 && to >= from) v.push_back(static_cast<double>(to - from) / 1e3);
      }
      if (!v.empty()) g.phases.push_back(stats_of(s.name, std::move(v)));
    }
    g.total = stats_of("total", std::move(total));
    b.jobs.push_back(std::move(g));
  }
  std::map<std::pair<std::string, std::string>, std::vector<const Record*>> call_groups;
  for (const Record& r : f.records) {
    if (is(r, Kind::call)) call_groups[{function_name(r.function), std::string(access_name(r.method))}].push_back(&r);
  }
  for (const auto& [name, list] : call_groups) {
    CallGroup g;
    g.function = name.first;
    g.method = name.second;
    g.calls = list.size();
    std::vector<double> plan, run, total;
    for (const Record* r : list) {
      if (r->flags & tr::kFlagHardware) ++g.hardware;
      const int64_t e = r->t[tr::kEntered], s = r->t[tr::kSplit], x = r->t[tr::kReturned];
      if (e != 0 && s >= e) plan.push_back(static_cast<double>(s - e) / 1e3);
      if (s != 0 && x >= s) run.push_back(static_cast<double>(x - s) / 1e3);
      if (e != 0 && x >= e) total.push_back(static_cast<double>(x - e) / 1e3);
    }
    g.phases.push_back(stats_of("plan (entered -> split decided)", std::move(plan)));
    g.phases.push_back(stats_of("run (split -> returned)", std::move(run)));
    g.total = stats_of("total", std::move(total));
    b.calls.push_back(std::move(g));
  }
  return b;
}

std::string breakdown_text(const Breakdown& b, const TraceFile& f) {
  std::string out;
  const tr::DumpHeader& h = f.header;
  append(out, "%zu records; dropped: %" PRIu64 " (ring full), %" PRIu64 " (store full), %" PRIu64
              " (client thread without a ring), %" PRIu64 " (corrupt client ring)\n",
         f.records.size(), h.dropped_full, h.dropped_store, h.dropped_unclaimed, h.dropped_corrupt);
  if (b.jobs.empty() && b.calls.empty()) return out + "no jobs or calls traced\n";
  const auto row = [&](const std::string& a, const std::string& c, const PhaseStats& p, double total_median) {
    const double share = total_median > 0 ? 100.0 * p.median_us / total_median : 0;
    append(out, "%-12s %-10s %-30s %8zu %12.2f %12.2f %12.2f %7.1f%%\n", a.c_str(), c.c_str(), p.phase.c_str(),
           p.samples, p.median_us, p.p99_us, p.mean_us, share);
  };
  if (!b.jobs.empty()) {
    out += "\nPer-job latency breakdown (us; share = median over the median total)\n";
    append(out, "%-12s %-10s %-30s %8s %12s %12s %12s %8s\n", "function", "method", "phase", "jobs", "median",
           "p99", "mean", "share");
    for (const BreakdownGroup& g : b.jobs) {
      for (const PhaseStats& p : g.phases) row(g.function, g.method, p, g.total.median_us);
      row(g.function, g.method, g.total, g.total.median_us);
      append(out, "%-12s %-10s %zu jobs, %zu failed, median %.0f host bytes per job\n\n", "", "", g.jobs, g.failed,
             g.median_bytes);
    }
  }
  if (!b.calls.empty()) {
    out += "Per-call breakdown of high-level calls (us)\n";
    append(out, "%-12s %-10s %-30s %8s %12s %12s %12s %8s\n", "function", "method", "phase", "calls", "median",
           "p99", "mean", "share");
    for (const CallGroup& g : b.calls) {
      for (const PhaseStats& p : g.phases) row(g.function, g.method, p, g.total.median_us);
      row(g.function, g.method, g.total, g.total.median_us);
      append(out, "%-12s %-10s %zu calls, %zu with accelerator work\n\n", "", "", g.calls, g.hardware);
    }
  }
  if (b.refused > 0) append(out, "%zu dispatch packets refused without running\n", b.refused);
  return out;
}

std::string breakdown_csv(const Breakdown& b) {
  std::string out = "group,phase,samples,median_us,p99_us,mean_us\n";
  for (const BreakdownGroup& g : b.jobs) {
    const std::string group = g.function + " / " + g.method;
    for (const PhaseStats& p : g.phases) {
      append(out, "%s,%s,%zu,%.4f,%.4f,%.4f\n", group.c_str(), p.phase.c_str(), p.samples, p.median_us, p.p99_us,
             p.mean_us);
    }
    append(out, "%s,total,%zu,%.4f,%.4f,%.4f\n", group.c_str(), g.total.samples, g.total.median_us, g.total.p99_us,
           g.total.mean_us);
  }
  return out;
}

}  // namespace tandem::client
