// Kernel channel round trips between two threads: pipe, eventfd, Unix stream socket. The timed path
// is plain blocking read()/write(); a StallWatchdog unblocks both sides if replies stop coming.

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "support/detail/peer_common.hpp"
#include "support/peers.hpp"
#include "support/unique_fd.hpp"
#include "support/watchdog.hpp"

namespace tandem::bench {

std::string_view to_string(Channel channel) {
  switch (channel) {
    case Channel::pipe: return "pipe";
    case Channel::eventfd: return "eventfd";
    case Channel::unix_stream: return "unix_stream";
  }
  return "unknown";
}

namespace {

constexpr std::size_t kMaxRequestWords = 64;

// Both directions of one channel. Endpoint fds are borrowed from `owned`, which closes them.
class ChannelPair {
 public:
  static Result<ChannelPair> open(Channel kind) {
    ChannelPair c;
    c.kind_ = kind;
    switch (kind) {
      case Channel::pipe: {
        int request[2];
        int reply[2];
        if (pipe2(request, O_CLOEXEC) != 0) return {Status::io_error, "pipe2 failed"};
        c.own(request[0]);
        c.own(request[1]);
        if (pipe2(reply, O_CLOEXEC) != 0) return {Status::io_error, "pipe2 failed"};
        c.own(reply[0]);
        c.own(reply[1]);
        c.measure_out_ = request[1];
        c.echo_in_ = request[0];
        c.echo_out_ = reply[1];
        c.measure_in_ = reply[0];
        break;
      }
      case Channel::eventfd: {
        const int request = eventfd(0, EFD_CLOEXEC);
        if (request < 0) return {Status::io_error, "eventfd failed"};
        c.own(request);
        const int reply = eventfd(0, EFD_CLOEXEC);
        if (reply < 0) return {Status::io_error, "eventfd failed"};
        c.own(reply);
        c.measure_out_ = c.echo_in_ = request;
        c.echo_out_ = c.measure_in_ = reply;
        break;
      }
      case Channel::unix_stream: {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
          return {Status::io_error, "socketpair failed"};
        }
        c.own(sv[0]);
        c.own(sv[1]);
        c.measure_out_ = c.measure_in_ = sv[0];
        c.echo_out_ = c.echo_in_ = sv[1];
        break;
      }
    }
    return c;
  }

  int measure_out() const { return measure_out_; }
  int measure_in() const { return measure_in_; }
  int echo_in() const { return echo_in_; }
  int echo_out() const { return echo_out_; }

  // Wakes both sides out of a blocking read without closing anything a thread is using: a byte (a
  // counter increment for eventfd) into each direction, or shutdown() for the socket. The data
  // stream is spoilt afterwards, which is fine: both sides see `aborted` and stop.
  void unblock_both() const {
    switch (kind_) {
      case Channel::pipe: {
        const char byte = 0;
        (void)!write(measure_out_, &byte, 1);
        (void)!write(echo_out_, &byte, 1);
        break;
      }
      case Channel::eventfd: {
        const uint64_t one = 1;
        (void)!write(measure_out_, &one, sizeof(one));
        (void)!write(echo_out_, &one, sizeof(one));
        break;
      }
      case Channel::unix_stream:
        shutdown(measure_out_, SHUT_RDWR);
        break;
    }
  }

 private:
  void own(int fd) { owned_.emplace_back(fd); }

  Channel kind_ = Channel::pipe;
  std::vector<UniqueFd> owned_;
  int measure_out_ = -1;
  int measure_in_ = -1;
  int echo_in_ = -1;
  int echo_out_ = -1;
};

// Shared by both sides and the watchdog. The first to give up raises `aborted` and unblocks both.
struct Session {
  const ChannelPair& channel;
  std::atomic<bool> aborted{false};
  std::atomic<uint64_t> progress{0};  // round trips completed; watched for stalls

  void abort() {
    // acq_rel: only the first caller unblocks, and it does so after the flag is visible.
    if (!aborted.exchange(true, std::memory_order_acq_rel)) channel.unblock_both();
  }
  bool is_aborted() const { return aborted.load(std::memory_order_acquire); }
};

Status write_full(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::io_error;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return Status::ok;
}

Status read_full(int fd, void* data, std::size_t size, const Session& session) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = read(fd, p, size);
    if (session.is_aborted()) return Status::cancelled;
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::io_error;
    }
    if (n == 0) return Status::disconnected;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return Status::ok;
}

}  // namespace

Result<Samples> channel_rtt(Channel kind, const PeerOptions& options, std::size_t request_words) {
  if (request_words == 0 || request_words > kMaxRequestWords) {
    return {Status::invalid_argument, "channel round trip: request_words must be 1..64"};
  }
  // An eventfd transfers exactly one 8-byte counter per read or write.
  const std::size_t request_bytes = kind == Channel::eventfd ? 8 : request_words * 8;
  Result<ChannelPair> channel = ChannelPair::open(kind);
  if (!channel.ok()) return {channel.status(), "channel round trip: " + channel.message()};

  const detail::Placement where = detail::resolve_placement(options);
  Session session{channel.value()};
  const auto rounds = detail::total_round_trips(options);

  Status echo_status = Status::ok;  // written by the echo thread, read after join()
  Result<std::thread> echo = detail::start_thread([&] {
    ScopedPin pin(where.cpu_b);
    std::array<uint64_t, kMaxRequestWords> request{};
    for (std::size_t n = 0; n < rounds; ++n) {
      echo_status = read_full(session.channel.echo_in(), request.data(), request_bytes, session);
      if (echo_status != Status::ok) break;
      const uint64_t reply = kind == Channel::eventfd ? 1 : request[0] + 1;  // eventfd: a count
      echo_status = write_full(session.channel.echo_out(), &reply, sizeof(reply));
      if (echo_status != Status::ok) break;
    }
    if (echo_status != Status::ok) session.abort();
  });
  if (!echo.ok()) return {echo.status(), echo.message()};

  Result<Samples> samples = [&]() -> Result<Samples> {
    StallWatchdog watchdog(options.timeout, session.progress, [&] { session.abort(); });
    ScopedPin pin(where.cpu_a);
    std::array<uint64_t, kMaxRequestWords> request{};
    uint64_t seq = 0;
    uint64_t done = 0;
    Result<Samples> got = sample_loop_status(detail::sample_plan(options), [&] {
      request[0] = kind == Channel::eventfd ? 1 : ++seq;
      if (Status st = write_full(session.channel.measure_out(), request.data(), request_bytes);
          st != Status::ok) {
        return st;
      }
      uint64_t reply = 0;
      if (Status st = read_full(session.channel.measure_in(), &reply, sizeof(reply), session);
          st != Status::ok) {
        return st;
      }
      // Relaxed: the watchdog only looks for change.
      session.progress.store(++done, std::memory_order_relaxed);
      return kind == Channel::eventfd || reply == seq + 1 ? Status::ok : Status::protocol_error;
    });
    if (!got.ok()) {
      const bool stalled = watchdog.fired();
      session.abort();
      return {stalled ? Status::timeout : got.status(),
              std::string("channel round trip (") + std::string(to_string(kind)) +
                  "): " + (stalled ? "no reply in time" : "failed")};
    }
    return got;
  }();
  if (!samples.ok()) session.abort();
  echo->join();
  if (samples.ok() && echo_status != Status::ok) {
    return {echo_status, "channel round trip: the echoing thread failed"};
  }
  return samples;
}

}  // namespace tandem::bench
