#include "abi/service.hpp"

#include <cstring>

namespace tandem::abi {

Status format_service_ring(void* base, size_t bytes, uint32_t slots) {
  if (base == nullptr || slots == 0 || slots > TANDEM_SERVICE_MAX_SLOTS || bytes < TANDEM_SERVICE_BYTES(slots)) {
    return Status::invalid_argument;
  }
  std::memset(base, 0, TANDEM_SERVICE_BYTES(slots));  // every slot FREE with sequence 0
  auto* h = static_cast<tandem_service_header_t*>(base);
  h->k_magic = TANDEM_SERVICE_MAGIC;
  h->k_version = TANDEM_SERVICE_VERSION;
  h->k_slots = slots;
  return Status::ok;
}

Status validate_service_ring(const void* base, size_t bytes, uint32_t slots) {
  if (base == nullptr || slots == 0 || slots > TANDEM_SERVICE_MAX_SLOTS || bytes < TANDEM_SERVICE_BYTES(slots)) {
    return Status::invalid_argument;
  }
  const auto* h = static_cast<const tandem_service_header_t*>(base);
  if (load_acquire(h->k_magic) != TANDEM_SERVICE_MAGIC || load_relaxed(h->k_version) != TANDEM_SERVICE_VERSION ||
      load_relaxed(h->k_slots) != slots) {
    return Status::protocol_error;
  }
  return Status::ok;
}

ServiceProducer::ServiceProducer(void* base, uint32_t slots)
    : header_(static_cast<tandem_service_header_t*>(base)),
      slots_(reinterpret_cast<tandem_service_slot_t*>(static_cast<char*>(base) + TANDEM_SERVICE_HEADER_BYTES)),
      sequence_(slots, 0),
      busy_(slots, 0) {
  free_.reserve(slots);
  for (uint32_t i = slots; i-- > 0;) free_.push_back(i);
}

bool ServiceProducer::post(const ServiceRequest& request, uint32_t& ticket) {
  if (free_.empty()) return false;
  const uint32_t slot = free_.back();
  free_.pop_back();
  busy_[slot] = 1;
  ++outstanding_;
  sequence_[slot] = (sequence_[slot] + 1) & 0x3fffffffu;
  if (sequence_[slot] == 0) sequence_[slot] = 1;  // never sequence 0: a formatted slot's
  tandem_service_slot_t& s = slots_[slot];
  store_relaxed(s.service, request.service);
  store_relaxed(s.token, request.token);
  for (uint32_t a = 0; a < TANDEM_SERVICE_ARGS; ++a) store_relaxed(s.args[a], request.args[a]);
  store_relaxed(s.answer, uint64_t{0});
  store_relaxed(s.status, uint32_t{0});
  store_release(s.state, (sequence_[slot] << 2) | TANDEM_SERVICE_POSTED);  // pairs with the client's acquire
  // Dekker with the client's sleep(): a seq_cst bump then a seq_cst look at its flag (a locked
  // instruction on x86 is already the full barrier; no separate fence).
  fetch_add_seq_cst(header_->k_posted, 1u);
  if (load_seq_cst(header_->k_client_flags) & TANDEM_SERVICE_SLEEPING) futex_wake(&header_->k_posted);
  ticket = slot;
  return true;
}

ServiceProducer::Check ServiceProducer::check(uint32_t ticket, uint64_t& answer, Status& why) {
  if (ticket >= busy_.size() || !busy_[ticket]) {  // not a request of ours: a caller bug, never shared state
    why = Status::invalid_argument;
    return Check::failed;
  }
  answered_seen_ = load_acquire(header_->k_answered);
  tandem_service_slot_t& s = slots_[ticket];
  const uint32_t seq = sequence_[ticket];
  const uint32_t state = load_acquire(s.state);  // pairs with the client's release
  if (state == ((seq << 2) | TANDEM_SERVICE_POSTED)) return Check::pending;
  if (state != ((seq << 2) | TANDEM_SERVICE_ANSWERED)) {  // a word we never wrote nor accept
    why = Status::service_failed;
    release(ticket);
    return Check::failed;
  }
  // Copied once: the client may rewrite them after we looked.
  answer = load_relaxed(s.answer);
  const uint32_t status = load_relaxed(s.status);
  release(ticket);
  if (status != TANDEM_OK) {
    why = Status::service_failed;
    return Check::failed;
  }
  return Check::answered;
}

void ServiceProducer::cancel(uint32_t ticket) {
  if (ticket >= busy_.size() || !busy_[ticket]) return;
  release(ticket);
}

void ServiceProducer::release(uint32_t slot) {
  // FREE with the old sequence: a late answer's compare-exchange (POSTED -> ANSWERED) fails.
  store_release(slots_[slot].state, (sequence_[slot] << 2) | TANDEM_SERVICE_FREE);
  busy_[slot] = 0;
  free_.push_back(slot);
  --outstanding_;
}

uint32_t ServiceProducer::prepare_sleep() {
  const uint32_t bell = load_acquire(header_->k_answered);
  fetch_or_seq_cst(header_->k_device_flags, uint32_t{TANDEM_SERVICE_SLEEPING});
  fence_seq_cst();
  return bell;
}

void ServiceProducer::wake_up() { fetch_and_seq_cst(header_->k_device_flags, ~uint32_t{TANDEM_SERVICE_SLEEPING}); }

}  // namespace tandem::abi
