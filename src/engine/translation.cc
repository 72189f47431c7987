#include "engine/translation.hpp"

#include <algorithm>
#include <bit>

namespace tandem::engine {

Translator::Translator(uint32_t tlb_entries)
    : tlb_(std::bit_ceil(std::max<uint32_t>(tlb_entries, kWays))),
      victim_(tlb_.size() / kWays, 0),
      set_bits_(static_cast<uint32_t>(std::countr_zero(tlb_.size() / kWays))) {}

Translator::Table* Translator::table(Asid asid) {
  if (asid >= tables_.size()) tables_.resize(static_cast<size_t>(asid) + 1);
  return &tables_[asid];
}

Result<uint32_t> Translator::add_region(Asid asid, uint64_t client_base, uint64_t bytes, uintptr_t local_base,
                                        bool writable) {
  if (bytes == 0 || client_base == 0 || client_base + bytes < client_base || local_base == 0) {
    return Result<uint32_t>(Status::invalid_argument, "empty, null or wrapping region");
  }
  Table& t = *table(asid);
  const uint64_t end = client_base + bytes;
  auto it = std::lower_bound(t.regions.begin(), t.regions.end(), client_base,
                             [](const Region& r, uint64_t a) { return r.client_base < a; });
  if (it != t.regions.end() && it->client_base < end) {
    return Result<uint32_t>(Status::invalid_argument, "region overlaps a registered one");
  }
  if (it != t.regions.begin() && std::prev(it)->client_base + std::prev(it)->bytes > client_base) {
    return Result<uint32_t>(Status::invalid_argument, "region overlaps a registered one");
  }
  const uint32_t id = t.next_id++;
  t.regions.insert(it, Region{client_base, bytes, local_base, writable, id});
  ++t.generation;
  return id;
}

bool Translator::remove_region(Asid asid, uint32_t id) {
  if (asid >= tables_.size()) return false;
  Table& t = tables_[asid];
  auto it = std::find_if(t.regions.begin(), t.regions.end(), [id](const Region& r) { return r.id == id; });
  if (it == t.regions.end()) return false;
  t.regions.erase(it);
  ++t.generation;  // every cached entry of this ASID is now stale
  ++stats_.flushes;
  return true;
}

void Translator::drop(Asid asid) {
  if (asid >= tables_.size()) return;
  Table& t = tables_[asid];
  t.regions.clear();
  ++t.generation;
  ++stats_.flushes;
}

const Region* Translator::lookup(Table& t, Asid asid, uint64_t address) {
  const uint64_t page = address >> kPageShift;
  // Fibonacci hashing: buffers a power of two apart (common) still spread over the sets.
  const uint64_t h = (page * 0x9e3779b97f4a7c15ull) ^ (uint64_t{asid} * 0xc2b2ae3d27d4eb4full);
  const size_t set = set_bits_ == 0 ? 0 : static_cast<size_t>(h >> (64 - set_bits_));
  TlbEntry* ways = &tlb_[set * kWays];
  TlbEntry* same_page = nullptr;
  for (uint32_t w = 0; w < kWays; ++w) {
    TlbEntry& e = ways[w];
    if (e.asid == asid && e.page == page && e.generation == t.generation) {
      // The entry names one region of its page, and a region may start or end inside a page
      // (add_region takes any byte range): a hit counts only inside that region.
      const Region& r = t.regions[e.region_index];
      if (address - r.client_base < r.bytes) {
        ++stats_.hits;
        return &r;
      }
      same_page = &e;
      break;
    }
  }
  ++stats_.misses;
  auto it = std::upper_bound(t.regions.begin(), t.regions.end(), address,
                             [](uint64_t a, const Region& r) { return a < r.client_base; });
  if (it == t.regions.begin()) return nullptr;
  --it;
  if (address - it->client_base >= it->bytes) return nullptr;
  const TlbEntry entry{asid, page, static_cast<uint32_t>(it - t.regions.begin()), t.generation};
  if (same_page != nullptr) {
    *same_page = entry;  // one entry per page: the region last used on it
  } else {
    uint8_t& victim = victim_[set];
    ways[victim] = entry;
    victim = static_cast<uint8_t>((victim + 1) % kWays);
  }
  return &*it;
}

uintptr_t Translator::translate(Asid asid, uint64_t address, uint64_t bytes, bool write) {
  if (asid >= tables_.size() || address == 0 || address + bytes < address) {
    ++stats_.faults;
    return 0;
  }
  Table& t = tables_[asid];
  const Region* r = lookup(t, asid, address);
  // The whole range must lie inside that one region (regions are disjoint, so a range that runs past
  // its end is outside the session even if the next region starts right after).
  if (r == nullptr || bytes > r->bytes - (address - r->client_base) || (write && !r->writable)) {
    ++stats_.faults;
    return 0;
  }
  return r->local_base + (address - r->client_base);
}

uint64_t Translator::registered_bytes(Asid asid) const {
  if (asid >= tables_.size()) return 0;
  uint64_t sum = 0;
  for (const Region& r : tables_[asid].regions) sum += r.bytes;
  return sum;
}

size_t Translator::region_count(Asid asid) const { return asid < tables_.size() ? tables_[asid].regions.size() : 0; }

const std::vector<Region>* Translator::regions(Asid asid) const {
  return asid < tables_.size() ? &tables_[asid].regions : nullptr;
}

}  // namespace tandem::engine
