#include "funcs/ref/pq_ref.hpp"

namespace tandem::funcs::ref {

PqCommand decode_pq_command(uint64_t word) {
  constexpr uint64_t kReserved = ((uint64_t{1} << 14) - 1) << 42;  // bits [55:42]
  PqCommand c;
  c.opcode = (word & kReserved) != 0 ? 0 : static_cast<uint8_t>(word >> 56);  // 0: no such opcode
  c.handle = static_cast<uint32_t>(word);
  c.priority = static_cast<uint8_t>(word >> 32);
  c.at_head = ((word >> 40) & 1) != 0;
  c.highest = ((word >> 41) & 1) != 0;
  return c;
}

uint64_t encode_pq_command(const PqCommand& c) {
  return uint64_t{c.handle} | (uint64_t{c.priority} << 32) | (uint64_t{c.at_head} << 40) |
         (uint64_t{c.highest} << 41) | (uint64_t{c.opcode} << 56);
}

uint64_t encode_pq_response(const PqResponse& r) {
  return uint64_t{r.handle} | (uint64_t{r.priority} << 32) | (uint64_t{r.ok} << 40) |
         (uint64_t{r.occupancy & 0xffffu} << 48);
}

PqResponse decode_pq_response(uint64_t word) {
  return PqResponse{static_cast<uint32_t>(word), static_cast<uint8_t>(word >> 32),
                    ((word >> 40) & 1) != 0, static_cast<uint32_t>(word >> 48)};
}

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
