#include "devices/local_memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <vector>

#include "tandem/tandem_abi.h"

namespace tandem::devices {

namespace {
constexpr uint32_t kMaxId = 0x7fffff;           // 23 bits of buffer id
constexpr uint64_t kMaxOffset = 0xffffffffffull;  // 40 bits of offset
}  // namespace

LocalMemory::LocalMemory(uint64_t bytes, uint64_t alignment)
    : align_(std::max<uint64_t>(alignment, 64)), capacity_(bytes / align_ * align_) {
  if ((align_ & (align_ - 1)) != 0) throw Error(Status::invalid_argument, "device-local memory: alignment not a power of two");
  if (capacity_ == 0) return;
  void* p = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw Error(Status::no_memory, "device-local memory: cannot reserve " + std::to_string(bytes) + " bytes");
  arena_ = static_cast<char*>(p);
  free_[0] = capacity_;
}

LocalMemory::~LocalMemory() {
  if (arena_ != nullptr) munmap(arena_, capacity_);
}

Result<uint64_t> LocalMemory::alloc(uint32_t owner, uint64_t bytes) {
  if (bytes == 0 || bytes > kMaxOffset) return Result<uint64_t>(Status::invalid_argument, "buffer size out of range");
  const uint64_t block = (bytes + align_ - 1) / align_ * align_;
  if (buffers_.size() >= kMaxId) return Result<uint64_t>(Status::device_memory_full, "too many device buffers");
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < block) continue;
    const uint64_t offset = it->first, left = it->second - block;
    free_.erase(it);
    if (left > 0) free_[offset + block] = left;
    while (buffers_.count(next_id_) != 0 || next_id_ == 0) next_id_ = next_id_ % kMaxId + 1;
    const uint32_t id = next_id_;
    next_id_ = next_id_ % kMaxId + 1;
    buffers_[id] = Buffer{owner, offset, bytes, block};
    used_ += block;
    return TANDEM_DEVICE_ADDRESS(id, 0);
  }
  return Result<uint64_t>(Status::device_memory_full,
                          "device-local memory full: " + std::to_string(used_ >> 20) + " of " +
                              std::to_string(capacity_ >> 20) + " MiB in use");
}

void LocalMemory::release(uint32_t id) {
  auto it = buffers_.find(id);
  if (it == buffers_.end()) return;
  uint64_t offset = it->second.offset, size = it->second.block;
  used_ -= size;
  buffers_.erase(it);
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_[offset] = size;
}

Status LocalMemory::free(uint32_t owner, uint64_t address) {
  if ((address & TANDEM_DEVICE_ADDRESS_BIT) == 0) return Status::invalid_argument;
  const uint32_t id = TANDEM_DEVICE_BUFFER_OF(address);
  auto it = buffers_.find(id);
  if (it == buffers_.end() || it->second.owner != owner) return Status::invalid_argument;
  release(id);
  return Status::ok;
}

void LocalMemory::release_session(uint32_t owner) {
  std::vector<uint32_t> ids;
  for (const auto& [id, b] : buffers_) {
    if (b.owner == owner) ids.push_back(id);
  }
  for (uint32_t id : ids) release(id);
}

void* LocalMemory::translate(uint32_t owner, uint64_t address, uint64_t bytes) const {
  if ((address & TANDEM_DEVICE_ADDRESS_BIT) == 0) return nullptr;
  auto it = buffers_.find(TANDEM_DEVICE_BUFFER_OF(address));
  if (it == buffers_.end() || it->second.owner != owner) return nullptr;
  const uint64_t offset = TANDEM_DEVICE_OFFSET_OF(address);
  if (offset > it->second.bytes || bytes > it->second.bytes - offset) return nullptr;
  return arena_ + it->second.offset + offset;
}

}  // namespace tandem::devices
