#include "funcs/ref/pq_ref.hpp"

namespace tandem::funcs::ref {

int PriorityQueueRef::highest_nonempty() const {
  for (int p = 255; p >= 0; --p) {
    if (!lists_[p].empty()) return p;
  }
  return -1;
}

void PriorityQueueRef::clear() {
  for (auto& list : lists_) list.clear();
  size_ = 0;
}

PqResponse PriorityQueueRef::execute(const PqCommand& command) {
  const bool push = command.opcode == static_cast<uint8_t>(PqOp::push);
  const bool pop = command.opcode == static_cast<uint8_t>(PqOp::pop);
  const bool peek = command.opcode == static_cast<uint8_t>(PqOp::peek);

  PqResponse r;
  r.priority = command.priority;
  if (command.highest && !push) {
    const int top = highest_nonempty();
    r.priority = static_cast<uint8_t>(top < 0 ? 0 : top);
  }
  auto& list = lists_[r.priority];
  if (push) {
    r.handle = command.handle;
    if (size_ < capacity_) {
      if (command.at_head) {
        list.push_front(command.handle);
      } else {
        list.push_back(command.handle);
      }
      ++size_;
      r.ok = true;
    }
  } else if ((pop || peek) && !list.empty()) {
    r.handle = list.front();
    r.ok = true;
    if (pop) {
      list.pop_front();
      --size_;
    }
  }
  r.occupancy = static_cast<uint32_t>(size_);
  return r;
}

}  // namespace tandem::funcs::ref
