#include "devices/copy_engines.hpp"

#include <algorithm>
#include <memory>
#include <utility>

#include "base/stats.hpp"

#include "funcs/function.hpp"

namespace tandem::devices {

CopyEngines::CopyEngines(const std::string& owner, const DeviceMemoryInfo& memory, LocalTransfer transfer)
    : transfer_(std::move(transfer)),
      completions_(memory.copy_engines), workers_(memory.copy_engines, "tandem-copy", 0) {
  info_.kind = "copy";
  info_.name = owner + ".copy";
  info_.description = "copy engines of " + owner + "'s local memory";
  info_.slots = memory.copy_engines;
  info_.loadable.set(TANDEM_FN_COPY);
  info_.models[TANDEM_FN_COPY] = model::AccelModel{memory.copy_engine_bps, memory.copy_engine_setup_s, 0, 0};
  info_.memory.reaches_host_memory = true;
}

void CopyEngines::submit(uint32_t slot, const DeviceJob& job) {
  auto copy = std::make_shared<DeviceJob>();
  copy->token = job.token;
  copy->start_ns = job.start_ns;
  copy->access = job.access;
  copy->call.copy_from(job.call);
  const model::AccelModel model = info_.models[TANDEM_FN_COPY];
  if (slot >= workers_.slots() || job.call.function != TANDEM_FN_COPY) {
    DeviceCompletion c;
    c.token = job.token;
    c.slot = slot;
    c.status = Status::device_error;
    completions_.push(c);
    return;
  }
  workers_.post(slot, [this, slot, copy, model] {
    const funcs::Call& call = copy->call;
    const uint64_t bytes = call.workload;
    DeviceCompletion c;
    c.token = copy->token;
    c.slot = slot;
    if (transfer_) {
      const TransferDone done = bytes > 0 ? transfer_(slot, call.buffers[0], call.buffers[1], bytes) : TransferDone{};
      c.status = done.status;
      c.device_ns = done.device_ns;  // measured: the completion is not held back
    } else {
      if (bytes > 0) funcs::find_function(TANDEM_FN_COPY)->run_accel(call, 0, bytes);
      c.device_ns = model.job_ns(bytes);
      c.not_before = c.device_ns > INT64_MAX - copy->start_ns ? INT64_MAX : copy->start_ns + c.device_ns;
    }
    if (c.status == Status::ok) {
      const bool dst_local = (call.args[0] & TANDEM_DEVICE_ADDRESS_BIT) != 0;
      const bool src_local = (call.args[1] & TANDEM_DEVICE_ADDRESS_BIT) != 0;
      (dst_local && src_local ? on_device_ : dst_local ? to_device_ : from_device_).fetch_add(bytes);
      transfers_.fetch_add(1);
      c.value = static_cast<int64_t>(bytes);
    }
    completions_.push(c);
  });
}

CopyRates measure_copy_rates(uint64_t large, const std::function<double(uint64_t)>& timed_write) {
  constexpr uint64_t kSmall = 4096;
  large = std::max<uint64_t>(large, 2 * kSmall);
  std::vector<double> small;
  for (int i = 0; i < 9; ++i) small.push_back(timed_write(kSmall));
  double best = 1e300;
  for (int i = 0; i < 3; ++i) best = std::min(best, timed_write(large));
  CopyRates r;
  r.setup_s = median(small);
  r.bps = best > r.setup_s ? static_cast<double>(large - kSmall) / (best - r.setup_s) : 1e10;
  return r;
}

CopyStats CopyEngines::stats() const {
  return CopyStats{transfers_.load(), to_device_.load(), from_device_.load(), on_device_.load()};
}

}  // namespace tandem::devices
