// Address translation for accelerators (thesis 5.4.2's IOMMU, seed 004's AISLE/PHASE-V, seed 003's
// SMP): every address a packet carries is the client's own virtual address; the engine's driver
// translates it through the session's region table before any access. Regions are tagged with the
// session's address-space id (ASID), which the daemon assigns from the connection — never from a field
// the client writes. One small translation cache (a unified TLB, as in the thesis) serves every session
// and every slot; its hits and misses are counted.
//
// Sans-I/O: the table maps client ranges to addresses of the driver's own mappings, but never maps or
// touches memory itself. Not thread-safe: the dispatcher thread owns it.
#pragma once

#include <cstdint>
#include <vector>

#include "abi/status.hpp"

namespace tandem::engine {

using Asid = uint32_t;

struct Region {
  uint64_t client_base = 0;  // the client's virtual address of the first byte
  uint64_t bytes = 0;
  uintptr_t local_base = 0;  // the same byte in the driver's mapping
  bool writable = true;
  uint32_t id = 0;           // handle for unregistering
};

struct TlbStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t faults = 0;       // translations refused
  uint64_t flushes = 0;
};

class Translator {
 public:
  static constexpr uint32_t kPageShift = 12;

  // A TLB of `tlb_entries` entries (rounded to a power of two, at least kWays), kWays-way set associative.
  explicit Translator(uint32_t tlb_entries = 64);
  static constexpr uint32_t kWays = 4;

  // Adds a region to `asid`'s table. Refuses (INVALID_ARGUMENT) an empty, wrapping or overlapping
  // range: every client byte maps to exactly one local byte.
  Result<uint32_t> add_region(Asid asid, uint64_t client_base, uint64_t bytes, uintptr_t local_base, bool writable);
  // Removes a region (and its TLB entries). False if `asid` has no region `id`.
  bool remove_region(Asid asid, uint32_t id);
  // Forgets an address space entirely (session closed).
  void drop(Asid asid);

  // The local address of [address, address + bytes) of `asid`, or 0 if any byte lies outside one of
  // its regions, or (for `write`) the region is read-only. bytes == 0 still needs a valid address.
  uintptr_t translate(Asid asid, uint64_t address, uint64_t bytes, bool write);

  const TlbStats& stats() const { return stats_; }
  uint64_t registered_bytes(Asid asid) const;
  size_t region_count(Asid asid) const;
  const std::vector<Region>* regions(Asid asid) const;

 private:
  struct TlbEntry {
    Asid asid = UINT32_MAX;
    uint64_t page = 0;
    uint32_t region_index = 0;  // into tables_[asid]
    uint32_t generation = 0;    // of that table when cached
  };
  struct Table {
    std::vector<Region> regions;  // sorted by client_base, disjoint
    uint32_t generation = 0;      // bumped whenever regions change: stale TLB entries miss
    uint32_t next_id = 1;
  };

  Table* table(Asid asid);
  const Region* lookup(Table& t, Asid asid, uint64_t address);

  std::vector<Table> tables_;   // indexed by ASID
  std::vector<TlbEntry> tlb_;   // sets of kWays entries, chosen by a multiplicative hash of (asid, page)
  std::vector<uint8_t> victim_; // per set: the way replaced next (round robin)
  uint32_t set_bits_ = 0;
  TlbStats stats_;
};

}  // namespace tandem::engine
