// A session's service-request ring on the engine's side (FastPath): the device posts its jobs'
// requests through it and reads the answers back (abi/service.hpp). Dispatcher thread only. Once the
// session closes, every request outstanding or to come fails with CANCELLED at the device's next poll.
#pragma once

#include <memory>

#include "abi/service.hpp"
#include "devices/device.hpp"

namespace tandem::rt {

class ServiceChannel final : public devices::ServicePort {
 public:
  // `base` holds a ring of `slots` slots that validate_service_ring accepted; `keep_alive` holds its
  // memory while the channel lives (jobs in flight keep the channel).
  ServiceChannel(void* base, uint32_t slots, std::shared_ptr<void> keep_alive)
      : producer_(base, slots), keep_alive_(std::move(keep_alive)) {}

  Status post(const abi::ServiceRequest& request, uint32_t& ticket) override {
    if (closed_) return Status::cancelled;
    return producer_.post(request, ticket) ? Status::ok : Status::queue_full;
  }
  Check check(uint32_t ticket, uint64_t& answer, Status& why) override {
    if (closed_) {
      producer_.cancel(ticket);
      why = Status::cancelled;
      return Check::failed;
    }
    return producer_.check(ticket, answer, why);
  }
  void cancel(uint32_t ticket) override { producer_.cancel(ticket); }

  void close() { closed_ = true; }
  bool closed() const { return closed_; }
  abi::ServiceProducer& producer() { return producer_; }

 private:
  abi::ServiceProducer producer_;
  std::shared_ptr<void> keep_alive_;
  bool closed_ = false;
};

}  // namespace tandem::rt
