// A runtime that is a tandemd session: the same API as the embedded runtime, over the daemon's
// rings and the session memory both processes map.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rt/control_channel.hpp"
#include "rt/shm.hpp"
#include "client/runtime.hpp"

namespace tandem::client {

class DaemonRuntime final : public Runtime, public rt::Liveness {
 public:
  // Connects to the daemon at `socket_path` and opens a session.
  static Result<std::unique_ptr<Runtime>> connect(const RuntimeOptions& options, const std::string& socket_path);
  ~DaemonRuntime() override;

  std::string_view kind() const override { return "daemon"; }
  Result<std::unique_ptr<Queue>> create_queue(uint32_t capacity) override;
  // Session memory: carved from memfd chunks registered with the daemon (zero-copy for both sides).
  Result<void*> allocate(size_t bytes) override;
  void free(void* memory) override;
  Status unregister_memory(void* address) override;
  bool in_session_memory(const void* memory, size_t bytes) const override;
  bool engine_is_remote() const override { return true; }
  Result<uint64_t> alloc_local(size_t bytes) override;
  Status free_local(uint64_t device_address) override;
  Status set_address_mode(uint8_t mode) override;
  rt::Liveness* liveness() override { return this; }
  const tandem_metrics_page_t& metrics_page() const override {
    return *static_cast<const tandem_metrics_page_t*>(metrics_->address);
  }
  // DISCONNECTED once the daemon is gone (checked without blocking).
  Status check() override;
  bool known_lost() const override { return disconnected_.load(std::memory_order_relaxed); }

  uint32_t asid() const { return asid_; }
  // Sends a request and waits for its reply (any thread; requests are serialised).
  Result<rt::Frame> request(abi::control::MessageType type, const void* payload, size_t bytes, int fd = -1);
  int socket_fd() const { return sock_.get(); }

 private:
  explicit DaemonRuntime(const RuntimeOptions& options) : Runtime(options) {}
  void release_ring(uint32_t ring_id) override;
  Status attach_service_ring(uint32_t slots, std::shared_ptr<void>& memory, void*& base) override;
  Status attach_memory(void* address, size_t bytes, int memfd, uint64_t offset, std::string& why) override;

  struct Chunk {
    std::shared_ptr<rt::Mapping> mapping;
    uint32_t region = 0;
    std::map<size_t, size_t> free_blocks;  // offset -> bytes, coalesced
    size_t used = 0;
  };
  struct Registered {  // a user region from register_memory
    std::shared_ptr<rt::Mapping> keep;  // null: the user owns the mapping
    uint32_t region = 0;
    size_t bytes = 0;
  };

  Result<uint32_t> register_region(uint64_t base, uint64_t bytes, int fd, uint64_t offset);
  void attach_trace_area();
  void* carve(Chunk& c, size_t bytes);

  rt::UniqueFd sock_;
  std::mutex control_mutex_;
  uint32_t next_request_ = 1;
  std::atomic<bool> disconnected_{false};
  uint32_t asid_ = 0;
  uint64_t max_registered_bytes_ = 0;  // the session's limit, from hello_ok
  std::shared_ptr<rt::Mapping> metrics_;
  std::shared_ptr<rt::Mapping> trace_mapping_;  // the session's trace area (null: none)

  mutable std::mutex memory_mutex_;
  // PHASE/V (set_address_mode): every page of this process is reachable in place, faulted in by tandemd.
  std::atomic<uint8_t> address_mode_{TANDEM_ADDRESS_AISLE};
  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::map<uintptr_t, std::pair<Chunk*, size_t>> allocations_;  // address -> (chunk, bytes)
  std::map<uintptr_t, Registered> registered_;                  // by client address

};

}  // namespace tandem::client
