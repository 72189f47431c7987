// Per-job trace records and the rings that carry them (docs/tracing.md). Shared between processes: a
// client library writes its records into a trace area in a memfd that tandemd created and maps, and
// `tandem trace export` reads a dump tandemd hands it in another memfd. So, as for every shared struct,
// offsets instead of pointers, a magic and a version, and static_asserts on sizes.
//
// A trace area: AreaHeader | `rings` RingHeaders | `rings` x `capacity` Records. Each ring has exactly
// one writer thread (single producer, lock-free, no system call, no allocation) and one reader (the
// daemon's collector):
//   writer: if head - tail == capacity the record is dropped and k_dropped counts it (a private copy of
//           the last tail seen spares the cache miss while there is room); otherwise it writes the
//           record at head & mask, then release-stores k_head = head + 1          (release head)
//   reader: acquire-loads k_head (pairs with the writer's release), copies [tail, head) out, then
//           release-stores k_tail = head (pairs with the writer's acquire of k_tail: a slot is reused
//           only after it was copied). Its tail is private: it never trusts k_tail or k_head beyond
//           the geometry it created (a hostile client can only lose its own records).
// Timestamps are raw ticks of the area's clock (AreaHeader::clock); the collector turns them into
// CLOCK_MONOTONIC nanoseconds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "abi/atomics.hpp"
#include "base/clock.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace tandem::abi::trace {

inline constexpr uint32_t kAreaMagic = 0x41525254;  // "TRRA"
inline constexpr uint32_t kDumpMagic = 0x50445254;  // "TRDP"
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kLine = 64;

// What a record describes.
enum class Kind : uint16_t {
  none = 0,
  job = 1,         // the dispatcher: one job from its packet to its completion record (JobPhase)
  refused = 2,     // the dispatcher: a dispatch packet completed with an error without running
  call = 3,        // the client library: one high-level call (CallPhase)
  client_job = 4,  // the client library: one job of a call, seen from the caller (ClientJobPhase)
};

// Phases of a dispatcher job, in the order they happen; a phase it did not go through stays 0.
enum JobPhase : uint32_t {
  kVisible = 0,       // the dispatcher saw packets on the ring (once per batch)
  kDecoded = 1,       // its packet validated and translated
  kQueued = 2,        // accepted by the engine (queued, or started at once)
  kStarted = 3,       // given a slot: submitted to the device (scatter-gather: its gather begins)
  kTransferIn = 4,    // scatter-gather under tandemd: input gathered into staging, submitted to the device
  kDeviceDone = 5,    // its completion polled from the device
  kTransferOut = 6,   // scatter-gather: output scattered back into the client's pages
  kCompleted = 7,     // its completion record written
  kJobPhases = 8,
};

// Phases of a high-level call (Kind::call).
enum CallPhase : uint32_t { kEntered = 0, kSplit = 1, kReturned = 2, kCallPhases = 3 };
// Phases of one of its jobs (Kind::client_job).
enum ClientJobPhase : uint32_t { kPublished = 0, kObserved = 1, kClientJobPhases = 2 };

inline constexpr uint32_t kNoSlot = UINT32_MAX;

// One record: 128 bytes, plain data.
struct Record {
  uint16_t kind = 0;      // Kind
  uint16_t function = 0;
  uint8_t method = 0;     // TANDEM_ACCESS_*
  uint8_t status = 0;     // tandem_status_t of its completion
  uint16_t flags = 0;     // kFlag*
  uint32_t session = 0;   // set by the reader for client records (the connection says, not the client)
  uint32_t slot = kNoSlot;  // job: the engine's slot; client records: the ring (thread) index
  uint32_t thread = 0;    // client records: the writer's OS thread id
  uint32_t count = 0;     // call: jobs submitted
  uint64_t id = 0;        // job, refused, client_job: the packet's user_data; call: the call's id
  uint64_t parent = 0;    // client_job: its call's id
  uint64_t bytes_in = 0;  // host bytes read (job: by the device; call: by the whole call)
  uint64_t bytes_out = 0;
  uint64_t value = 0;     // job: its device time in ns; call and client_job: work units
  int64_t t[8] = {};      // phase timestamps (ticks in a ring, ns in a dump); 0 = not seen
};
static_assert(sizeof(Record) == 128, "two cache lines per record");

inline constexpr uint16_t kFlagHardware = 1u << 0;  // call: some of its work ran on an accelerator

