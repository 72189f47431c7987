// Device-local memory (seed 001's AGI: the accelerators' own DDR): buffers that live on the device,
// named by device addresses (tandem_abi.h: bit 63, buffer id, offset), filled and drained by copy
// engines and resident between chained jobs. Each buffer belongs to the session that allocated it;
// a device address of another session's buffer does not translate. Dispatcher thread only.
//
// The memory is one reserved mapping (MAP_NORESERVE: pages cost nothing until used), carved first-fit
// in aligned blocks (64 bytes, or the device's alignment if larger); a session's buffers are released
// when it closes. A device with memory of its own (OpenCL) only names its buffers by these addresses.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>

#include "abi/status.hpp"

namespace tandem::devices {

// The host addresses that stand for a device's own memory (a LocalMemory's mapping, never touched
// when the device keeps the data itself: OpenCL, CUDA), and where a range of them lies in it.
struct LocalWindow {
  static constexpr uint64_t kNotLocal = UINT64_MAX;
  const char* base = nullptr;  // null: the device has no local memory
  uint64_t bytes = 0;
  // [host, host + n) as an offset into the device's memory, or kNotLocal (host memory).
  uint64_t offset_of(const void* host, uint64_t n) const {
    const auto* p = static_cast<const char*>(host);
    if (base == nullptr || p < base || n > bytes) return kNotLocal;
    const auto offset = static_cast<uint64_t>(p - base);
    return offset <= bytes - n ? offset : kNotLocal;
  }
};

class LocalMemory {
 public:
  // Set-up code: throws tandem::Error if it cannot be reserved. `alignment`: a power of two.
  explicit LocalMemory(uint64_t bytes, uint64_t alignment = 64);
  ~LocalMemory();
  LocalMemory(const LocalMemory&) = delete;
  LocalMemory& operator=(const LocalMemory&) = delete;

  // A new buffer of `bytes` for `owner`: its device address (offset 0), or device_memory_full.
  Result<uint64_t> alloc(uint32_t owner, uint64_t bytes);
  // Frees the buffer `address` names (any offset in it); invalid_argument if `owner` has no such buffer.
  Status free(uint32_t owner, uint64_t address);
  void release_session(uint32_t owner);
  // [address, address + bytes) within one of `owner`'s buffers, as a pointer; nullptr otherwise.
  void* translate(uint32_t owner, uint64_t address, uint64_t bytes) const;

  char* base() const { return arena_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  uint32_t buffers() const { return static_cast<uint32_t>(buffers_.size()); }

 private:
  struct Buffer {
    uint32_t owner = 0;
    uint64_t offset = 0;  // in the arena
    uint64_t bytes = 0;   // as asked
    uint64_t block = 0;   // as carved (aligned)
  };
  void release(uint32_t id);

  uint64_t align_ = 64;
  char* arena_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t used_ = 0;
  std::map<uint64_t, uint64_t> free_;  // offset -> bytes, coalesced
  std::unordered_map<uint32_t, Buffer> buffers_;
  uint32_t next_id_ = 1;
};

}  // namespace tandem::devices
