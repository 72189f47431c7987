// One interface for every accelerator backend: the emulated fabric, Verilator RTL models, OpenCL and
// CUDA devices. The driver calls execute() when the engine starts a job; the device computes the real
// result and says how long the job takes in the device's time (modelled, cycle-counted or measured).
#pragma once

#include <cstdint>
#include <string_view>

#include "funcs/function.hpp"
#include "model/accel_model.hpp"
#include "abi/status.hpp"

namespace tandem::devices {

struct ExecResult {
  Status status = Status::ok;
  int64_t value = 0;
  int64_t device_ns = 0;  // the job's duration on the device; the driver completes it no earlier
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string_view kind() const = 0;  // "emu", "rtl", ...
  virtual uint32_t slot_count() const = 0;
  virtual bool supports(uint16_t function) const = 0;
  // The timing model the engine and the monitor use for `function` on this device.
  virtual const model::AccelModel& model(uint16_t function) const = 0;
  // The slot begins loading `function` (the engine decided; the delay is the model's).
  virtual void configure(uint32_t slot, uint16_t function) = 0;
  // Runs `call` on `slot`: real results, and the device time it takes.
  virtual ExecResult execute(uint32_t slot, const funcs::Call& call) = 0;
};

}  // namespace tandem::devices
