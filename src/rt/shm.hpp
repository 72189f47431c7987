// Shared memory between processes: memfd regions, sealed so that no party can shrink them under the
// other's mapping (a shrunk memfd would turn the daemon's accesses into SIGBUS).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "abi/status.hpp"

namespace tandem::rt {

// An owned file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A mapping; unmapped when the last shared_ptr to it goes.
struct Mapping {
  Mapping(void* a, size_t n) : address(a), bytes(n) {}
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  void* address;
  size_t bytes;
  char* begin() const { return static_cast<char*>(address); }
};

inline size_t page_size() { return 4096; }
inline size_t round_to_pages(size_t n) { return (n + page_size() - 1) / page_size() * page_size(); }

// A new memfd of `bytes`, sealable. seal_size: forbid shrinking and growing from now on.
Result<UniqueFd> create_memfd(const std::string& name, size_t bytes, bool seal_size);

// Seals an fd received from someone else against shrinking and checks that it is a memfd of at least
// `min_bytes`. PERMISSION_DENIED if it cannot be sealed (not a memfd, or sealing forbidden).
Status seal_against_shrinking(int fd, uint64_t min_bytes);

// Whether `fd` can back session memory of at least `min_bytes` without touching it: an open memfd (a
// file that supports seals) whose size covers them and that is, or may still be, sealed against
// shrinking. INVALID_ARGUMENT with `why` otherwise. The client checks this before it sends a
// descriptor; the daemon seals (seal_against_shrinking) and checks again, trusting nothing.
Status check_shareable_memfd(int fd, uint64_t min_bytes, std::string& why);

// Maps [offset, offset + bytes) of fd, shared; read-only unless `writable`.
Result<std::shared_ptr<Mapping>> map_fd(int fd, size_t bytes, uint64_t offset, bool writable);

// A read-only descriptor of the same file (via /proc/self/fd): its holder cannot map it writable.
Result<UniqueFd> reopen_read_only(int fd);

}  // namespace tandem::rt
