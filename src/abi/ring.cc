#include "abi/ring.hpp"

namespace tandem::abi {

Status format_ring(void* base, size_t bytes, uint32_t capacity, uint64_t ring_id) {
  if (base == nullptr || !is_power_of_two(capacity) || capacity < TANDEM_RING_MIN_CAPACITY ||
      capacity > TANDEM_RING_MAX_CAPACITY || bytes < TANDEM_RING_BYTES(capacity)) {
    return Status::invalid_argument;
  }
  std::memset(base, 0, TANDEM_RING_BYTES(capacity));  // every header INVALID, indices zero
  auto* h = static_cast<tandem_ring_header_t*>(base);
  h->k_magic = TANDEM_RING_MAGIC;
  h->k_version = TANDEM_ABI_VERSION;
  h->k_capacity = capacity;
  h->k_packets_offset = TANDEM_RING_HEADER_BYTES;
  h->k_ring_id = ring_id;
  return Status::ok;
}

Status validate_ring(const void* base, size_t bytes) {
  if (base == nullptr || bytes < TANDEM_RING_HEADER_BYTES) return Status::invalid_argument;
  const auto* h = static_cast<const tandem_ring_header_t*>(base);
  if (h->k_magic != TANDEM_RING_MAGIC) return Status::protocol_error;
  if (h->k_version != TANDEM_ABI_VERSION) return Status::protocol_error;
  if (!is_power_of_two(h->k_capacity) || h->k_capacity < TANDEM_RING_MIN_CAPACITY ||
      h->k_capacity > TANDEM_RING_MAX_CAPACITY) {
    return Status::protocol_error;
  }
  if (h->k_packets_offset != TANDEM_RING_HEADER_BYTES || bytes < TANDEM_RING_BYTES(h->k_capacity)) {
    return Status::protocol_error;
  }
  return Status::ok;
}

}  // namespace tandem::abi
