// `tandem chaos`: many client processes of mixed behaviour against one real tandemd, with clients and
// the daemon killed, stopped and restarted at random (docs/daemon.md, "The chaos tier"). This header
// is what the driver (cmd_chaos.cc) and the client processes (chaos_clients.cc) share: a board in
// shared memory that survives any client's SIGKILL, and the client roles.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace tandem::tools::chaos {

enum class Role : uint32_t {
  high_level,       // tandem_accumulate / tandem_work in the round's mode, every result checked
  low_level,        // pipelined accumulate jobs on its own queue, every completion checked
  flooder,          // keeps far more jobs in flight than a queue holds, on the correct clients' function
  reserver,         // reserves ring slots and never publishes them
  garbage_packets,  // random packets: types, functions, flags, arguments, completion addresses
  garbage_control,  // malformed control messages, stray descriptors, truncated frames
  non_reader,       // thousands of status requests, never reads a reply
  idle_connector,   // connections that never say hello
  count_
};
const char* role_name(Role role);
// Correct clients check every result; the others only make trouble.
inline bool checks_results(Role role) { return role == Role::high_level || role == Role::low_level; }

// One client's figures. Written by the client only (relaxed atomics: the driver reads totals).
struct ClientSlot {
  std::atomic<pid_t> pid{0};
  std::atomic<uint32_t> role{0};
  std::atomic<uint32_t> connected{0};  // a correct client with a session it believes alive
  std::atomic<uint64_t> calls{0};      // high-level calls or low-level jobs whose outcome was checked
  std::atomic<uint64_t> ok{0};
  std::atomic<uint64_t> wrong{0};       // a result that differs from the reference
  std::atomic<uint64_t> lost{0};        // a job that never completed while the daemon lived
  std::atomic<uint64_t> duplicated{0};  // a record written again after its completion was consumed
  std::atomic<uint64_t> queue_full{0};
  std::atomic<uint64_t> other_errors{0};  // any other status a correct client should never see
  std::atomic<uint64_t> device_errors{0};  // a low-level job's DEVICE_ERROR or NO_MEMORY, where faults are injected
  std::atomic<uint64_t> disconnects{0};   // calls or waits that returned DISCONNECTED
  std::atomic<int64_t> last_disconnect_ns{0};  // when the latest DISCONNECTED streak began
  std::atomic<int64_t> in_call_since_ns{0};    // a correct client inside a library call: since when (0: not)
  std::atomic<int64_t> started_ns{0};          // when the driver started the slot's current process
  std::atomic<uint64_t> actions{0};       // what a trouble-maker did (packets, frames, connections)
};

inline constexpr uint32_t kMaxClients = 48;

// Control-plane probe figures of one round.
struct ProbeStats {
  std::atomic<uint64_t> samples{0};
  std::atomic<uint64_t> failures{0};    // no answer within 2 s while the daemon was up
  std::atomic<uint64_t> over_limit{0};  // answers slower than the limit
  std::atomic<uint64_t> over_limit_beyond_noise{0};  // ... by more than the machine's delay (run_prober)
  std::atomic<int64_t> max_ns{0};
  std::atomic<int64_t> sum_ns{0};
  std::atomic<int64_t> echo_max_ns{0};  // slowest reference round trip to an idle sibling process
  std::atomic<int64_t> cpu_wait_max_ns{0};  // most time one answer's threads spent waiting for a CPU
};

inline constexpr uint32_t kMaxRounds = 4096;

struct Board {
  char socket[108] = {};
  std::atomic<uint32_t> mode{0};           // tandem_mode_t of the round
  std::atomic<uint32_t> stop_clients{0};   // the round ends: correct clients finish and exit
  std::atomic<uint32_t> stop_probe{0};
  std::atomic<uint32_t> round{0};
  std::atomic<uint32_t> daemon_unavailable{0};  // stopped, dead or restarting: probes do not count
  std::atomic<pid_t> daemon_pid{0};              // whose scheduler statistics the prober reads
  std::atomic<uint64_t> daemon_generation{0};   // bumped whenever the daemon is disturbed
  std::atomic<int64_t> daemon_paused_ns{0};     // total time the daemon spent stopped (SIGSTOP)
  std::atomic<int64_t> probe_limit_ns{100'000'000};
  std::atomic<uint32_t> device_faults{0};  // the daemon's device injects faults (chaos --device-faults)
  ClientSlot clients[kMaxClients];
  ProbeStats probes[kMaxRounds];
};

// A thread's scheduler figures (/proc/.../schedstat): time on a CPU and time runnable but waiting for
// one, ns; both -1 when the kernel does not say.
struct CpuTimes {
  int64_t ran_ns = -1;
  int64_t waited_ns = -1;
};
CpuTimes cpu_times(const std::string& schedstat_path);

// Runs a client of `role` until the board says stop (or it is killed); returns its exit code.
int run_client(Role role, Board& board, ClientSlot& slot, uint64_t seed);
// The control-plane prober: a status request every 50 ms, timed, into board.probes[round].
int run_prober(Board& board);

}  // namespace tandem::tools::chaos
