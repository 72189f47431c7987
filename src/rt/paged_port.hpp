// Demand paging for jobs that follow pointers (list_walk): a funcs::MemoryPort that reads client
// virtual addresses through the session's registered windows (AISLE's constant-offset translation) and,
// where allowed, faults in any other page of the client's own address space (PHASE/V): the page is read
// from the client's process with process_vm_readv (ProcessMemory: the pid the kernel named at connect
// time, so a session reaches only its own memory), kept as a frame for the rest of the job, and the job
// resumes. A page the client does not have mapped ends the job with TRANSLATION_FAULT and touches
// nothing else. Frames live only as long as the job: the next job sees the client's writes since.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "funcs/function.hpp"
#include "rt/process_memory.hpp"

namespace tandem::rt {

class AddressSpace;

class PagedPort final : public funcs::MemoryPort {
 public:
  // `windows`: translation of registered memory (null: none). `process`: where faults are served from
  // (null: no demand paging). `count_faults`: the faults are the job's (PHASE/V) rather than how an
  // in-process engine reads its own process safely (embedded AISLE, whose window is the whole process).
  PagedPort(AddressSpace* windows, std::shared_ptr<const ProcessMemory> process, bool count_faults);
  bool read(uint64_t address, void* dst, uint32_t bytes) override;
  size_t resident_pages() const { return frames_.size(); }

 private:
  const char* frame_of(uint64_t page_address);
  bool fail(Status s) {
    status_ = s;
    return false;
  }

  AddressSpace* windows_;
  std::shared_ptr<const ProcessMemory> process_;
  bool count_faults_;
  std::unordered_map<uint64_t, std::unique_ptr<char[]>> frames_;
};

}  // namespace tandem::rt
