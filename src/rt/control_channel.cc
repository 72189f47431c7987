#include "rt/control_channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include <cerrno>
#include <cstring>

#include "base/clock.hpp"

namespace tandem::rt {

using abi::control::FrameHeader;
using abi::control::MessageType;

namespace {

// One descriptor as SCM_RIGHTS in `msg`; `control` is CMSG_SPACE(sizeof(int)) bytes, cmsghdr-aligned.
void attach_descriptor(msghdr& msg, char* control, int fd) {
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(sizeof(int));
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
}

}  // namespace

Status check_header(const FrameHeader& h) {
  if (h.magic != abi::control::kMagic || h.version != abi::control::kVersion) return Status::protocol_error;
  if (!abi::control::known_type(h.type) || h.length > abi::control::kMaxPayload) return Status::protocol_error;
  const size_t expected = abi::control::payload_size(static_cast<MessageType>(h.type));
  if (expected != SIZE_MAX && h.length != expected) return Status::protocol_error;
  return Status::ok;
}

Status send_frame(int sock, MessageType type, uint32_t request_id, const void* payload, size_t bytes, int fd) {
  if (bytes > abi::control::kMaxPayload) return Status::invalid_argument;
  FrameHeader h;
  h.type = static_cast<uint16_t>(type);
  h.length = static_cast<uint32_t>(bytes);
  h.request_id = request_id;
  iovec iov[2] = {{&h, sizeof h}, {const_cast<void*>(payload), bytes}};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = bytes > 0 ? 2 : 1;
  if (fd >= 0) attach_descriptor(msg, control, fd);
  size_t total = sizeof h + bytes, sent = 0;
  while (sent < total) {
    ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // a non-blocking socket whose peer reads slowly: wait a little
        pollfd p{sock, POLLOUT, 0};
        if (poll(&p, 1, 1000) <= 0) return Status::timeout;
        continue;
      }
      if (errno == EBADF && fd >= 0 && sent == 0) return Status::invalid_argument;  // the descriptor to pass
      return errno == EPIPE || errno == ECONNRESET ? Status::disconnected : Status::io_error;
    }
    sent += static_cast<size_t>(n);
    msg.msg_control = nullptr;  // the descriptor went with the first bytes
    msg.msg_controllen = 0;
    // Advance the iovecs past what was written.
    size_t skip = static_cast<size_t>(n);
    while (msg.msg_iovlen > 0 && skip >= msg.msg_iov[0].iov_len) {
      skip -= msg.msg_iov[0].iov_len;
      ++msg.msg_iov;
      --msg.msg_iovlen;
    }
    if (msg.msg_iovlen > 0) {
      msg.msg_iov[0].iov_base = static_cast<char*>(msg.msg_iov[0].iov_base) + skip;
      msg.msg_iov[0].iov_len -= skip;
    }
  }
  return Status::ok;
}

Status FrameReader::read_some(int sock) {
  for (;;) {
    std::byte chunk[8192];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPendingFds)];
    iovec iov{chunk, sizeof chunk};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return Status::ok;
      return errno == ECONNRESET ? Status::disconnected : Status::io_error;
    }
    Status status = Status::ok;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        UniqueFd owned(fd);  // closed unless queued: nothing leaks whatever the peer sends
        if (fds_.size() < kMaxPendingFds) {
          fds_.push_back(std::move(owned));
        } else {
          status = Status::protocol_error;
        }
      }
    }
    if (msg.msg_flags & MSG_CTRUNC) status = Status::protocol_error;
    if (status != Status::ok) return status;
    if (n == 0) return Status::disconnected;
    buf_.insert(buf_.end(), chunk, chunk + n);
    if (buf_.size() > 4 * (sizeof(FrameHeader) + abi::control::kMaxPayload)) return Status::protocol_error;
    if (static_cast<size_t>(n) < sizeof chunk) return Status::ok;
  }
}

