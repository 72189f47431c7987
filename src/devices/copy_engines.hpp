// The copy engines of a device with local memory (seed 001's shared CDMA): a small device of its own
// whose slots hold only the `copy` function, so that transfers queue in the engine like any job when
// every engine is busy, and are shared by all the accelerator slots. A transfer moves real bytes
// (on the engine's own thread) and takes set-up + bytes / bandwidth; on a device whose local memory is
// its own (OpenCL) the device's LocalTransfer moves them, and the transfer takes the time it measured.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.hpp"

#include "devices/completion_inbox.hpp"
#include "devices/device.hpp"
#include "devices/slot_workers.hpp"

namespace tandem::devices {

// The copy engines of a device that keeps its local memory itself: one queue per engine, each with
// `Status transfer(void* dst, const void* src, uint64_t bytes, int64_t timeout_ns)` run to completion
// (or TIMEOUT), timed here. An engine without a queue (no local memory attached) fails its transfers.
// `queues` must outlive the copy engines' jobs (the dispatcher destroys its devices last to first).
template <class Queue>
LocalTransfer timed_transfers(const std::vector<std::unique_ptr<Queue>>& queues, int64_t timeout_ns) {
  return [&queues, timeout_ns](uint32_t engine, void* dst, const void* src, uint64_t bytes) {
    TransferDone done;
    if (engine >= queues.size()) {
      done.status = Status::device_error;
      return done;
    }
    const int64_t t0 = now_ns();
    done.status = queues[engine]->transfer(dst, src, bytes, timeout_ns);
    done.device_ns = now_ns() - t0;
    return done;
  };
}

// An overlapping copy of `bytes` from offset `from` to offset `to` of one memory, through a bounce
// buffer of `piece` bytes: `in(offset, n)` copies memory to the bounce buffer, `out(offset, n)` back.
// The pieces go in the order that never overwrites a source byte before it is read (forward when the
// data moves down, backward when it moves up); the caller's queue keeps them in order.
template <class In, class Out>
Status overlapping_copy(uint64_t from, uint64_t to, uint64_t bytes, uint64_t piece, In&& in, Out&& out) {
  const uint64_t pieces = (bytes + piece - 1) / piece;
  for (uint64_t k = 0; k < pieces; ++k) {
    const uint64_t at = (to < from ? k : pieces - 1 - k) * piece;
    const uint64_t n = std::min(piece, bytes - at);
    if (Status s = in(from + at, n); s != Status::ok) return s;
    if (Status s = out(to + at, n); s != Status::ok) return s;
  }
  return Status::ok;
}

// A copy engine's set-up time and bandwidth from `timed_write(bytes)` (seconds for one host-to-device
// write): set-up from a 4 KiB write's median, bandwidth from a larger write's extra time over it (the
// best of three; `large` bytes, at least 8 KiB).
struct CopyRates {
  double setup_s = 0;
  double bps = 0;
};
CopyRates measure_copy_rates(uint64_t large, const std::function<double(uint64_t)>& timed_write);

struct CopyStats {
  uint64_t transfers = 0;
  uint64_t bytes_to_device = 0;    // host -> local memory
  uint64_t bytes_from_device = 0;  // local memory -> host
  uint64_t bytes_on_device = 0;    // local -> local
};

class CopyEngines final : public Device {
 public:
  // `owner`: the device whose local memory these engines fill; `memory`: its figures; `transfer`: how
  // that device moves the bytes (empty: a copy on the host mapping, timed by the figures).
  CopyEngines(const std::string& owner, const DeviceMemoryInfo& memory, LocalTransfer transfer = {});

  const DeviceInfo& info() const override { return info_; }
  void configure(uint32_t, uint16_t) override {}
  void submit(uint32_t slot, const DeviceJob& job) override;
  void poll(int64_t now, std::vector<DeviceCompletion>& out) override { completions_.poll(now, out); }
  int64_t next_deadline() const override { return completions_.next_deadline(); }
  const uint32_t* wake_word() const override { return completions_.wake_word(); }

  CopyStats stats() const;  // any thread

 private:
  DeviceInfo info_;
  LocalTransfer transfer_;
  ThreadedCompletions completions_;
  std::atomic<uint64_t> transfers_{0}, to_device_{0}, from_device_{0}, on_device_{0};
  SlotWorkers workers_;  // last: its threads stop first
};

}  // namespace tandem::devices
