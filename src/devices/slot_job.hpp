// The job a real device's slot runs (OpenCL, CUDA) and its time limit. Neither API can cancel a running
// kernel, so a job past its limit is completed with TIMEOUT at once and its slot leaves service until
// the device has finished it ("abandoned"); then the slot serves again. A slot whose rebuild after a
// fault failed is tried again later. DeviceFaults counts what happened for `tandem status`, and
// DeviceBreaker takes a device whose every launch fails out of service as a whole. Dispatcher thread only.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "abi/status.hpp"
#include "devices/device.hpp"

namespace tandem::devices {

struct SlotJob {
  bool busy = false;
  bool abandoned = false;  // completed with TIMEOUT; the device still runs it
  uint64_t token = 0;
  int64_t start_ns = 0;
  SlotHealth health;

  void start(uint64_t job_token, int64_t start) {
    token = job_token;
    start_ns = start;
    busy = true;
    abandoned = false;
  }
  // If the job has run `limit_ns` by `now`: appends its TIMEOUT completion and takes the slot out of service.
  void expire(uint32_t slot, int64_t now, int64_t limit_ns, std::vector<DeviceCompletion>& out) {
    if (!busy || abandoned || now - start_ns < limit_ns) return;
    abandoned = true;
    health.in_service = false;
    health.last_error = fmt::format("a job ran longer than job_timeout_ms = {:.0f}: completed with TIMEOUT, the slot is "
                                    "out of service until the device finishes it",
                                    static_cast<double>(limit_ns) / 1e6);
    DeviceCompletion c;
    c.token = token;
    c.slot = slot;
    c.status = Status::timeout;
    out.push_back(c);
  }
  // The device finished the job. True if it had been completed already (abandoned): the slot serves
  // again and nothing more is reported.
  bool finished(int64_t now) {
    busy = false;
    if (!abandoned) return false;
    abandoned = false;
    health.in_service = failed_rebuilds == 0;  // a slot waiting for its rebuild stays out
    health.last_error += fmt::format("; it ended {:.1f} ms after it started and the slot is back in service",
                                     static_cast<double>(now - start_ns) / 1e6);
    return true;
  }
  // A slot whose rebuild (a new queue or stream after a fault) failed is out of service; the device
  // tries again at rebuild_at_ns, waiting twice as long after each failure, up to kMaxRebuildWaitNs.
  static constexpr int64_t kFirstRebuildWaitNs = 100'000'000;
  static constexpr int64_t kMaxRebuildWaitNs = 10'000'000'000;
  int64_t rebuild_at_ns = INT64_MAX;
  uint32_t failed_rebuilds = 0;
  std::string rebuild_reason;  // the fault that made the first rebuild necessary
  void rebuild_failed(int64_t now, const std::string& reason, const std::string& error) {
    if (failed_rebuilds == 0) rebuild_reason = reason;
    ++failed_rebuilds;
    const int64_t wait = std::min(kFirstRebuildWaitNs << std::min<uint32_t>(failed_rebuilds - 1, 16), kMaxRebuildWaitNs);
    rebuild_at_ns = now + wait;
    health.in_service = false;
    health.last_error = fmt::format("{}; rebuilding the slot failed {} time(s) (last: {}); out of service, next try in "
                                    "{:.0f} ms",
                                    rebuild_reason, failed_rebuilds, error, static_cast<double>(wait) / 1e6);
  }
  // The slot was rebuilt after `reason` (a fault, or rebuild_reason on a retry): it serves again.
  void rebuilt(const std::string& reason, const char* what) {
    health.in_service = true;
    health.last_error = failed_rebuilds == 0 ? fmt::format("{}; {}", reason, what)
                                             : fmt::format("{}; {} after {} failed tries", reason, what, failed_rebuilds);
    failed_rebuilds = 0;
    rebuild_at_ns = INT64_MAX;
    rebuild_reason.clear();
  }
  bool rebuild_due(int64_t now) const { return failed_rebuilds > 0 && now >= rebuild_at_ns; }
  // When expire() or a rebuild next has something to do.
  int64_t deadline(int64_t limit_ns) const {
    return std::min(busy && !abandoned ? start_ns + limit_ns : INT64_MAX, rebuild_at_ns);
  }
};

// A real device's faults since it started, for `tandem status` (Device::activity()).
struct DeviceFaults {
  // Launches (a job or a batch) whose commands failed on the device, or that the API refused (CUDA).
  uint64_t failed_launches = 0;
  uint64_t rebuilds = 0;         // slots rebuilt after one (a new queue or stream)
  uint64_t failed_rebuilds = 0;  // tries that failed (the slot stays out of service)
  uint64_t out_of_memory = 0;    // jobs whose buffers found no device memory (NO_MEMORY)
  std::string lost;              // why the whole device is out of service (empty while it is not)
  uint64_t losses = 0;           // times it went out of service as a whole (DeviceBreaker, a lost CUDA context)
  std::string last_loss;         // the last one's reason, once it serves again