Result<bool> FrameReader::next(Frame& out) {
  if (buf_.size() < sizeof(FrameHeader)) return false;
  FrameHeader h;
  std::memcpy(&h, buf_.data(), sizeof h);
  if (Status s = check_header(h); s != Status::ok) return Result<bool>(s, "malformed frame header");
  if (buf_.size() < sizeof h + h.length) return false;
  out.header = h;
  out.payload.assign(buf_.begin() + sizeof h, buf_.begin() + static_cast<std::ptrdiff_t>(sizeof h + h.length));
  buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(sizeof h + h.length));
  out.fd.reset();
  if (abi::control::carries_fd(out.type())) {
    // A frame that needs a descriptor and came without one is the handler's to refuse (an error
    // reply); the stream itself is intact.
    if (!fds_.empty()) {
      out.fd = std::move(fds_.front());
      fds_.pop_front();
    }
  } else if (!fds_.empty() && buf_.empty()) {
    return Result<bool>(Status::protocol_error, "file descriptor sent with a message that takes none");
  }
  return true;
}

Status FrameWriter::queue(MessageType type, uint32_t request_id, const void* payload, size_t bytes, int fd) {
  if (bytes > abi::control::kMaxPayload) return Status::invalid_argument;
  Outgoing out;
  if (fd >= 0) {
    out.fd.reset(fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!out.fd.valid()) return Status::io_error;
  }
  FrameHeader h;
  h.type = static_cast<uint16_t>(type);
  h.length = static_cast<uint32_t>(bytes);
  h.request_id = request_id;
  out.bytes.resize(sizeof h + bytes);
  std::memcpy(out.bytes.data(), &h, sizeof h);
  if (bytes > 0) std::memcpy(out.bytes.data() + sizeof h, payload, bytes);
  bytes_ += out.bytes.size();
  frames_.push_back(std::move(out));
  return Status::ok;
}

Status FrameWriter::flush(int sock) {
  while (!frames_.empty()) {
    Outgoing& out = frames_.front();
    iovec iov{out.bytes.data() + out.sent, out.bytes.size() - out.sent};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (out.sent == 0 && out.fd.valid()) attach_descriptor(msg, control, out.fd.get());
    const ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return Status::ok;  // the peer reads later (or never: the owner bounds us)
      return errno == EPIPE || errno == ECONNRESET ? Status::disconnected : Status::io_error;
    }
    out.sent += static_cast<size_t>(n);
    bytes_ -= static_cast<size_t>(n);
    out.fd.reset();  // the descriptor went with the first bytes
    if (out.sent == out.bytes.size()) frames_.pop_front();
  }
  return Status::ok;
}

Result<Frame> recv_frame(int sock, int64_t timeout_ns) {
  FrameReader reader;
  const int64_t deadline = timeout_ns < 0 ? INT64_MAX : now_ns() + timeout_ns;
  for (;;) {
    Frame f;
    auto got = reader.next(f);
    if (!got) return Result<Frame>(got.status(), got.message());
    if (got.value()) {
      if (reader.buffered() != 0) return Result<Frame>(Status::protocol_error, "unexpected bytes after a reply");
      return f;
    }
    const int64_t left = deadline == INT64_MAX ? -1 : deadline - now_ns();
    if (deadline != INT64_MAX && left <= 0) return Result<Frame>(Status::timeout, "no reply from the daemon");
    pollfd p{sock, POLLIN, 0};
    int r = poll(&p, 1, left < 0 ? -1 : static_cast<int>(left / 1'000'000 + 1));
    if (r < 0 && errno != EINTR) return Result<Frame>(Status::io_error, "poll failed");
    if (r <= 0) continue;
    if (Status s = reader.read_some(sock); s != Status::ok) return Result<Frame>(s, "reading the reply failed");
  }
}

std::string default_socket_path() {
  if (const char* dir = std::getenv("XDG_RUNTIME_DIR"); dir != nullptr && *dir != '\0') {
    return std::string(dir) + "/tandem.sock";
  }
  return "/tmp/tandem-" + std::to_string(getuid()) + ".sock";
}

}  // namespace tandem::rt
