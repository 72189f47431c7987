// The list_walk slot: drives rtl/list_walk's Verilated model and plays the host side of its two
// memory interfaces, cycle by cycle.
//
// - Page walks (a TLB miss): the walker checks the missing access against the session's rights by
//   reading it through the job's funcs::MemoryPort (windows under AISLE; the client's own pages,
//   faulted in on demand, under PHASE/V). Refused: the fill carries a fault (the TLB does not cache it)
//   and the accelerator ends the job with STATUS.fault. Allowed: the page gets a physical frame number
//   of this slot's frame table and the fill carries it. The fill comes back walk_cycles later:
//   walk_reads memory reads under PHASE/V, the window-table lookup (aisle_walk_cycles) under AISLE.
// - Reads: a physical address is mapped back through the frame table to the client virtual address
//   it stands for and read through the same port (so the rights are checked on every read, not only at
//   walk time); the word comes back mem_read_cycles later, or an error response.
//
// The TLB's entries are only valid for the address space that filled them: the slot flushes the TLB
// (and forgets its frames) when a job of another address space comes, when asked (unmapped memory),
// and after a timeout (the model is reset).
#include <cmath>
#include <unordered_map>
#include <vector>

#include "Vtandem_list_walk.h"
#include "devices/rtl/slots.hpp"
#include "devices/rtl/verilated_slot.hpp"
#include "funcs/function.hpp"

namespace tandem::devices::rtl::detail {

namespace {

constexpr uint32_t kStatus = 0x40;
constexpr uint32_t kTlbHits = 0x44;
constexpr uint32_t kTlbMisses = 0x48;
constexpr uint32_t kNodes = 0x4c;
constexpr uint32_t kStatusFault = 1u << 0;
constexpr uint32_t kStatusMisaligned = 1u << 1;
constexpr uint32_t kPageShift = 12;
// Frames are handed out per walk and never reused while the TLB may hold them; past this many the
// slot flushes the TLB before the next job and starts over (PpnW is 32 bits).
constexpr size_t kMaxFrames = size_t{1} << 20;

class ListWalkSlot final : public RtlAccelerator {
 public:
  explicit ListWalkSlot(const RtlOptions& options)
      : RtlAccelerator(RtlFunction::list_walk, options, RtlPortInfo{.num_args = 4, .in_beat_bytes = 0, .out_beat_bytes = 0}),
        model_(/*scoped=*/true) {  // its assertions are scopes
    reset();
  }

  void reset() override {
    idle_inputs();
    model_.reset_and_enable();
    forget_frames();  // reset emptied the TLB
  }

  RtlResult run(const RtlJob& job) override;

 private:
  // The memory and walk interfaces' inputs (reset_and_enable idles the clock and the CSR bus).
  void idle_inputs() {
    model_->tlb_flush_i = 0;
    model_->mem_req_ready_i = 0;
    model_->mem_resp_valid_i = 0;
    model_->mem_resp_data_i = 0;
    model_->mem_resp_err_i = 0;
    model_->walk_ready_i = 0;
    model_->fill_valid_i = 0;
    model_->fill_ppn_i = 0;
    model_->fill_fault_i = 0;
  }
  void flush_tlb() {
    model_->tlb_flush_i = 1;
    model_.settle();
    model_.clock_edge();
    model_->tlb_flush_i = 0;
    model_.settle();
    forget_frames();
  }
  void forget_frames() {
    frame_of_page_.clear();
    page_of_frame_.clear();
  }
  uint32_t frame_for(uint64_t page) {
    auto [it, added] = frame_of_page_.try_emplace(page, static_cast<uint32_t>(page_of_frame_.size()));
    if (added) page_of_frame_.push_back(page);
    return it->second;
  }

  VerilatedModel<Vtandem_list_walk> model_;
  std::unordered_map<uint64_t, uint32_t> frame_of_page_;  // virtual page -> frame, for the TLB's address space
  std::vector<uint64_t> page_of_frame_;
  uint32_t asid_ = 0;
  bool asid_known_ = false;
};

RtlResult ListWalkSlot::run(const RtlJob& job) {
  RtlResult result;
  if (job.memory == nullptr) {
    result.status = Status::device_error;
    result.message = "list_walk: the job has no memory port";
    return result;
  }
  if (job.args.size() != 4) {
    result.status = Status::invalid_argument;
    result.message = "list_walk takes 4 argument words (head lo/hi, max nodes lo/hi)";
    return result;
  }
  if (job.flush_tlb || !asid_known_ || job.asid != asid_ || page_of_frame_.size() >= kMaxFrames) {
    flush_tlb();
    result.bus_cycles += 1;
  }
  asid_ = job.asid;
  asid_known_ = true;
  funcs::MemoryPort& memory = *job.memory;
  const uint64_t read_cycles = options().mem_read_cycles;
  const uint64_t walk_cycles =
      job.page_walks ? std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(options().walk_reads * read_cycles)))
                     : std::max<uint32_t>(1, options().aisle_walk_cycles);

