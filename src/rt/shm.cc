#include "rt/shm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tandem::rt {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Mapping::~Mapping() {
  if (address != nullptr) munmap(address, bytes);
}

Result<UniqueFd> create_memfd(const std::string& name, size_t bytes, bool seal_size) {
  UniqueFd fd(memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return Result<UniqueFd>(Status::io_error, std::string("memfd_create: ") + std::strerror(errno));
  if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    return Result<UniqueFd>(Status::no_memory, std::string("ftruncate: ") + std::strerror(errno));
  }
  if (seal_size && fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
    return Result<UniqueFd>(Status::io_error, std::string("F_ADD_SEALS: ") + std::strerror(errno));
  }
  return fd;
}

Status seal_against_shrinking(int fd, uint64_t min_bytes) {
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) return Status::permission_denied;  // not a memfd (or sealing unsupported)
  if ((seals & F_SEAL_SHRINK) == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) return Status::permission_denied;
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < min_bytes) return Status::invalid_argument;
  return Status::ok;
}

Status check_shareable_memfd(int fd, uint64_t min_bytes, std::string& why) {
  if (fd < 0 || fcntl(fd, F_GETFD) < 0) {
    why = "descriptor " + std::to_string(fd) + " is not open";
    return Status::invalid_argument;
  }
  struct stat st;
  const int seals = fcntl(fd, F_GET_SEALS);
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || seals < 0) {
    why = "descriptor " + std::to_string(fd) + " is not a memfd";
    return Status::invalid_argument;
  }
  if ((seals & F_SEAL_SHRINK) == 0 && (seals & F_SEAL_SEAL) != 0) {
    why = "the memfd cannot be sealed against shrinking (create it with MFD_ALLOW_SEALING)";
    return Status::invalid_argument;
  }
  if (static_cast<uint64_t>(st.st_size) < min_bytes) {
    why = "the memfd holds " + std::to_string(st.st_size) + " bytes, the region needs " + std::to_string(min_bytes);
    return Status::invalid_argument;
  }
  return Status::ok;
}

Result<std::shared_ptr<Mapping>> map_fd(int fd, size_t bytes, uint64_t offset, bool writable) {
  void* p = mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd,
                 static_cast<off_t>(offset));
  if (p == MAP_FAILED) {
    return Result<std::shared_ptr<Mapping>>(Status::io_error, std::string("mmap: ") + std::strerror(errno));
  }
  return std::make_shared<Mapping>(p, bytes);
}

Result<UniqueFd> reopen_read_only(int fd) {
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  UniqueFd ro(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ro.valid()) return Result<UniqueFd>(Status::io_error, std::string("reopen read-only: ") + std::strerror(errno));
  return ro;
}

}  // namespace tandem::rt
