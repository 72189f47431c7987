// Verilator-simulated accelerators: one RtlAccelerator per slot, each owning a Verilated model of
// one accelerator in rtl/.
//
// Every accelerator has the same control interface (the thesis's Table 5.2 on a register bus) and
// a valid/ready stream in and out. run() drives a job through it the way a CSR manager and a DMA
// engine would: write the arguments, set CTRL.start, stream the input beats in and the output
// beats out, wait for the completion interrupt, read the return value and clear the interrupt.
// It counts clock cycles and converts them to modelled time at the fabric clock. list_walk has the same
// registers but no streams: it reads client memory itself, through its TLB and the job's memory port
// (RtlJob::memory; slot_list_walk.cc plays the host's side: page walks and reads).
//
// Independent of the engine: phase 2 wraps an RtlAccelerator as a tandem device. Results are real
// (computed by the Verilog); simulation is slow compared with the modelled time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "abi/status.hpp"

namespace tandem::funcs {
class MemoryPort;
}

namespace tandem::devices::rtl {

enum class RtlFunction : uint8_t { accumulate, sobel, matmul, dct_quant, priority_queue, list_walk };

// The stream accelerators (what `tandem calibrate-rtl` fits). list_walk has no streams: it reads client
// memory through its TLB (RtlJob::memory), so its time depends on the memory latency modelled below.
inline constexpr RtlFunction kAllRtlFunctions[] = {RtlFunction::accumulate, RtlFunction::sobel,
                                                   RtlFunction::matmul, RtlFunction::dct_quant,
                                                   RtlFunction::priority_queue};

std::string_view to_string(RtlFunction f);

// CSR offsets (thesis Table 5.2).
namespace csr {
inline constexpr uint32_t kCtrl = 0x00;  // bit0 start/busy, bit1 done (clear on read), bit2 idle
inline constexpr uint32_t kGie = 0x04;
inline constexpr uint32_t kIer = 0x08;
inline constexpr uint32_t kIsr = 0x0c;  // bit0 done; write 1 to clear
inline constexpr uint32_t kRetLo = 0x10;
inline constexpr uint32_t kRetHi = 0x14;
inline constexpr uint32_t kArg0 = 0x18;  // argument N at kArg0 + 4N
inline constexpr uint32_t kCtrlStart = 1u << 0;
inline constexpr uint32_t kCtrlDone = 1u << 1;
inline constexpr uint32_t kCtrlIdle = 1u << 2;
}  // namespace csr

struct RtlOptions {
  double clock_hz = 200e6;            // fabric clock for modelled time
  uint64_t max_cycles = 100'000'000;  // a job that runs longer fails with Status::timeout
  // Back-pressure for testing the handshakes: the fraction (per mille) of cycles in which the
  // source holds back the next input beat or the sink is not ready for output. Deterministic:
  // the pattern restarts from stall_seed at every job, so equal jobs take equal cycles.
  uint32_t input_stall_per_mille = 0;
  uint32_t output_stall_per_mille = 0;
  uint64_t stall_seed = 1;
  // Build variant for tests: Sobel with 3 lanes and width limit 40 instead of 16 lanes, 1920.
  bool sobel_small_variant = false;
  // list_walk's memory: a read of host memory answers after mem_read_cycles (100 ns at 200 MHz, the
  // emulated device's tlb_read_s); a TLB miss under PHASE/V is a page walk of walk_reads such reads
  // (rounded to whole cycles; tlb_walk_reads); under AISLE the host translates by its window table in
  // aisle_walk_cycles.
  uint32_t mem_read_cycles = 20;
  double walk_reads = 1.5;
  uint32_t aisle_walk_cycles = 2;
};

// What the slot's hardware looks like from outside.
struct RtlPortInfo {
  uint32_t num_args = 0;        // argument registers
  uint32_t in_beat_bytes = 8;   // bytes per input beat
  uint32_t out_beat_bytes = 8;  // bytes per output beat
};

struct RtlJob {
  std::vector<uint32_t> args;  // written to kArg0 + 4N
  std::vector<uint8_t> input;  // streamed in, the last beat padded with zeros
  size_t output_bytes = 0;     // expected on the output stream (whole beats are checked)
  // Accelerators that read client memory themselves (list_walk): where their reads go (client virtual
  // addresses, the session's rights), whose address space it is (a change flushes the TLB), and
  // whether a TLB miss is a page walk (PHASE/V) or a window lookup (AISLE).
  funcs::MemoryPort* memory = nullptr;
  uint32_t asid = 0;
  bool page_walks = false;
  bool flush_tlb = false;  // empty the TLB first (memory was unmapped since)
};

struct RtlResult {
  Status status = Status::ok;
  std::string message;          // why, when status is not ok
  uint64_t value = 0;           // the accelerator's 64-bit return value (RET)
  std::vector<uint8_t> output;  // output_bytes bytes
  uint64_t cycles = 0;          // from the start write to the completion interrupt
  uint64_t bus_cycles = 0;      // register-bus cycles around it: arguments, start, read-back
  uint64_t total_cycles = 0;    // cycles + bus_cycles
  double seconds = 0;           // total_cycles at the fabric clock
  // list_walk: its TLB's lookups during the job (from the TLB's counters) and the nodes it visited.
  uint64_t tlb_hits = 0;
  uint64_t tlb_misses = 0;
  uint64_t nodes = 0;
};

class RtlAccelerator {
 public:
  virtual ~RtlAccelerator() = default;
  RtlAccelerator(const RtlAccelerator&) = delete;
  RtlAccelerator& operator=(const RtlAccelerator&) = delete;

  // Runs one job to completion. Never throws; a job the hardware cannot take (too many arguments),
  // one that does not finish within max_cycles, or one whose stream traffic differs from what it
  // announced fails with a status and message.
  virtual RtlResult run(const RtlJob& job) = 0;

  // Pulses reset and re-enables the completion interrupt (clears a priority queue's contents).
  virtual void reset() = 0;

  RtlFunction function() const { return function_; }
  const RtlPortInfo& ports() const { return ports_; }
  const RtlOptions& options() const { return options_; }
  double seconds(uint64_t cycles) const { return static_cast<double>(cycles) / options_.clock_hz; }

 protected:
  RtlAccelerator(RtlFunction function, const RtlOptions& options, const RtlPortInfo& ports)
      : function_(function), options_(options), ports_(ports) {}

 private:
  RtlFunction function_;
  RtlOptions options_;
  RtlPortInfo ports_;
};

// A slot loaded with `function`. Fails only for an option the function does not take.
Result<std::unique_ptr<RtlAccelerator>> make_rtl_accelerator(RtlFunction function,
                                                             const RtlOptions& options = {});

}  // namespace tandem::devices::rtl
