// The device's TLB (seed 004's PHASE/V HA-TLB, seed 003's SMP): a set-associative cache of page
// translations that the device's memory accesses go through when a session uses full virtual
// addressing (TANDEM_ADDRESS_PHASEV). A hit costs nothing extra; a miss costs a page walk, charged to
// the job's device time. Shared by all slots of the device or one per slot (seed 004: "sharing the same
// HA-TLB or having dedicated TLBs"). Entries are tagged with the session's ASID; unmapping a range shoots
// its entries down. Sans-I/O, not thread-safe: the device's submitting thread owns it.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::devices {

struct TlbSettings {
  uint32_t entries = 64;     // seed 004: 64 entries, direct mapped
  uint32_t ways = 1;         // associativity (entries / ways sets, LRU within a set)
  bool per_slot = false;     // one TLB per slot instead of one shared by the device's slots
  double walk_reads = 1.5;   // a page walk costs this many device memory reads (two levels, the upper one often cached)
  double read_s = 100e-9;    // one device read of host memory, for jobs that stream (list_walk's is its per-node time)
  uint32_t page_shift = 12;
};

struct TlbCounts {
  uint64_t hits = 0;
  uint64_t misses = 0;  // each one a page walk
  uint64_t faults = 0;  // pages not translatable at all, served on demand (demand paging)
  TlbCounts& operator+=(const TlbCounts& o) {
    hits += o.hits, misses += o.misses, faults += o.faults;
    return *this;
  }
};

class DeviceTlb {
 public:
  // `entries` is rounded up to a power of two and a multiple of `ways` (ways at least 1, at most entries).
  DeviceTlb(const TlbSettings& settings, uint32_t slots);

  // Looks up the page of `address` for `slot`; true on a hit. A miss installs the translation (the walk
  // found it), replacing the least recently used way of its set.
  bool lookup(uint32_t slot, uint32_t asid, uint64_t address);
  // Shoot-down: forgets every entry of `asid` (session closed) or those of [address, address + bytes).
  void shoot_down(uint32_t asid);
  void shoot_down(uint32_t asid, uint64_t address, uint64_t bytes);

  const TlbSettings& settings() const { return settings_; }
  uint32_t entries() const { return entries_; }
  uint32_t ways() const { return ways_; }

 private:
  struct Entry {
    uint64_t page = 0;
    uint32_t asid = 0;
    bool valid = false;
    uint64_t used = 0;  // LRU stamp
  };
  Entry* set_of(uint32_t slot, uint64_t page);

  TlbSettings settings_;
  uint32_t entries_ = 0, ways_ = 1, sets_ = 1;
  std::vector<Entry> entries_table_;  // [tlb][set][way]; one tlb, or one per slot
  uint64_t clock_ = 0;
};

}  // namespace tandem::devices
