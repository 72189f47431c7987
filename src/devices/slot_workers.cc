#include "devices/slot_workers.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

namespace tandem::devices {

SlotWorkers::SlotWorkers(uint32_t slots, std::string name, int nice) : name_(std::move(name)), nice_(nice) {
  workers_.resize(slots);
}

SlotWorkers::~SlotWorkers() {
  for (auto& w : workers_) {
    if (!w) continue;
    {
      std::lock_guard lock(w->mutex);
      w->stop = true;
    }
    w->wake.notify_one();
    w->thread.join();
  }
}

void SlotWorkers::post(uint32_t slot, std::function<void()> task) {
  std::unique_ptr<Worker>& w = workers_[slot];
  if (!w) {
    w = std::make_unique<Worker>();
    Worker& ref = *w;
    w->thread = std::thread([this, slot, &ref] { run(slot, ref); });
  }
  {
    std::lock_guard lock(w->mutex);
    w->tasks.push_back(std::move(task));
  }
  w->wake.notify_one();
}

void SlotWorkers::run(uint32_t slot, Worker& w) {
  if (nice_ > 0) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice_);
  const std::string thread_name = (name_ + "-" + std::to_string(slot)).substr(0, 15);  // the kernel keeps 15
  pthread_setname_np(pthread_self(), thread_name.c_str());
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(w.mutex);
      w.wake.wait(lock, [&] { return w.stop || !w.tasks.empty(); });
      if (w.stop) return;
      task = std::move(w.tasks.front());
      w.tasks.pop_front();
    }
    task();
  }
}

}  // namespace tandem::devices
