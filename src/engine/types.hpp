// Vocabulary of the sans-I/O engine: ids, job and barrier descriptions, and the actions it returns.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "abi/status.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::engine {

using Time = int64_t;  // nanoseconds on the driver's clock (real or virtual); the engine never reads one
using FunctionId = uint16_t;
using SessionId = uint32_t;
using RingId = uint32_t;
using SlotId = uint32_t;
using QueueId = uint32_t;
using JobId = uint32_t;

inline constexpr uint32_t kNone = UINT32_MAX;
inline constexpr uint32_t kMaxFunctions = TANDEM_FN_MAX;

// A decoded and validated dispatch packet (the driver has already checked the packet and translated
// its addresses; the engine deals only with scheduling metadata).
struct JobSpec {
  FunctionId function = 0;
  uint32_t flags = 0;         // TANDEM_FLAG_* (DEMAND_ONLY matters here)
  uint64_t workload = 0;      // work units, for queue figures and the job-size bound
  SessionId session = 0;
  RingId ring = kNone;        // kNone when not submitted through a ring (simulator)
  bool barrier_bit = false;   // the ring waits for this job before its next packet
  uint64_t completion = 0;    // driver's key for the completion record (0: nothing to write)
  uint64_t tag = 0;           // opaque driver data, handed back in actions
};

// How the driver found a barrier dependency when it decoded the packet.
enum class DepState : uint8_t {
  unused,      // empty dependency slot
  pending,     // record still says PENDING: wait for the job that completes it
  done_ok,     // already completed successfully
  done_failed  // already completed with an error
};

struct BarrierSpec {
  SessionId session = 0;
  RingId ring = kNone;
  uint64_t completion = 0;
  uint64_t tag = 0;
  std::array<uint64_t, TANDEM_BARRIER_DEPS> deps{};  // completion keys
  std::array<DepState, TANDEM_BARRIER_DEPS> dep_state{};
};

enum class ActionKind : uint8_t {
  start_job,        // run `job` (function, workload) on `slot`
  complete,         // write (status, value) into completion record `completion`
  begin_configure,  // start loading `function` into `slot`; call configure_done(slot) at `until`
  session_drained,  // a closed session has no job left anywhere: its memory may be released
};

struct Action {
  ActionKind kind = ActionKind::complete;
  Status status = Status::ok;
  FunctionId function = 0;
  SlotId slot = kNone;
  JobId job = kNone;         // start_job, complete (kNone for barriers and rejected packets)
  SessionId session = kNone;
  uint64_t completion = 0;   // complete
  uint64_t tag = 0;          // start_job, complete
  uint64_t workload = 0;     // start_job
  int64_t value = 0;         // complete
  Time device_ns = 0;        // complete: time the job held its slot
  Time until = 0;            // begin_configure
};

// Actions produced by one event. Reused by the driver: clear() keeps the capacity, so the steady
// state allocates nothing.
using Actions = std::vector<Action>;

}  // namespace tandem::engine
