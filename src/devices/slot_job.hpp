// The job a real device's slot runs (OpenCL, CUDA) and its time limit. Neither API can cancel a running
// kernel, so a job past its limit is completed with TIMEOUT at once and its slot leaves service until
// the device has finished it ("abandoned"); then the slot serves again. Dispatcher thread only.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <vector>

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
    health.in_service = true;
    health.last_error += fmt::format("; it ended {:.1f} ms after it started and the slot is back in service",
                                     static_cast<double>(now - start_ns) / 1e6);
    return true;
  }
  // When expire() next has something to do.
  int64_t deadline(int64_t limit_ns) const { return busy && !abandoned ? start_ns + limit_ns : INT64_MAX; }
};

}  // namespace tandem::devices
