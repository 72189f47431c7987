#include "rt/mover.hpp"

namespace tandem::rt {

void Mover::post(const MoveTask& task) {
  ++outstanding_;
  workers_.post(0, [this, task] {
    Status s = Status::ok;
    for (uint32_t i = 0; i < task.count && s == Status::ok; ++i) {
      const RemoteBuffer& b = task.buffers[i];
      if (task.gather && !b.write) s = task.process->read(b.address, task.staging[i], b.bytes);
      if (!task.gather && b.write) s = task.process->write(b.address, task.staging[i], b.bytes);
    }
    devices::DeviceCompletion c;
    c.token = task.job;
    c.slot = task.gather ? 1 : 0;
    c.status = s;
    inbox_.push(c);
  });
}

void Mover::take(std::vector<MoveResult>& out) {
  inbox_.take(arrived_);
  for (const devices::DeviceCompletion& c : arrived_) {
    out.push_back(MoveResult{static_cast<uint32_t>(c.token), c.slot == 1, c.status});
  }
  outstanding_ -= static_cast<uint32_t>(std::min<size_t>(arrived_.size(), outstanding_));
  arrived_.clear();
}

}  // namespace tandem::rt
