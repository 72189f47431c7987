#include "client/trace.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>

#include "client/runtime.hpp"

namespace tandem::client {

namespace tr = abi::trace;

constinit thread_local CallTrace* traced_call = nullptr;

// What a thread holds of a runtime's trace area: its ring, or none left for it.
struct TraceThreadRing {
  uint64_t generation = 0;  // the area the ring belongs to (0: slot unused)
  tr::RingWriter writer;
  uint32_t ring = 0;
  uint32_t tid = 0;
  uint64_t next_id = 0;
  bool none = false;  // every ring of the area was taken: records are dropped and counted
};

namespace {

using ThreadRing = TraceThreadRing;
thread_local std::array<ThreadRing, 2> thread_rings;
thread_local uint32_t thread_ring_victim = 0;

// This thread's ring of `area`, claimed on first use (control path: one system call, gettid).
ThreadRing& ring_for(const tr::AreaView& area) {
  for (ThreadRing& t : thread_rings) {
    if (t.generation == area.generation) return t;
  }
  ThreadRing& t = thread_rings[thread_ring_victim++ % thread_rings.size()];
  t = ThreadRing{};
  t.generation = area.generation;
  t.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  const uint32_t ring = abi::fetch_add_acq_rel(area.header->k_claimed, 1u);
  if (ring >= area.rings) {
    t.none = true;
    return t;
  }
  t.ring = ring;
  t.writer = tr::RingWriter(area, ring);
  abi::store_relaxed(area.ring(ring).k_thread, t.tid);
  return t;
}

void write(const tr::AreaView& area, ThreadRing& t, tr::Record& r) {
  r.thread = t.tid;
  r.slot = t.ring;
  if (t.none) {
    abi::fetch_add_acq_rel(area.header->k_unclaimed, uint64_t{1});
    return;
  }
  (void)t.writer.write(r);
}

// Ids unique within a session: the ring (+1, so never 0) above a per-thread count.
uint64_t next_id(ThreadRing& t) { return (uint64_t{t.ring + 1} << 40) | (++t.next_id & ((uint64_t{1} << 40) - 1)); }

tr::AreaHeader disabled_header;  // k_enabled stays 0

}  // namespace

tr::AreaView disabled_trace_area() { return tr::AreaView{&disabled_header, 0, 0, 0}; }

tr::AreaView with_generation(tr::AreaView area) {
  // A mapping made after another was unmapped may get its address: threads tell areas apart by this.
  static std::atomic<uint64_t> next{1};
  area.generation = next.fetch_add(1, std::memory_order_relaxed);
  return area;
}

CallTrace::CallTrace(Runtime& runtime, uint16_t function, uint64_t units) {
  const tr::AreaView& area = runtime.trace_area();
  if (abi::load_relaxed(area.header->k_enabled) == 0) [[likely]] return;
  if (traced_call != nullptr) return;  // a call inside a call (a function calling another): the outer one records
  const tr::Clock clock = static_cast<tr::Clock>(area.header->clock);
  if (!tr::can_read(clock)) return;
  on_ = true;
  jobs_of_.fill(Job{});
  area_ = area;
  clock_ = clock;
  function_ = function;
  units_ = units;
  entered_ = tr::read_ticks(clock);
  ring_ = &ring_for(area);
  id_ = next_id(*ring_);
  traced_call = this;
}

CallTrace::~CallTrace() {
  if (!on_) return;
  traced_call = nullptr;
  tr::Record r;
  r.kind = static_cast<uint16_t>(tr::Kind::call);
  r.function = function_;
  r.method = method_;
  r.flags = hardware_ ? tr::kFlagHardware : 0;
  r.count = jobs_;
  r.id = id_;
  r.value = units_;
  r.t[tr::kEntered] = entered_;
  r.t[tr::kSplit] = split_;
  r.t[tr::kReturned] = tr::read_ticks(clock_);
  write(area_, *ring_, r);
}

void CallTrace::note_split(uint8_t method, bool hardware) {
  split_ = tr::read_ticks(clock_);
  method_ = method;
  hardware_ = hardware;
}

uint64_t CallTrace::job_tag(uint32_t job) {
  if (job >= kMaxJobs) return 0;
  Job& j = jobs_of_[job];
  j = Job{};
  j.tag = next_id(*ring_);
  // Stamped before the packet is published: the dispatcher may see it before dispatch() returns.
  j.stamped = tr::read_ticks(clock_);
  return j.tag;
}

void CallTrace::published(uint32_t job, uint16_t function, uint64_t units) {
  if (job >= kMaxJobs || jobs_of_[job].tag == 0) return;
  Job& j = jobs_of_[job];
  j.published = j.stamped;
  j.function = function;
  j.units = units;
}

void CallTrace::observed(uint32_t job, Status status) {
  if (job >= kMaxJobs || jobs_of_[job].published == 0) return;
  Job& j = jobs_of_[job];
  tr::Record r;
  r.kind = static_cast<uint16_t>(tr::Kind::client_job);
  r.function = j.function;
  r.method = method_;
  r.status = static_cast<uint8_t>(to_wire(status));
  r.id = j.tag;
  r.parent = id_;
  r.value = j.units;
  r.t[tr::kPublished] = j.published;
  r.t[tr::kObserved] = tr::read_ticks(clock_);
  write(area_, *ring_, r);
  j = Job{};
}

}  // namespace tandem::client
