#include "devices/device_tlb.hpp"

#include <algorithm>
#include <bit>

namespace tandem::devices {

DeviceTlb::DeviceTlb(const TlbSettings& settings, uint32_t slots) : settings_(settings) {
  entries_ = std::bit_ceil(std::max<uint32_t>(settings.entries, 1));
  ways_ = std::bit_ceil(std::clamp<uint32_t>(settings.ways, 1, entries_));
  sets_ = entries_ / ways_;
  const uint32_t tlbs = settings.per_slot ? std::max<uint32_t>(slots, 1) : 1;
  entries_table_.resize(static_cast<size_t>(tlbs) * entries_);
}

DeviceTlb::Entry* DeviceTlb::set_of(uint32_t slot, uint64_t page) {
  const size_t tlb = settings_.per_slot ? slot % (entries_table_.size() / entries_) : 0;
  // Indexed by the page number's low bits, as a hardware TLB is: contiguous pages fill distinct sets.
  const size_t set = static_cast<size_t>(page & (sets_ - 1));
  return &entries_table_[tlb * entries_ + set * ways_];
}

bool DeviceTlb::lookup(uint32_t slot, uint32_t asid, uint64_t address) {
  const uint64_t page = address >> settings_.page_shift;
  Entry* ways = set_of(slot, page);
  ++clock_;
  Entry* victim = ways;
  for (uint32_t w = 0; w < ways_; ++w) {
    Entry& e = ways[w];
    if (e.valid && e.page == page && e.asid == asid) {
      e.used = clock_;
      return true;
    }
    if (!e.valid || (victim->valid && e.used < victim->used)) victim = &e;
  }
  *victim = Entry{page, asid, true, clock_};
  return false;
}

void DeviceTlb::shoot_down(uint32_t asid) {
  for (Entry& e : entries_table_) {
    if (e.asid == asid) e.valid = false;
  }
}

void DeviceTlb::shoot_down(uint32_t asid, uint64_t address, uint64_t bytes) {
  if (bytes == 0) return;
  const uint64_t first = address >> settings_.page_shift;
  const uint64_t last = (address + bytes - 1) >> settings_.page_shift;
  for (Entry& e : entries_table_) {
    if (e.asid == asid && e.page >= first && e.page <= last) e.valid = false;
  }
}

}  // namespace tandem::devices
