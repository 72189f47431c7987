#include "rt/process_memory.hpp"

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace tandem::rt {

namespace {
constexpr uint64_t kPage = 4096;
constexpr uint64_t kUserTop = uint64_t{1} << 47;  // x86-64 and AArch64 (48-bit) user space
}  // namespace

ProcessMemory::ProcessMemory(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#endif
}

ProcessMemory::~ProcessMemory() {
  if (pidfd_ >= 0) close(pidfd_);
}

bool ProcessMemory::plausible(uint64_t address, uint64_t bytes) {
  return address != 0 && address < kUserTop && bytes <= kUserTop - address;
}

uint32_t ProcessMemory::pages(uint64_t address, uint64_t bytes) {
  if (bytes == 0) return 0;
  const uint64_t first = address / kPage, last = (address + bytes - 1) / kPage;
  return static_cast<uint32_t>(std::min<uint64_t>(last - first + 1, UINT32_MAX));
}

bool ProcessMemory::alive() const {
  if (pidfd_ < 0) return kill(pid_, 0) == 0 || errno == EPERM;
  pollfd p{pidfd_, POLLIN, 0};
  return poll(&p, 1, 0) == 0;  // readable once the process has exited
}

Status ProcessMemory::read(uint64_t address, void* dst, uint64_t bytes) const { return move(address, dst, bytes, false); }

Status ProcessMemory::write(uint64_t address, const void* src, uint64_t bytes) const {
  return move(address, const_cast<void*>(src), bytes, true);
}

Status ProcessMemory::move(uint64_t address, void* local, uint64_t bytes, bool write) const {
  if (bytes == 0) return Status::ok;
  if (!plausible(address, bytes)) return Status::translation_fault;
  if (!alive()) return Status::disconnected;
  // The page list: one remote iovec per page, at most IOV_MAX per system call.
  std::vector<iovec> remote;
  remote.reserve(std::min<uint64_t>(pages(address, bytes), IOV_MAX));
  char* cursor = static_cast<char*>(local);
  uint64_t at = address, left = bytes;
  while (left > 0) {
    remote.clear();
    uint64_t batch = 0;
    while (left > 0 && remote.size() < IOV_MAX) {
      const uint64_t in_page = std::min(left, kPage - at % kPage);
      remote.push_back(iovec{reinterpret_cast<void*>(at), in_page});
      at += in_page;
      left -= in_page;
      batch += in_page;
    }
    iovec mine{cursor, batch};
    const ssize_t n = write ? process_vm_writev(pid_, &mine, 1, remote.data(), remote.size(), 0)
                            : process_vm_readv(pid_, &mine, 1, remote.data(), remote.size(), 0);
    if (n < 0) {
      if (errno == ESRCH) return Status::disconnected;
      if (errno == EPERM) return Status::permission_denied;
      return errno == EFAULT ? Status::buffer_unmapped : Status::io_error;
    }
    // A partial transfer stops at the first page that could not be reached.
    if (static_cast<uint64_t>(n) != batch) return Status::buffer_unmapped;
    cursor += batch;
  }
  // The process may have exited (and its pid been reused) during the transfer: then it was not ours.
  return alive() ? Status::ok : Status::disconnected;
}

}  // namespace tandem::rt
