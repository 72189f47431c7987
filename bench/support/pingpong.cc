// Raw shared-memory ping-pong between two threads or two processes.
//
// Protocol: the measuring side release-stores sequence number n into `ping`; the echoing side, which
// spins on `ping` with acquire loads, release-stores n into `pong`; the measuring side spins on
// `pong` with acquire loads until it reads n. Each direction moves exactly one cache line.

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "support/child_process.hpp"
#include "support/detail/peer_common.hpp"
#include "support/detail/spin_wait.hpp"
#include "support/peers.hpp"

namespace tandem::bench {

namespace {

using detail::SpinPolicy;
using detail::WaitOutcome;

// Plain fields reached only through std::atomic_ref, so the same layout works on the stack (threads)
// and in a MAP_SHARED page (processes): no pointers, nothing to construct. Separate cache lines, so
// the only traffic is the line that carries the message.
struct PingPongLines {
  alignas(64) uint64_t ping;  // measuring -> echoing side: latest request's sequence number
  alignas(64) uint64_t pong;  // echoing -> measuring side: latest reply's sequence number
  alignas(64) uint32_t stop;  // raised by a side that gives up, so the other stops too
};
static_assert(sizeof(PingPongLines) == 192);
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free, "cross-process atomics must be lock-free");
static_assert(std::atomic_ref<uint32_t>::is_always_lock_free, "cross-process atomics must be lock-free");

void raise_stop(PingPongLines& lines) {
  // Relaxed: the flag carries no data; the partner only needs to notice it eventually.
  std::atomic_ref<uint32_t>(lines.stop).store(1, std::memory_order_relaxed);
}

bool stop_raised(PingPongLines& lines) {
  return std::atomic_ref<uint32_t>(lines.stop).load(std::memory_order_relaxed) != 0;
}

// The echoing side: answers round trips 1..rounds. Status::ok, timeout, or cancelled (partner gave up).
Status echo_loop(PingPongLines& lines, uint64_t rounds, const SpinPolicy& policy) {
  std::atomic_ref<uint64_t> ping(lines.ping);
  std::atomic_ref<uint64_t> pong(lines.pong);
  for (uint64_t seq = 1; seq <= rounds; ++seq) {
    // Acquire, paired with the measuring side's release store of ping.
    const WaitOutcome got = detail::spin_until(
        [&] { return ping.load(std::memory_order_acquire) == seq; }, [&] { return stop_raised(lines); },
        policy);
    if (got != WaitOutcome::ready) {
      raise_stop(lines);
      return got == WaitOutcome::timed_out ? Status::timeout : Status::cancelled;
    }
    // Release, paired with the measuring side's acquire load of pong.
    pong.store(seq, std::memory_order_release);
  }
  return Status::ok;
}

// The measuring side: warm-up and samples, one round trip per op.
Result<Samples> measure_loop(PingPongLines& lines, const PeerOptions& options, const SpinPolicy& policy,
                             const char* what) {
  std::atomic_ref<uint64_t> ping(lines.ping);
  std::atomic_ref<uint64_t> pong(lines.pong);
  uint64_t seq = 0;
  auto round_trip = [&]() -> Status {
    ++seq;
    // Release, paired with the echoing side's acquire load of ping.
    ping.store(seq, std::memory_order_release);
    // Acquire, paired with the echoing side's release store of pong.
    const WaitOutcome got = detail::spin_until(
        [&] { return pong.load(std::memory_order_acquire) == seq; }, [&] { return stop_raised(lines); },
        policy);
    if (got == WaitOutcome::ready) return Status::ok;
    return got == WaitOutcome::timed_out ? Status::timeout : Status::cancelled;
  };
  Result<Samples> samples = sample_loop_status(detail::sample_plan(options), round_trip);
  if (!samples.ok()) {
    raise_stop(lines);
    return {samples.status(), std::string(what) + ": " +
                                  (samples.status() == Status::timeout ? "no reply in time"
                                                                       : "the echoing side gave up")};
  }
  return samples;
}

// An anonymous shared page, unmapped on scope exit.
class SharedPage {
 public:
  SharedPage() {
    void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    addr_ = p == MAP_FAILED ? nullptr : p;
  }
  ~SharedPage() {
    if (addr_ != nullptr) munmap(addr_, kSize);
  }
  SharedPage(const SharedPage&) = delete;
  SharedPage& operator=(const SharedPage&) = delete;
  void* get() const { return addr_; }

 private:
  static constexpr std::size_t kSize = 4096;
  void* addr_ = nullptr;
};

}  // namespace

Result<Samples> thread_pingpong_rtt(const PeerOptions& options) {
  const detail::Placement where = detail::resolve_placement(options);
  const SpinPolicy policy = SpinPolicy::for_cpus(where.distinct, detail::timeout_ns(options));
  PingPongLines lines{};
  Status echo_status = Status::ok;  // written by the echo thread, read after join()
  Result<std::thread> echo = detail::start_thread([&] {
    ScopedPin pin(where.cpu_b);
    echo_status = echo_loop(lines, detail::total_round_trips(options), policy);
  });
  if (!echo.ok()) return {echo.status(), echo.message()};

  Result<Samples> samples = [&] {
    ScopedPin pin(where.cpu_a);
    return measure_loop(lines, options, policy, "thread ping-pong");
  }();
  echo->join();
  if (samples.ok() && echo_status != Status::ok) {
    return {echo_status, "thread ping-pong: the echoing thread failed"};
  }
  return samples;
}

Result<Samples> process_pingpong_rtt(const PeerOptions& options) {
  const detail::Placement where = detail::resolve_placement(options);
  const SpinPolicy policy = SpinPolicy::for_cpus(where.distinct, detail::timeout_ns(options));
  SharedPage page;
  if (page.get() == nullptr) return {Status::no_memory, "process ping-pong: mmap of a shared page failed"};
  // A fresh anonymous mapping is zero-filled; construct_at starts the object's lifetime there.
  PingPongLines& lines = *std::construct_at(static_cast<PingPongLines*>(page.get()));

  const uint64_t rounds = detail::total_round_trips(options);
  Result<ChildProcess> child = ChildProcess::spawn([&]() -> int {
    if (where.cpu_b >= 0) pin_this_thread(where.cpu_b);
    return echo_loop(lines, rounds, policy) == Status::ok ? 0 : 1;
  });
  if (!child.ok()) return {child.status(), "process ping-pong: " + child.message()};

  Result<Samples> samples = [&] {
    ScopedPin pin(where.cpu_a);
    return measure_loop(lines, options, policy, "process ping-pong");
  }();
  // The child leaves right after its last reply, or within one timeout once stop is raised.
  Result<int> exit_code = child->wait_for(options.timeout + std::chrono::milliseconds(500));
  if (samples.ok() && (!exit_code.ok() || exit_code.value() != 0)) {
    return {Status::io_error, "process ping-pong: the echoing process failed"};
  }
  return samples;
}

}  // namespace tandem::bench
