// The client library's side of tracing (docs/tracing.md). Under tandemd every session has a trace
// area (a memfd the daemon made and both map, abi/trace.hpp): one record ring per client thread,
// claimed by the thread's first traced call. While the daemon has tracing on, each high-level call
// writes a record of its own (call entered, split decided, call returned) and one per job (packet
// published, completion observed); the job's packet carries the record's id in user_data, so the
// daemon's record of the same job joins it. While tracing is off a call costs one load and one
// predictable branch; a traced call takes a timestamp per point and writes its records with no lock,
// no allocation and no system call (a full ring drops records and counts them).
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "abi/status.hpp"
#include "abi/trace.hpp"

namespace tandem::client {

class Runtime;
struct TraceThreadRing;

// An area whose switch is always off: what a runtime without a trace area points at.
abi::trace::AreaView disabled_trace_area();
// `area` with a generation of its own, never 0 and never reused in this process.
abi::trace::AreaView with_generation(abi::trace::AreaView area);

// One high-level call, from entry to return (its destructor writes the call's record).
class CallTrace {
 public:
  CallTrace(Runtime& runtime, uint16_t function, uint64_t units);
  ~CallTrace();
  CallTrace(const CallTrace&) = delete;
  CallTrace& operator=(const CallTrace&) = delete;

  bool on() const { return on_; }
  static constexpr uint32_t kMaxJobs = 64;  // job ids of one call (client::kMaxCallJobs and below)
  // The plan is made: how its jobs' data moves (TANDEM_ACCESS_*), or software only.
  void split(uint8_t method, bool hardware) {
    if (on_) [[unlikely]] note_split(method, hardware);
  }
  // What the call did, for its record (set before it returns).
  void result(uint32_t jobs, bool hardware) {
    jobs_ = jobs;
    hardware_ = hardware;
  }

  // The job points (below) of the call traced on this thread.
  uint64_t job_tag(uint32_t job);
  void published(uint32_t job, uint16_t function, uint64_t units);
  void observed(uint32_t job, Status status);

 private:
  void note_split(uint8_t method, bool hardware);

  bool on_ = false;
  abi::trace::AreaView area_;
  abi::trace::Clock clock_ = abi::trace::Clock::monotonic;
  struct TraceThreadRing* ring_ = nullptr;
  bool hardware_ = false;
  uint8_t method_ = 0;
  uint16_t function_ = 0;
  uint32_t jobs_ = 0;
  uint64_t units_ = 0;
  uint64_t id_ = 0;
  int64_t entered_ = 0;
  int64_t split_ = 0;
  // Trivial, so that a call made while tracing is off does not clear 2.5 KiB (the constructor clears
  // them when tracing is on; `Job{}` is all zeros).
  struct Job {
    uint64_t tag;
    uint64_t units;
    int64_t stamped;    // taken with the tag, just before the packet is published
    int64_t published;  // = stamped once the packet was published (0: it was not)
    uint16_t function;
  };
  static_assert(std::is_trivially_default_constructible_v<Job>);
  std::array<Job, kMaxJobs> jobs_of_;
};

// The call traced on this thread, if any (set only while tracing is on).
extern constinit thread_local CallTrace* traced_call;

// For the jobs of the call being traced on this thread (each is one branch when none is):
// the user_data the job's packet carries (0: not traced),
inline uint64_t trace_job_tag(uint32_t job) {
  if (traced_call != nullptr) [[unlikely]] return traced_call->job_tag(job);
  return 0;
}
// its packet was published,
inline void trace_published(uint32_t job, uint16_t function, uint64_t units) {
  if (traced_call != nullptr) [[unlikely]] traced_call->published(job, function, units);
}
// its completion was observed.
inline void trace_observed(uint32_t job, Status status) {
  if (traced_call != nullptr) [[unlikely]] traced_call->observed(job, status);
}

}  // namespace tandem::client