  // The clauses of the activity line ("; ..." each), empty when nothing happened. `rebuilt` names
  // what a rebuild makes ("command queues", "streams").
  std::string describe(std::string_view rebuilt) const {
    std::string s;
    if (out_of_memory > 0) s += fmt::format("; {} jobs found no device memory for their buffers", out_of_memory);
    if (failed_launches + failed_rebuilds > 0) {
      s += fmt::format("; faults: {} launches failed on the device, {} {} rebuilt ({} rebuilds failed)", failed_launches,
                       rebuilds, rebuilt, failed_rebuilds);
    }
    if (!lost.empty()) {
      s += "; device lost: " + lost;
    } else if (losses > 0) {
      s += fmt::format("; device lost {} time(s), serving again (the last: {})", losses, last_loss);
    }
    return s;
  }
};

// A device on which every launch fails on the device (a GPU reset or a context the driver dropped:
// each slot's new queue fails as the old one did) is taken out of service as a whole after
// kFailuresInARow failed launches without a success between: its jobs are then refused at once (the
// client runs them on the CPU) instead of each paying a launch, a failure and a rebuild. After a wait
// (100 ms, doubling to 10 s while it keeps failing) every slot serves again on probation: a success
// ends the probation, the first failure takes the device out again. The device asks
// slot_in_service() through DeviceFaults::lost.
//
// Launch order, not completion order, counts: each launch takes a number (launch_started), and an
// outcome counts only if its launch started after the last failure counted was seen. Launches in
// flight together that fail together (found by one event check, say) count once, so a working device
// with several slots is not taken out by one burst; on a dead device each round counts once. On
// probation only launches started since it began count. Dispatcher thread only.
struct DeviceBreaker {
  static constexpr uint32_t kFailuresInARow = 8;
  uint32_t failures_in_a_row = 0;
  bool probation = false;
  int64_t wait_ns = 0;
  int64_t retry_at_ns = INT64_MAX;  // when the slots serve again (while out of service)
  uint64_t launches = 0;            // numbers given so far
  uint64_t counted_after = 0;       // outcomes of launches numbered up to this one no longer count

  uint64_t launch_started() { return ++launches; }

  // Launch number `launch` (a job or a batch) ended: failed on the device, or not.
  void launch_ended(uint64_t launch, bool failed, std::string_view why, int64_t now, DeviceFaults& faults) {
    if (launch <= counted_after || !faults.lost.empty()) return;  // older than what was counted, or in flight at the loss
    if (!failed) {
      failures_in_a_row = 0;
      probation = false;
      wait_ns = 0;
      return;
    }
    ++failures_in_a_row;
    counted_after = launches;  // those in flight now failed with this one, or will be judged by their peers'
    if (!probation && failures_in_a_row < kFailuresInARow) return;
    const bool again = probation;
    wait_ns = again ? std::min(wait_ns * 2, SlotJob::kMaxRebuildWaitNs) : SlotJob::kFirstRebuildWaitNs;
    probation = false;
    retry_at_ns = now + wait_ns;
    ++faults.losses;
    faults.lost = fmt::format("{} (the last: {}); every slot is out of service for {:.0f} ms, then serves on probation",
                              again ? std::string("a launch on probation failed")
                                    : fmt::format("{} launches in a row failed", failures_in_a_row),
                              why, static_cast<double>(wait_ns) / 1e6);
  }
  // Ends the wait once it is over: every slot serves again, on probation (judged by launches from now).
  void poll(int64_t now, DeviceFaults& faults) {
    if (faults.lost.empty() || now < retry_at_ns) return;
    faults.last_loss = std::move(faults.lost);
    faults.lost.clear();
    probation = true;
    retry_at_ns = INT64_MAX;
    counted_after = launches;
  }
};

// Rebuilds a slot after a fault, counted in `faults`: `make` makes its new queue or stream (throws
// tandem::Error). On success the slot serves again ("<why>; <what>"); on failure it stays out of service
// and is tried again later (SlotJob::rebuild_due).
template <typename Make>
void rebuild_slot(SlotJob& job, DeviceFaults& faults, const std::string& why, int64_t now, const char* what, Make&& make) {
  try {
    make();
    job.rebuilt(why, what);
    ++faults.rebuilds;
  } catch (const Error& e) {
    ++faults.failed_rebuilds;
    job.rebuild_failed(now, why, e.what());
  }
}

}  // namespace tandem::devices
