#include "client/service.hpp"

#include <pthread.h>

namespace tandem::client {

Status ServiceClient::register_callback(uint32_t id, ServiceFn fn, void* user) {
  if (id >= TANDEM_SERVICE_IDS) return Status::invalid_argument;
  std::lock_guard lock(callbacks_mutex_);
  callbacks_[id] = Entry{fn, fn != nullptr ? user : nullptr};
  return Status::ok;
}

bool ServiceClient::call(uint32_t id, const uint64_t* args, uint64_t& answer) const {
  if (id >= TANDEM_SERVICE_IDS) return false;
  Entry e;
  {
    std::lock_guard lock(callbacks_mutex_);
    e = callbacks_[id];
  }
  if (e.fn == nullptr) return false;
  answer = e.fn(e.user, args);
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
