// Peer round trips: the references tandem's benchmarks divide by, measured in the same run.
//
// Every function returns one round-trip time in ns per sample (see PeerOptions), cleans up fully
// before returning (threads joined, child processes reaped, fds closed, memory unmapped) and never
// hangs: each wait is bounded by PeerOptions::timeout and a stall comes back as Status::timeout.
//
// Who is on each side:
//   thread_pingpong_rtt, futex_rtt, channel_rtt: the calling thread measures, one helper thread echoes.
//   process_pingpong_rtt: the calling thread measures, a forked child process echoes.
//   iouring_nop_rtt: the calling thread alone (the kernel completes the NOP inline).
//   starpu_task_costs: a forked child process runs StarPU (main thread submits, one CPU worker runs).
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "abi/status.hpp"

namespace tandem::bench {

struct PeerOptions {
  std::size_t samples = 10'000;
  std::size_t warmup = 1'000;
  // 1: each sample is one round trip (its clock read included, about 17 ns with the TSC). More: each
  // sample is the mean of that many back-to-back round trips, which hides the clock but also the tail.
  std::size_t round_trips_per_sample = 1;
  // Longest wait for any one reply before the peer gives up with Status::timeout.
  std::chrono::milliseconds timeout{2'000};
  // Pin the measuring side to cpu_a and the echoing side to cpu_b (-1: the first and second CPUs in
  // the caller's affinity mask). The caller's own affinity is restored afterwards.
  bool pin = true;
  int cpu_a = -1;
  int cpu_b = -1;
};

using Samples = std::vector<double>;  // ns per round trip, one entry per sample

// Two threads, one cache line each way, spinning with a pause instruction: the floor for any
// in-process round trip between cores (tandem's in-process no-op job is compared with this).
Result<Samples> thread_pingpong_rtt(const PeerOptions& options);

// The same protocol between this process and a forked child on one MAP_SHARED page: the reference
// for a round trip through the daemon.
Result<Samples> process_pingpong_rtt(const PeerOptions& options);

// Two threads that block on a futex each way (wait, then the partner's wake): the floor for a
// round trip in which both sides sleep. `shared` futexes (keyed by page, as tandem's cross-process
// rings need) cost slightly more than process-private ones.
enum class FutexScope { process_private, shared };
Result<Samples> futex_rtt(const PeerOptions& options, FutexScope scope = FutexScope::shared);

// io_uring: submit one NOP and reap its completion (liburing; io_uring_submit, then
// io_uring_wait_cqe_timeout, which finds the inline-completed CQE without a second system call).
Result<Samples> iouring_nop_rtt(const PeerOptions& options);

// Kernel channels between two threads (tandem bench comm's baselines, thesis Tables 4.1/4.2): send
// request_words 8-byte words, receive one word back, with blocking read()/write(). An eventfd carries
// one 8-byte counter, so it ignores request_words (a pure doorbell).
enum class Channel { pipe, eventfd, unix_stream };
Result<Samples> channel_rtt(Channel channel, const PeerOptions& options, std::size_t request_words = 1);
std::string_view to_string(Channel channel);

// StarPU 1.3 (pkg-config starpu-1.3), run in a forked child so that its initialisation, threads,
// environment and signal handlers never touch the caller, and a stuck StarPU can be killed:
//  - sync: create and submit one task of an empty CPU codelet with task->synchronous = 1 (one
//    sample per task, options.samples of them after options.warmup);
//  - async: submit tasks_per_batch such tasks, then starpu_task_wait_for_all(); a sample is the
//    batch time divided by tasks_per_batch.
// One CPU worker, bound to cpu_b, with the submitting thread on cpu_a: on a 2-core machine a second
// worker would only compete with the submitter for a core. STARPU_SILENT=1, STARPU_HOME is a fresh
// temporary directory removed afterwards, no calibration, StarPU's signal handlers disabled.
struct StarpuOptions {
  bool measure_sync = true;
  bool measure_async = true;
  std::size_t async_batches = 20;
  std::size_t tasks_per_batch = 1'000;
  std::string scheduler;  // empty: StarPU's default policy (the one a user gets; "lws" in 1.3)
  std::chrono::milliseconds total_timeout{60'000};  // whole child, StarPU start-up included
};
struct StarpuResult {
  Samples sync_rtt;     // ns per synchronous task
  Samples async_task;   // ns per task, one entry per batch
  std::string scheduler;
  unsigned workers = 0;
};
Result<StarpuResult> starpu_task_costs(const PeerOptions& options, const StarpuOptions& starpu = {});

// ---------------------------------------------------------------------------------------------------
// Registry: every peer under one name, for tables and JSON.

enum class Peer {
  thread_pingpong,
  process_pingpong,
  futex,
  iouring_nop,
  starpu_sync,
  starpu_async,
  pipe,
  eventfd,
  unix_socket,
};

struct PeerInfo {
  Peer peer;
  std::string_view name;  // short command-line name, e.g. "futex"
  std::string_view key;   // JSON key of its median, e.g. "futex_rtt_ns"
  std::string_view description;
};

std::span<const PeerInfo> all_peers();
const PeerInfo& peer_info(Peer peer);
// False when the build left the peer out (TANDEM_BUILD_BENCH_PEERS=OFF for io_uring and StarPU);
// measuring such a peer returns Status::not_accelerated with a message saying what to install.
bool peer_available(Peer peer);
// Runs one peer with default settings for its kind (StarPU: only the half asked for; channels: one
// word each way).
Result<Samples> measure_peer(Peer peer, const PeerOptions& options);

}  // namespace tandem::bench