struct AreaHeader {
  uint32_t magic = kAreaMagic;
  uint32_t version = kVersion;
  uint32_t rings = 0;          // single-writer rings that follow
  uint32_t capacity = 0;       // records per ring, a power of two
  uint32_t clock = 0;          // Clock: how the writers must take timestamps
  uint32_t record_bytes = sizeof(Record);
  uint32_t k_enabled = 0;      // written by the daemon: 1 while tracing is on
  uint32_t k_claimed = 0;      // client threads that asked for a ring (fetch_add); >= rings: none left
  uint64_t k_unclaimed = 0;    // records dropped by threads that found no ring left
  uint8_t pad[kLine - 40] = {};
};
static_assert(sizeof(AreaHeader) == kLine);

enum class Clock : uint32_t {
  monotonic = 0,  // CLOCK_MONOTONIC nanoseconds
  tsc = 1,        // the x86 time-stamp counter (the kernel's clocksource: one counter for every CPU)
};

// A timestamp of `clock`. The TSC is read with rdtscp, which waits for the instructions before it: a
// stamp taken after publishing or seeing a packet is not taken before it.
inline int64_t read_ticks(Clock clock) {
#if defined(__x86_64__)
  if (clock == Clock::tsc) {
    unsigned aux;
    return static_cast<int64_t>(__rdtscp(&aux));
  }
#endif
  (void)clock;
  return now_ns();
}

// A cheaper stamp (rdtsc: half of rdtscp's cost on a VM) for points where an early stamp cannot
// reorder phases across processes: one taken before a store the other side waits for (a stamp
// executes before the store becomes visible), or one that follows another stamp on the same thread.
inline int64_t read_ticks_unordered(Clock clock) {
#if defined(__x86_64__)
  if (clock == Clock::tsc) return static_cast<int64_t>(__rdtsc());
#endif
  (void)clock;
  return now_ns();
}

// Whether this process can take stamps of `clock`.
inline bool can_read(Clock clock) {
#if defined(__x86_64__)
  return clock == Clock::tsc || clock == Clock::monotonic;
#else
  return clock == Clock::monotonic;
#endif
}

struct RingHeader {
  uint64_t k_head = 0;      // written by the ring's writer only
  uint64_t k_dropped = 0;   // records the writer dropped because the ring was full
  uint32_t k_thread = 0;    // the writer's OS thread id (client rings)
  uint8_t pad0[kLine - 20] = {};
  uint64_t k_tail = 0;      // written by the reader only
  uint8_t pad1[kLine - 8] = {};
};
static_assert(sizeof(RingHeader) == 2 * kLine, "head and tail on lines of their own");

inline constexpr size_t area_bytes(uint32_t rings, uint32_t capacity) {
  return sizeof(AreaHeader) + size_t{rings} * sizeof(RingHeader) + size_t{rings} * capacity * sizeof(Record);
}

// A view of an area whose geometry the holder knows independently of the shared header (the daemon
// created it; a client checked it once with validate_area).
struct AreaView {
  AreaHeader* header = nullptr;
  uint32_t rings = 0;
  uint32_t capacity = 0;
  uint64_t generation = 0;  // this process's name for the mapping (a later one may reuse its address)

  bool valid() const { return header != nullptr; }
  RingHeader& ring(uint32_t r) const {
    return reinterpret_cast<RingHeader*>(reinterpret_cast<char*>(header) + sizeof(AreaHeader))[r];
  }
  Record* records(uint32_t r) const {
    char* base = reinterpret_cast<char*>(header) + sizeof(AreaHeader) + size_t{rings} * sizeof(RingHeader);
    return reinterpret_cast<Record*>(base) + size_t{r} * capacity;
  }
};

// Writes a fresh area (zeroed ring headers) into `base` of at least area_bytes(rings, capacity). The
// records are left as they are: none is read before it is written, and a session's area stays untouched
// (no resident pages) until its threads record.
inline AreaView format_area(void* base, uint32_t rings, uint32_t capacity, Clock clock) {
  std::memset(base, 0, sizeof(AreaHeader) + size_t{rings} * sizeof(RingHeader));  // indices and counters
  AreaHeader h;
  h.rings = rings;
  h.capacity = capacity;
  h.clock = static_cast<uint32_t>(clock);
  std::memcpy(base, &h, sizeof h);
  return AreaView{static_cast<AreaHeader*>(base), rings, capacity, 0};
}

// Checks an area someone else formatted before trusting its geometry (a client mapping the daemon's).
inline bool validate_area(const void* base, size_t bytes, AreaView& out) {
  if (base == nullptr || bytes < sizeof(AreaHeader)) return false;
  AreaHeader h;
  std::memcpy(&h, base, sizeof h);
  if (h.magic != kAreaMagic || h.version != kVersion || h.record_bytes != sizeof(Record)) return false;
  if (h.rings == 0 || h.rings > 4096 || h.capacity == 0 || (h.capacity & (h.capacity - 1)) != 0 ||
      h.capacity > (1u << 24) || area_bytes(h.rings, h.capacity) > bytes) {
    return false;
  }
  out = AreaView{static_cast<AreaHeader*>(const_cast<void*>(base)), h.rings, h.capacity, 0};
  return true;
}

