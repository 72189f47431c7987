// The peer registry, and stand-ins for peers this build left out.

#include <array>

#include "support/peers.hpp"

namespace tandem::bench {

namespace {

constexpr std::array<PeerInfo, 9> kPeers{{
    {Peer::thread_pingpong, "pingpong", "pingpong_rtt_ns",
     "two threads, shared-memory ping-pong (one cache line each way, spinning)"},
    {Peer::process_pingpong, "process-pingpong", "daemon_pingpong_rtt_ns",
     "two processes, ping-pong on one MAP_SHARED page (spinning)"},
    {Peer::futex, "futex", "futex_rtt_ns", "two threads, futex wait/wake each way"},
    {Peer::iouring_nop, "iouring", "iouring_nop_rtt_ns", "io_uring NOP: submit, reap its completion"},
    {Peer::starpu_sync, "starpu-sync", "starpu_sync_rtt_ns", "StarPU empty task, task->synchronous = 1"},
    {Peer::starpu_async, "starpu-async", "starpu_async_task_ns",
     "StarPU empty tasks, submitted in batches, per task"},
    {Peer::pipe, "pipe", "pipe_rtt_ns", "two threads, pipe each way (8 B each way)"},
    {Peer::eventfd, "eventfd", "eventfd_rtt_ns", "two threads, eventfd each way"},
    {Peer::unix_socket, "unix-socket", "unix_socket_rtt_ns",
     "two threads, Unix stream socket pair (8 B each way)"},
}};

}  // namespace

std::span<const PeerInfo> all_peers() { return kPeers; }

const PeerInfo& peer_info(Peer peer) {
  for (const PeerInfo& p : kPeers) {
    if (p.peer == peer) return p;
  }
  return kPeers[0];  // unreachable: every Peer is listed
}

bool peer_available(Peer peer) {
  switch (peer) {
    case Peer::iouring_nop:
#ifdef TANDEM_HAVE_LIBURING
      return true;
#else
      return false;
#endif
    case Peer::starpu_sync:
    case Peer::starpu_async:
#ifdef TANDEM_HAVE_STARPU
      return true;
#else
      return false;
#endif
    default:
      return true;
  }
}

Result<Samples> measure_peer(Peer peer, const PeerOptions& options) {
  switch (peer) {
    case Peer::thread_pingpong: return thread_pingpong_rtt(options);
    case Peer::process_pingpong: return process_pingpong_rtt(options);
    case Peer::futex: return futex_rtt(options);
    case Peer::iouring_nop: return iouring_nop_rtt(options);
    case Peer::starpu_sync:
    case Peer::starpu_async: {
      StarpuOptions starpu;
      starpu.measure_sync = peer == Peer::starpu_sync;
      starpu.measure_async = peer == Peer::starpu_async;
      Result<StarpuResult> got = starpu_task_costs(options, starpu);
      if (!got.ok()) return {got.status(), got.message()};
      return peer == Peer::starpu_sync ? std::move(got->sync_rtt) : std::move(got->async_task);
    }
    case Peer::pipe: return channel_rtt(Channel::pipe, options);
    case Peer::eventfd: return channel_rtt(Channel::eventfd, options);
    case Peer::unix_socket: return channel_rtt(Channel::unix_stream, options);
  }
  return {Status::invalid_argument, "unknown peer"};
}

#ifndef TANDEM_HAVE_LIBURING
Result<Samples> iouring_nop_rtt(const PeerOptions&) {
  return {Status::not_accelerated,
          "io_uring peer not built (needs liburing-dev and -DTANDEM_BUILD_BENCH_PEERS=ON)"};
}
#endif

#ifndef TANDEM_HAVE_STARPU
Result<StarpuResult> starpu_task_costs(const PeerOptions&, const StarpuOptions&) {
  return {Status::not_accelerated,
          "StarPU peer not built (needs libstarpu-dev and -DTANDEM_BUILD_BENCH_PEERS=ON)"};
}
#endif

}  // namespace tandem::bench
