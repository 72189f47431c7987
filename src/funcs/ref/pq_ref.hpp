// Software reference of the priority-queue accelerator (rtl/priority_queue): the thesis's Ch3
// scheduler queue with the same tie rules. 256 priorities (255 highest), FIFO within a priority,
// push at the tail (thread became runnable) or at the head (thread was preempted), pop or peek at a
// given priority or at the highest non-empty one, a fixed capacity shared by all priorities.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>

namespace tandem::funcs::ref {

enum class PqOp : uint8_t { push = 1, pop = 2, peek = 3 };

struct PqCommand {
  uint8_t opcode = 0;  // a PqOp; any other value fails
  uint32_t handle = 0;
  uint8_t priority = 0;
  bool at_head = false;  // push: insert at the head (preempted thread)
  bool highest = false;  // pop/peek: ignore priority, use the highest non-empty one
};

struct PqResponse {
  uint32_t handle = 0;     // popped/peeked handle, the pushed one, or 0 on a failed pop/peek
  uint8_t priority = 0;    // priority the command used (see PriorityQueueRef::execute)
  bool ok = false;         // push accepted / entry found
  uint32_t occupancy = 0;  // entries queued after the command

  bool operator==(const PqResponse&) const = default;
};

// The accelerator's 64-bit command and response words (docs/rtl.md):
//   command  [31:0] handle, [39:32] priority, [40] at head, [41] highest, [55:42] reserved (0),
//            [63:56] opcode; a command with a reserved bit set fails like an unknown opcode
//   response [31:0] handle, [39:32] priority used, [40] ok, [63:48] entries queued after it
PqCommand decode_pq_command(uint64_t word);
uint64_t encode_pq_command(const PqCommand& command);
uint64_t encode_pq_response(const PqResponse& response);
PqResponse decode_pq_response(uint64_t word);

// The accelerator's capacity (rtl/priority_queue, default build).
inline constexpr size_t kPqRefCapacity = 256;

class PriorityQueueRef {
 public:
  explicit PriorityQueueRef(size_t capacity) : capacity_(capacity) {}

  // The priority used is the given one, except for pop, peek and unknown opcodes with `highest`
  // set, which use the highest non-empty priority (0 when the queue is empty). A push into a full
  // queue and a pop or peek of an empty priority fail without changing anything.
  PqResponse execute(const PqCommand& command);

  void clear();
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }

 private:
  int highest_nonempty() const;  // -1 if empty

  size_t capacity_;
  size_t size_ = 0;
  std::array<std::deque<uint32_t>, 256> lists_{};
};

}  // namespace tandem::funcs::ref
