// The client's side of service requests (FastPath, docs/api.md): the callbacks the application
// registered, the session's service ring (abi/service.hpp) and who serves it: the application's own
// polling calls, a library thread sleeping on the ring's futex, or both.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "abi/service.hpp"
#include "abi/status.hpp"
#include "rt/completion.hpp"

namespace tandem::client {

using ServiceFn = uint64_t (*)(void* user, const uint64_t args[TANDEM_SERVICE_ARGS]);

inline constexpr uint32_t kServicePoll = 1u;   // TANDEM_SERVICE_POLL
inline constexpr uint32_t kServiceSleep = 2u;  // TANDEM_SERVICE_SLEEP
inline constexpr uint32_t kServiceSlots = 64;  // requests out at once per session

class ServiceClient {
 public:
  ServiceClient() = default;
  ~ServiceClient() { stop(); }
  ServiceClient(const ServiceClient&) = delete;
  ServiceClient& operator=(const ServiceClient&) = delete;

  // fn null: removes the callback. INVALID_ARGUMENT for an id >= TANDEM_SERVICE_IDS.
  Status register_callback(uint32_t id, ServiceFn fn, void* user);
  // Runs callback `id` here; false when none is registered.
  bool call(uint32_t id, const uint64_t* args, uint64_t& answer) const;

  // Starts serving the ring at `base` (`memory` keeps it mapped) as `flags` says (kServicePoll,
  // kServiceSleep or both). `liveness` (may be null) tells a sleeping thread the engine went away.
  void start(void* base, uint32_t slots, std::shared_ptr<void> memory, uint32_t flags, rt::Liveness* liveness);
  bool started() const { return started_.load(std::memory_order_acquire); }
  uint32_t flags() const { return flags_; }
  // Serves what is posted now; how many. 0 as well while another thread is serving.
  uint32_t poll();
  // Stops the library thread (if any) and returns once it has left. Idempotent.
  void stop();
  // The shared ring (null before start): tests scribble on it as a misbehaving client would.
  void* ring() const { return memory_.get() != nullptr ? ring_ : nullptr; }

 private:
  // A callback and its argument, read without a lock on every request (a seqlock: the registering
  // thread makes `version` odd while it rewrites the pair).
  struct Entry {
    std::atomic<uint32_t> version{0};
    std::atomic<ServiceFn> fn{nullptr};
    std::atomic<void*> user{nullptr};
  };
  uint32_t serve_locked();
  void thread_main();

  std::mutex register_mutex_;  // one registration at a time
  std::array<Entry, TANDEM_SERVICE_IDS> callbacks_{};
  std::mutex serve_mutex_;  // one consumer at a time
  abi::ServiceConsumer consumer_;
  std::shared_ptr<void> memory_;
  void* ring_ = nullptr;
  std::atomic<bool> started_{false};
  uint32_t flags_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  rt::Liveness* liveness_ = nullptr;
};

}  // namespace tandem::client
