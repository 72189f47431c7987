// How the driver reaches the memory a packet names. Packets carry the client's own virtual
// addresses; an AddressSpace turns (address, length) into a pointer of the dispatcher's process, or
// refuses (TRANSLATION_FAULT) without touching anything.
#pragma once

#include <cstdint>
#include <unistd.h>

#include <memory>

#include "rt/paged_port.hpp"
#include "rt/process_memory.hpp"
#include "tandem/tandem_abi.h"

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
  // How a job that follows pointers reaches the session's memory under `mode` (TANDEM_ADDRESS_*):
  // through the windows this space translates, and under PHASE/V any other page of the client's own
  // process, faulted in on demand.
  virtual std::unique_ptr<PagedPort> open_port(uint8_t mode) {
    return std::make_unique<PagedPort>(this, mode == TANDEM_ADDRESS_PHASEV ? remote() : nullptr, true);
  }
};

// Embedded mode: the engine lives in the client's own process, so addresses are already ours.
class IdentityAddressSpace final : public AddressSpace {
 public:
  void* translate(uint64_t address, uint64_t bytes, bool write) override {
    (void)write;
    if (address == 0 || address + bytes < address) return nullptr;  // null or wrapping range
    return reinterpret_cast<void*>(static_cast<uintptr_t>(address));
  }
  // The whole process is the window, but a pointer a job follows is read through the kernel
  // (process_vm_readv of our own pid), so a bad one ends the job instead of the process; only PHASE/V
  // counts those reads as faults.
  std::unique_ptr<PagedPort> open_port(uint8_t mode) override {
    if (!self_) self_ = std::make_shared<ProcessMemory>(getpid());
    return std::make_unique<PagedPort>(nullptr, self_, mode == TANDEM_ADDRESS_PHASEV);
  }

 private:
  std::shared_ptr<const ProcessMemory> self_;
};

}  // namespace tandem::rt
