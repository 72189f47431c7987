#include "rt/mover.hpp"

namespace tandem::rt {

uint64_t staging_layout(std::span<const RemoteBuffer> buffers, std::span<uint64_t> offsets) {
  uint64_t end = 0;
  for (size_t i = 0; i < buffers.size() && i < offsets.size(); ++i) {
    // The first offset at or after `end` congruent to the client address modulo the line.
    offsets[i] = end + (buffers[i].address - end) % kStagingLine;
    end = offsets[i] + buffers[i].bytes;
  }
  return end;
}

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
