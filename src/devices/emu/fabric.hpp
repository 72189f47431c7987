// The emulated reconfigurable fabric: N slots whose accelerators compute real results with the
// function's reference implementation and take the time their model says (D_a + W / X_a).
#pragma once

#include <array>
#include <vector>

#include "devices/device.hpp"
#include "devices/emu/fabric_config.hpp"

namespace tandem::devices {

class EmulatedFabric final : public Device {
 public:
  EmulatedFabric(uint32_t slots, const std::array<model::AccelModel, TANDEM_FN_MAX>& models);

  std::string_view kind() const override { return "emu"; }
  uint32_t slot_count() const override { return static_cast<uint32_t>(loaded_.size()); }
  bool supports(uint16_t function) const override;
  const model::AccelModel& model(uint16_t function) const override { return models_[function]; }
  void configure(uint32_t slot, uint16_t function) override;
  ExecResult execute(uint32_t slot, const funcs::Call& call) override;

 private:
  std::array<model::AccelModel, TANDEM_FN_MAX> models_;
  std::vector<uint16_t> loaded_;  // function each slot was last configured for
};

}  // namespace tandem::devices
