// The embedded runtime: the engine, the devices and the dispatcher thread live inside the
// application's process. The default when no daemon is configured.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_set>

#include "rt/dispatcher.hpp"
#include "client/runtime.hpp"

namespace tandem::client {

class EmbeddedRuntime final : public Runtime {
 public:
  static Result<std::unique_ptr<Runtime>> create(const RuntimeOptions& options);
  ~EmbeddedRuntime() override;

  std::string_view kind() const override { return "embedded"; }
  Result<std::unique_ptr<Queue>> create_queue(uint32_t capacity) override;
  Result<void*> allocate(size_t bytes) override;
  void free(void* memory) override;
  Result<uint64_t> alloc_local(size_t bytes) override { return dispatcher_->alloc_local(session_, bytes); }
  Status free_local(uint64_t device_address) override { return dispatcher_->free_local(session_, device_address); }
  Status set_address_mode(uint8_t mode) override { return dispatcher_->set_address_mode(session_, mode); }
  rt::Dispatcher& dispatcher() { return *dispatcher_; }
  const tandem_metrics_page_t& metrics_page() const override { return dispatcher_->metrics_page(); }

 private:
  explicit EmbeddedRuntime(const RuntimeOptions& options) : Runtime(options) {}
  void release_ring(uint32_t ring_id) override;
  Status attach_service_ring(uint32_t slots, std::shared_ptr<void>& memory, void*& base) override;

  std::unique_ptr<rt::Dispatcher> dispatcher_;
  engine::SessionId session_ = engine::kNone;
  // What allocate() handed out and free() has not taken back: free() ignores any other pointer, and
  // what is left is released with the runtime (docs/api.md, tandem_alloc and tandem_free).
  std::mutex allocations_mutex_;
  std::unordered_set<void*> allocations_;
};

}  // namespace tandem::client
