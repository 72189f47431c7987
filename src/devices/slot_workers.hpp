// Threads that run a device's slots off the dispatcher: one per slot, started when the slot is first
// used, each running its slot's tasks in the order they were posted (load an accelerator, run a job,
// move data). A slow slot then delays only itself. The threads may run below the dispatcher's
// priority (`nice`), so that on a small machine the device's work uses the CPU the rest leaves.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tandem::devices {

class SlotWorkers {
 public:
  // Threads are named "<name>-<slot>".
  SlotWorkers(uint32_t slots, std::string name, int nice);
  ~SlotWorkers();  // stops every thread; tasks not yet started are dropped
  SlotWorkers(const SlotWorkers&) = delete;
  SlotWorkers& operator=(const SlotWorkers&) = delete;

  uint32_t slots() const { return static_cast<uint32_t>(workers_.size()); }
  // Runs `task` on `slot`'s thread after the tasks posted to it before. slot < slots().
  void post(uint32_t slot, std::function<void()> task);

 private:
  struct Worker {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::function<void()>> tasks;
    bool stop = false;
    std::thread thread;
  };
  void run(uint32_t slot, Worker& w);

  std::string name_;
  int nice_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace tandem::devices