// The writer's side of one ring. Not thread-safe: one writer thread per ring.
class RingWriter {
 public:
  RingWriter() = default;
  RingWriter(const AreaView& area, uint32_t ring)
      : header_(&area.ring(ring)), records_(area.records(ring)), mask_(area.capacity - 1u),
        head_(load_relaxed(header_->k_head)), seen_tail_(load_acquire(header_->k_tail)) {}

  bool valid() const { return header_ != nullptr; }

  // Appends `r`, or drops it (counted) when the ring is full. Never blocks, never allocates.
  bool write(const Record& r) {
    if (head_ - seen_tail_ > mask_) {
      seen_tail_ = load_acquire(header_->k_tail);  // pairs with the reader's release of k_tail
      if (head_ - seen_tail_ > mask_) {
        store_relaxed(header_->k_dropped, load_relaxed(header_->k_dropped) + 1);
        return false;
      }
    }
    std::memcpy(&records_[head_ & mask_], &r, sizeof r);
    ++head_;
    store_release(header_->k_head, head_);  // pairs with the reader's acquire: the record before the index
    return true;
  }

 private:
  RingHeader* header_ = nullptr;
  Record* records_ = nullptr;
  uint64_t mask_ = 0;
  uint64_t head_ = 0;       // private copy: this writer is the only one
  uint64_t seen_tail_ = 0;  // the last tail read: a lower bound of the real one
};

// What one drain_ring call lost.
struct DrainLoss {
  uint64_t no_room = 0;  // records there was no room for in `out`: dropped
  uint64_t corrupt = 0;  // records a corrupted head announced beyond the ring's capacity
};

// The reader's side of one ring: copies what is there into `out` (at most `room` records) and frees
// it. `tail` is the reader's private tail. Returns the records copied.
inline uint64_t drain_ring(const AreaView& area, uint32_t ring, uint64_t& tail, Record* out, uint64_t room,
                           DrainLoss& loss) {
  RingHeader& h = area.ring(ring);
  const uint64_t head = load_acquire(h.k_head);  // pairs with the writer's release of k_head
  uint64_t available = head - tail;
  if (available > area.capacity) {  // impossible for an honest writer: keep the last full ring only
    loss.corrupt += available - area.capacity;
    tail = head - area.capacity;
    available = area.capacity;
  }
  const uint64_t n = available < room ? available : room;
  const Record* records = area.records(ring);
  const uint64_t mask = area.capacity - 1u;
  for (uint64_t i = 0; i < n; ++i) std::memcpy(&out[i], &records[(tail + i) & mask], sizeof(Record));
  loss.no_room += available - n;
  tail = head;
  store_release(h.k_tail, head);  // pairs with the writer's acquire: the slots are copied
  return n;
}

// ---- the dump `tandem trace export` receives (a memfd): DumpHeader | sessions | slots | records ----

struct DumpHeader {
  uint32_t magic = kDumpMagic;
  uint32_t version = kVersion;
  uint32_t daemon_pid = 0;
  uint32_t session_count = 0;  // DumpSession entries
  uint32_t slot_count = 0;     // DumpSlot entries
  uint32_t enabled = 0;        // tracing was on when the dump was taken
  uint64_t record_count = 0;   // Records (timestamps in CLOCK_MONOTONIC ns)
  uint64_t dropped_full = 0;   // records dropped because a ring was full
  uint64_t dropped_store = 0;  // records dropped because the collector's store was full
  uint64_t dropped_unclaimed = 0;  // records of client threads that found no ring left
  uint64_t dropped_corrupt = 0;    // records lost to a client ring whose index made no sense
  int64_t started_ns = 0;      // when tracing was last started (0: never)
  int64_t taken_ns = 0;        // when the dump was taken
};
static_assert(sizeof(DumpHeader) == 80);

struct DumpSession {
  uint32_t session = 0;
  uint32_t pid = 0;  // the client process (0: unknown)
};
static_assert(sizeof(DumpSession) == 8);

struct DumpSlot {
  uint32_t slot = 0;
  uint32_t device = 0;  // index in the daemon's device list
  char device_name[16] = {};
};
static_assert(sizeof(DumpSlot) == 24);

inline constexpr size_t dump_bytes(uint64_t records, uint32_t sessions, uint32_t slots) {
  return sizeof(DumpHeader) + size_t{sessions} * sizeof(DumpSession) + size_t{slots} * sizeof(DumpSlot) +
         static_cast<size_t>(records) * sizeof(Record);
}

}  // namespace tandem::abi::trace
