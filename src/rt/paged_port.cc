#include "rt/paged_port.hpp"

#include <algorithm>
#include <cstring>

#include "base/clock.hpp"
#include "rt/address_space.hpp"

namespace tandem::rt {

namespace {
constexpr uint64_t kPage = 4096;
// Frames one job may hold (256 MiB); beyond it the oldest job-long frames are dropped and fault again.
constexpr size_t kMaxFrames = 65536;
}  // namespace

PagedPort::PagedPort(AddressSpace* windows, std::shared_ptr<const ProcessMemory> process, bool count_faults)
    : windows_(windows), process_(std::move(process)), count_faults_(count_faults) {}

bool PagedPort::read(uint64_t address, void* dst, uint32_t bytes) {
  if (status_ != Status::ok) return false;  // a failed job reads nothing more
  if (!ProcessMemory::plausible(address, bytes)) return fail(Status::translation_fault);
  char* out = static_cast<char*>(dst);
  while (bytes > 0) {
    const uint32_t piece = static_cast<uint32_t>(std::min<uint64_t>(bytes, kPage - address % kPage));
    const void* in_window = windows_ != nullptr ? windows_->translate(address, piece, false) : nullptr;
    if (in_window != nullptr) {
      std::memcpy(out, in_window, piece);
    } else {
      if (!process_) return fail(Status::translation_fault);  // AISLE: outside the windows
      const char* frame = frame_of(address - address % kPage);
      if (frame == nullptr) return false;
      std::memcpy(out, frame + address % kPage, piece);
    }
    address += piece;
    out += piece;
    bytes -= piece;
  }
  return true;
}

const char* PagedPort::frame_of(uint64_t page_address) {
  if (auto it = frames_.find(page_address); it != frames_.end()) return it->second.get();
  if (frames_.size() >= kMaxFrames) frames_.clear();
  const int64_t t0 = now_ns();
  auto frame = std::make_unique_for_overwrite<char[]>(kPage);
  const Status s = process_->read(page_address, frame.get(), kPage);
  if (s != Status::ok) {
    // Not mapped in the client (or not its memory at all): the session does not own it.
    fail(s == Status::disconnected ? Status::disconnected : Status::translation_fault);
    return nullptr;
  }
  if (count_faults_) {
    ++faults_;
    fault_ns_ += now_ns() - t0;
  }
  return frames_.emplace(page_address, std::move(frame)).first->second.get();
}

}  // namespace tandem::rt
