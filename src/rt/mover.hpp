// The dispatcher's data mover for scatter-gather jobs under tandemd: gathers a job's input pages from
// the client's process into a staging buffer before the device runs it, and scatters its output pages
// back afterwards, on a thread of its own, so the dispatcher never copies. Results come back through an
// inbox the dispatcher polls (with a wake word for its sleep), like a device's completions.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "abi/status.hpp"
#include "devices/completion_inbox.hpp"
#include "devices/slot_workers.hpp"
#include "funcs/function.hpp"
#include "rt/process_memory.hpp"

namespace tandem::rt {

struct MoveTask {
  uint32_t job = 0;
  bool gather = true;  // false: scatter
  std::shared_ptr<const ProcessMemory> process;
  std::array<RemoteBuffer, funcs::kMaxBuffers> buffers{};
  uint32_t count = 0;
  std::array<char*, funcs::kMaxBuffers> staging{};  // by position in `buffers`
};

// Where a job's gathered buffers lie in its one staging block: offsets[i] from a kStagingLine-aligned
// base; returns the block's size. Each buffer keeps its client address's offset within a line, so the
// device sees the alignment the caller gave it, as it would in place. (Packed end to end, an int32
// output after an odd count of int16 inputs lay 2 bytes off its alignment: issue 12's ASan failure.)
inline constexpr uint64_t kStagingLine = 64;
uint64_t staging_layout(std::span<const RemoteBuffer> buffers, std::span<uint64_t> offsets);

struct MoveResult {
  uint32_t job = 0;
  bool gather = true;
  Status status = Status::ok;
};

class Mover {
 public:
  Mover() : workers_(1, "tandem-mover", 0) {}
  // Any thread (the dispatcher).
  void post(const MoveTask& task);
  // Dispatcher: the finished moves, appended.
  void take(std::vector<MoveResult>& out);
  const uint32_t* wake_word() const { return inbox_.wake_word(); }
  bool busy() const { return outstanding_ > 0; }  // dispatcher thread

 private:
  devices::CompletionInbox inbox_;  // a MoveResult travels as (token = job, slot = gather, status)
  std::vector<devices::DeviceCompletion> arrived_;
  uint32_t outstanding_ = 0;
  devices::SlotWorkers workers_;  // last: its thread stops first
};

}  // namespace tandem::rt