  const uint64_t hits_before = model_.csr_read(kTlbHits, result.bus_cycles);
  const uint64_t misses_before = model_.csr_read(kTlbMisses, result.bus_cycles);
  for (uint32_t n = 0; n < 4; ++n) model_.csr_write(csr::kArg0 + 4 * n, job.args[n], result.bus_cycles);
  model_.csr_write(csr::kCtrl, csr::kCtrlStart, result.bus_cycles);

  // The host side: at most one walk and one read outstanding (the core issues one access at a time).
  bool walking = false, reading = false;
  uint64_t walk_due = 0, read_due = 0;
  uint32_t fill_ppn = 0;
  bool fill_fault = false, read_error = false;
  uint64_t read_data = 0;
  Status port_status = Status::ok;
  bool finished = false;
  while (!finished) {
    if (result.cycles >= options().max_cycles) {
      result.status = Status::timeout;
      result.message = "no completion within " + std::to_string(options().max_cycles) + " cycles";
      reset();  // leave the slot usable
      return result;
    }
    const uint64_t now = result.cycles;
    model_->walk_ready_i = !walking;
    model_->fill_valid_i = walking && now >= walk_due;
    model_->fill_ppn_i = fill_ppn;
    model_->fill_fault_i = fill_fault;
    model_->mem_req_ready_i = !reading;
    model_->mem_resp_valid_i = reading && now >= read_due;
    model_->mem_resp_data_i = read_data;
    model_->mem_resp_err_i = read_error;
    model_.settle();
    const bool walk_fire = model_->walk_valid_o && !walking;
    const bool read_fire = model_->mem_req_valid_o && !reading;
    const bool fill_taken = model_->fill_valid_i;
    const bool resp_taken = model_->mem_resp_valid_i;
    const uint64_t walk_vaddr = model_->walk_vaddr_o;
    const uint64_t walk_vpn = model_->walk_vpn_o;
    const uint64_t read_addr = model_->mem_req_addr_o;
    finished = model_->irq_o;
    model_.clock_edge();
    if (!finished) ++result.cycles;
    if (fill_taken) walking = false;
    if (resp_taken) reading = false;
    if (walk_fire) {
      // The walker's rights check: the access that missed must be readable by the session.
      uint64_t probe = 0;
      fill_fault = !memory.read(walk_vaddr, &probe, sizeof probe);
      if (fill_fault) {
        port_status = memory.status();
        fill_ppn = 0;
      } else {
        fill_ppn = frame_for(walk_vpn);
      }
      walking = true;
      walk_due = result.cycles + walk_cycles - 1;
    }
    if (read_fire) {
      const uint64_t frame = read_addr >> kPageShift;
      read_error = frame >= page_of_frame_.size();
      if (!read_error) {
        const uint64_t vaddr = (page_of_frame_[frame] << kPageShift) | (read_addr & ((1u << kPageShift) - 1));
        read_error = !memory.read(vaddr, &read_data, sizeof read_data);
      }
      if (read_error) {
        read_data = 0;
        if (port_status == Status::ok) port_status = memory.status();
      }
      reading = true;
      read_due = result.cycles + read_cycles - 1;
    }
  }
  idle_inputs();
  model_.settle();

  const uint64_t lo = model_.csr_read(csr::kRetLo, result.bus_cycles);
  const uint64_t hi = model_.csr_read(csr::kRetHi, result.bus_cycles);
  result.value = lo | (hi << 32);
  const uint32_t status = model_.csr_read(kStatus, result.bus_cycles);
  result.nodes = model_.csr_read(kNodes, result.bus_cycles);
  // The counters wrap at 2^32: unsigned differences stay right across one wrap.
  result.tlb_hits = static_cast<uint32_t>(model_.csr_read(kTlbHits, result.bus_cycles) - hits_before);
  result.tlb_misses = static_cast<uint32_t>(model_.csr_read(kTlbMisses, result.bus_cycles) - misses_before);
  model_.csr_write(csr::kIsr, 1, result.bus_cycles);
  const uint32_t ctrl = model_.csr_read(csr::kCtrl, result.bus_cycles);
  result.total_cycles = result.cycles + result.bus_cycles;
  result.seconds = seconds(result.total_cycles);

  if ((ctrl & (csr::kCtrlDone | csr::kCtrlIdle)) != (csr::kCtrlDone | csr::kCtrlIdle)) {
    result.status = Status::device_error;
    result.message = "interrupt without CTRL.done and idle";
  } else if ((status & kStatusFault) != 0) {
    result.status = port_status == Status::ok ? Status::translation_fault : port_status;
    result.message = "list_walk: translation fault after " + std::to_string(result.nodes) + " nodes";
  } else if ((status & kStatusMisaligned) != 0) {
    result.status = Status::invalid_argument;
    result.message = "list_walk: a node address is not 8-byte aligned";
  }
  return result;
}

}  // namespace

std::unique_ptr<RtlAccelerator> make_list_walk_slot(const RtlOptions& options) {
  return std::make_unique<ListWalkSlot>(options);
}

}  // namespace tandem::devices::rtl::detail
