#include "devices/emu/fabric.hpp"

namespace tandem::devices {

EmulatedFabric::EmulatedFabric(uint32_t slots, const std::array<model::AccelModel, TANDEM_FN_MAX>& models)
    : models_(models), loaded_(slots, UINT16_MAX) {}

bool EmulatedFabric::supports(uint16_t function) const { return funcs::find_function(function) != nullptr; }

void EmulatedFabric::configure(uint32_t slot, uint16_t function) {
  if (slot < loaded_.size()) loaded_[slot] = function;
}

ExecResult EmulatedFabric::execute(uint32_t slot, const funcs::Call& call) {
  const funcs::FunctionInfo* fn = funcs::find_function(call.function);
  if (fn == nullptr || slot >= loaded_.size() || loaded_[slot] != call.function) {
    return ExecResult{Status::device_error, 0, 0};  // the engine started a job on the wrong slot
  }
  ExecResult r;
  r.value = fn->run_accel(call, 0, call.workload);
  r.device_ns = models_[call.function].job_ns(call.workload);
  return r;
}

}  // namespace tandem::devices
