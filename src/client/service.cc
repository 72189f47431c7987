#include "client/service.hpp"

#include <pthread.h>

namespace tandem::client {

Status ServiceClient::register_callback(uint32_t id, ServiceFn fn, void* user) {
  if (id >= TANDEM_SERVICE_IDS) return Status::invalid_argument;
  std::lock_guard lock(register_mutex_);
  Entry& e = callbacks_[id];
  const uint32_t v = e.version.load(std::memory_order_relaxed);
  e.version.store(v + 1, std::memory_order_relaxed);  // odd: a reader retries
  std::atomic_thread_fence(std::memory_order_release);
  e.fn.store(fn, std::memory_order_relaxed);
  e.user.store(fn != nullptr ? user : nullptr, std::memory_order_relaxed);
  e.version.store(v + 2, std::memory_order_release);
  return Status::ok;
}

bool ServiceClient::call(uint32_t id, const uint64_t* args, uint64_t& answer) const {
  if (id >= TANDEM_SERVICE_IDS) return false;
  const Entry& e = callbacks_[id];
  ServiceFn fn = nullptr;
  void* user = nullptr;
  for (;;) {
    const uint32_t before = e.version.load(std::memory_order_acquire);
    fn = e.fn.load(std::memory_order_relaxed);
    user = e.user.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((before & 1u) == 0 && e.version.load(std::memory_order_relaxed) == before) break;
  }
  if (fn == nullptr) return false;
  answer = fn(user, args);
  return true;
}

void ServiceClient::start(void* base, uint32_t slots, std::shared_ptr<void> memory, uint32_t flags,
                          rt::Liveness* liveness) {
  consumer_ = abi::ServiceConsumer(base, slots);
  memory_ = std::move(memory);
  ring_ = base;
  flags_ = flags;
  liveness_ = liveness;
  started_.store(true, std::memory_order_release);
  if (flags & kServiceSleep) thread_ = std::thread([this] { thread_main(); });
}

uint32_t ServiceClient::serve_locked() {
  return consumer_.serve([this](const abi::ServiceRequest& r, uint64_t& answer) {
    // An id nobody registered gets a failure back, never a guess: the job fails with SERVICE_FAILED.
    return call(r.service, r.args.data(), answer) ? Status::ok : Status::unknown_function;
  });
}

uint32_t ServiceClient::poll() {
  if (!started()) return 0;
  std::unique_lock lock(serve_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || !consumer_.has_news()) return 0;
  return serve_locked();
}

void ServiceClient::thread_main() {
  pthread_setname_np(pthread_self(), "tandem-service");
  // Sleeps on the ring's futex; a bounded sleep notices a lost engine and a stop without a wake-up.
  constexpr int64_t kNapNs = 100'000'000;
  while (!stopping_.load(std::memory_order_acquire)) {
    uint32_t seen = 0;
    {
      std::lock_guard lock(serve_mutex_);
      if (consumer_.has_news()) {
        serve_locked();
        continue;
      }
      seen = consumer_.seen();
    }
    if (liveness_ != nullptr && liveness_->known_lost()) break;
    consumer_.sleep(seen, kNapNs);
  }
}

void ServiceClient::stop() {
  stopping_.store(true, std::memory_order_release);
  if (thread_.joinable()) {
    consumer_.interrupt();
    thread_.join();
  }
}

}  // namespace tandem::client
