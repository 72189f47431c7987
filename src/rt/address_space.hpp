// How the driver reaches the memory a packet names. Packets carry the client's own virtual
// addresses; an AddressSpace turns (address, length) into a pointer of the dispatcher's process, or
// refuses (TRANSLATION_FAULT) without touching anything.
#pragma once

#include <cstdint>
#include <memory>

#include "rt/process_memory.hpp"

namespace tandem::rt {

class AddressSpace {
 public:
  virtual ~AddressSpace() = default;
  // Pointer for [address, address + bytes) in this process, or nullptr if any byte lies outside the
  // session's memory (or is not writable when `write`).
  virtual void* translate(uint64_t address, uint64_t bytes, bool write) = 0;
  // Called on the dispatcher thread, about once per monitoring period, while the session has no job
  // in flight: memory retired since may be released now.
  virtual void quiescent() {}
  // The client process whose own pages scatter-gather jobs name, when the engine lives in another
  // process (tandemd); null in the embedded runtime, where such buffers are reached in place.
  virtual std::shared_ptr<const ProcessMemory> remote() const { return nullptr; }
};

// Embedded mode: the engine lives in the client's own process, so addresses are already ours.
class IdentityAddressSpace final : public AddressSpace {
 public:
  void* translate(uint64_t address, uint64_t bytes, bool write) override {
    (void)write;
    if (address == 0 || address + bytes < address) return nullptr;  // null or wrapping range
    return reinterpret_cast<void*>(static_cast<uintptr_t>(address));
  }
};

}  // namespace tandem::rt
