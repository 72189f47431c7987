// Scatter-gather for tandemd: a session's client process's own pages, reached with process_vm_readv /
// process_vm_writev (seed 001's AGSG walks a list of user pages; here the kernel does the walking, one
// iovec per page). The session can only ever name its own process: the pid comes from SO_PEERCRED, and
// a pidfd opened at hello tells when that process has gone (its pid could then be reused).
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "abi/status.hpp"

namespace tandem::rt {

// A buffer of a job that lives in the client's own memory rather than in session memory.
struct RemoteBuffer {
  uint32_t index = 0;    // in Call::buffers
  uint64_t address = 0;  // the client's virtual address
  uint64_t bytes = 0;
  bool write = false;
};

class ProcessMemory {
 public:
  // Set-up (at hello): false pidfd when the kernel has no pidfd_open (then only the pid is used).
  explicit ProcessMemory(pid_t pid);
  ~ProcessMemory();
  ProcessMemory(const ProcessMemory&) = delete;
  ProcessMemory& operator=(const ProcessMemory&) = delete;

  pid_t pid() const { return pid_; }
  // Whether [address, address + bytes) can be named at all: a user-space range that does not wrap.
  static bool plausible(uint64_t address, uint64_t bytes);
  // Page-list entries the range spans.
  static uint32_t pages(uint64_t address, uint64_t bytes);

  // Copies the client's range into `dst` (gather) / `src` into the client's range (scatter), one
  // iovec per page. ok; buffer_unmapped when a page is not mapped (or not writable) in the client;
  // disconnected when the client process is gone.
  Status read(uint64_t address, void* dst, uint64_t bytes) const;
  Status write(uint64_t address, const void* src, uint64_t bytes) const;

 private:
  Status move(uint64_t address, void* local, uint64_t bytes, bool write) const;
  bool alive() const;

  pid_t pid_;
  int pidfd_ = -1;
};

}  // namespace tandem::rt
