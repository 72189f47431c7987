// Framing of the control protocol (src/abi/control.hpp) over a Unix stream socket, with file
// descriptors passed by SCM_RIGHTS. Shared by libtandem (blocking requests) and tandemd (non-blocking,
// epoll-driven); every incoming frame is checked before its payload is believed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "abi/control.hpp"
#include "rt/shm.hpp"
#include "abi/status.hpp"

namespace tandem::rt {

struct Frame {
  abi::control::FrameHeader header;
  std::vector<std::byte> payload;
  UniqueFd fd;  // the descriptor that came with it, if its type carries one

  abi::control::MessageType type() const { return static_cast<abi::control::MessageType>(header.type); }
  // The payload as a fixed-size struct (the size was checked when the frame was read).
  template <class T>
  T as() const {
    T t{};
    if (payload.size() == sizeof(T)) std::memcpy(&t, payload.data(), sizeof(T));
    return t;
  }
  // The fixed part of a variable-size payload (an error reply's status before its message).
  template <class T>
  T prefix_as() const {
    T t{};
    if (payload.size() >= sizeof(T)) std::memcpy(&t, payload.data(), sizeof(T));
    return t;
  }
};

// Checks magic, version, type and the payload size announced for the type.
Status check_header(const abi::control::FrameHeader& h);

// Sends one frame (blocking; retries on EINTR and partial writes). fd < 0: none attached.
Status send_frame(int sock, abi::control::MessageType type, uint32_t request_id, const void* payload, size_t bytes,
                  int fd = -1);

template <class T>
Status send_struct(int sock, abi::control::MessageType type, uint32_t request_id, const T& payload, int fd = -1) {
  return send_frame(sock, type, request_id, &payload, sizeof payload, fd);
}

// Incremental reader for a non-blocking socket.
class FrameReader {
 public:
  static constexpr size_t kMaxPendingFds = 4;

  // Reads what the socket holds now. DISCONNECTED at end of stream, IO_ERROR on failure,
  // PROTOCOL_ERROR if the peer sent too many descriptors.
  Status read_some(int sock);
  // The next complete frame into `out`: true if one was extracted, false if more bytes are needed;
  // PROTOCOL_ERROR if the stream is malformed (the connection should be closed). A frame whose type
  // carries a descriptor has the next one that arrived, or none (out.fd invalid) if none did.
  Result<bool> next(Frame& out);
  size_t buffered() const { return buf_.size(); }

 private:
  std::vector<std::byte> buf_;
  std::deque<UniqueFd> fds_;
};

// Outgoing frames of a non-blocking socket (the daemon side): queued whole, sent as the peer reads,
// never waited for. Each frame's descriptor (duplicated when queued) goes with its first byte.
class FrameWriter {
 public:
  // Queues a frame; `fd` (if >= 0) is duplicated, so the caller keeps its own. IO_ERROR if it cannot
  // be duplicated, INVALID_ARGUMENT if the payload is too large.
  Status queue(abi::control::MessageType type, uint32_t request_id, const void* payload, size_t bytes, int fd = -1);
  // Sends what the socket takes now: ok (pending() says whether bytes are left), DISCONNECTED if the
  // peer is gone, IO_ERROR on another failure.
  Status flush(int sock);
  bool pending() const { return !frames_.empty(); }
  size_t pending_bytes() const { return bytes_; }

 private:
  struct Outgoing {
    std::vector<std::byte> bytes;
    UniqueFd fd;
    size_t sent = 0;
  };
  std::deque<Outgoing> frames_;
  size_t bytes_ = 0;
};

// Blocking receive of one frame (client side), at most timeout_ns (negative: no limit).
Result<Frame> recv_frame(int sock, int64_t timeout_ns);

// Where tandemd listens by default: $XDG_RUNTIME_DIR/tandem.sock, else /tmp/tandem-$UID.sock.
std::string default_socket_path();

}  // namespace tandem::rt
