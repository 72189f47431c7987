// The Verilator RTL fabric: slots whose Verilated models of the accelerators in rtl/ run jobs
// synchronously. RtlDevice (rtl_device.hpp) drives one from worker threads behind the asynchronous
// Device interface; tests and `tandem calibrate-rtl` use it directly.
//
// configure(slot, f) loads f's accelerator into the slot: a new model, in its reset state (a
// reconfiguration rewrites the region, so nothing survives it). execute() drives the job through
// the accelerator's control interface and streams: it reads the call's (already translated)
// buffers, streams them in, writes the output stream into the output buffers, and returns the
// accelerator's return value with device_ns = the cycles counted (register-bus cycles included) at
// the fabric clock. Results are real and bit-exact; simulating takes longer than the modelled time.
//
// list_walk reads the client's memory itself, through Call::memory (the session's port: windows, demand
// paging) and its own Verilog TLB (MemoryContext): see slot_list_walk.cc. A translation fault completes
// with TRANSLATION_FAULT (a disconnected client with DISCONNECTED), a misaligned node with
// INVALID_ARGUMENT; the slot serves its next job normally.
//
// A call larger than one hardware job takes (sobel wider than 1920 pixels, matmul dimensions above
// 100, or more data than the per-job bounds below) runs as a sequence of hardware jobs on the same
// slot, as a driver would issue them: sobel in tiles with a one-pixel halo, matmul in 100x100x100
// blocks summed modulo 2^32, the others in chunks (priority_queue keeps its contents between its
// chunks). The device time is the sum of their cycles.
//
// Never throws and never aborts on what a client sent: a job on a slot loaded with another function,
// or one the hardware fails (timeout, refusal), completes with DEVICE_ERROR (last_error() says why).
// Slots are independent: different slots may be driven from different threads at once; one slot from
// one thread at a time.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "abi/status.hpp"
#include "devices/device_tlb.hpp"
#include "funcs/function.hpp"
#include "devices/rtl/rtl_accelerator.hpp"

namespace tandem::devices::rtl {

struct RtlFabricOptions {
  RtlOptions accelerator;  // clock_hz, max_cycles per hardware job, test back-pressure
  // The most one hardware job carries (smaller values make tests exercise the tiling cheaply).
  uint32_t accumulate_values_per_job = 1u << 20;
  uint32_t sobel_rows_per_job = 1024;      // output rows (the hardware takes up to 65535 rows)
  uint32_t matmul_tile = 100;              // rows, columns and inner dimension (hardware: <= 100)
  uint32_t dct_blocks_per_job = 4096;
  uint32_t pq_commands_per_job = 1u << 16;
};

struct RtlSlotStats {
  uint64_t jobs = 0;           // execute() calls that ran
  uint64_t hardware_jobs = 0;  // accelerator runs (a tiled call makes several)
  uint64_t cycles = 0;         // total cycles of those runs
  uint64_t models_built = 0;   // Verilated models created by configure()
};

struct ExecResult {
  Status status = Status::ok;
  int64_t value = 0;
  int64_t device_ns = 0;  // the job's duration on the device (its cycles at the fabric clock)
  // list_walk: its Verilog TLB's lookups (hits, misses = page walks) and the pages the session's port
  // faulted in on demand (PHASE/V), whose service time device_ns includes.
  TlbCounts tlb;
  uint64_t nodes = 0;  // list_walk: nodes visited
};

// What a job that reads client memory itself (list_walk, through Call::memory) needs beyond its call.
struct MemoryContext {
  uint32_t asid = 0;                            // the session: the slot's TLB holds one address space
  uint8_t address_mode = TANDEM_ADDRESS_AISLE;  // PHASE/V: a TLB miss is a page walk
  bool flush_tlb = false;                       // memory was unmapped since the slot's last job
};

// Which accelerator implements a catalog function; false if none does.
bool rtl_function_for(uint16_t function, RtlFunction& out);

class RtlFabric {
 public:
  RtlFabric(uint32_t slots, const RtlFabricOptions& options);
  ~RtlFabric();
  RtlFabric(const RtlFabric&) = delete;
  RtlFabric& operator=(const RtlFabric&) = delete;

  uint32_t slot_count() const { return static_cast<uint32_t>(slots_.size()); }
  static bool supports(uint16_t function);
  void configure(uint32_t slot, uint16_t function);
  ExecResult execute(uint32_t slot, const funcs::Call& call, const MemoryContext& memory = {});

  // ---- introspection (tests, tools); call from the thread that drives the slot ----
  static constexpr uint16_t kEmpty = UINT16_MAX;
  uint16_t loaded(uint32_t slot) const { return slot < slots_.size() ? slots_[slot].function : kEmpty; }
  const RtlSlotStats& stats(uint32_t slot) const { return slots_.at(slot).stats; }
  const std::string& last_error(uint32_t slot) const { return slots_.at(slot).last_error; }
  const RtlFabricOptions& options() const { return options_; }

 private:
  struct Slot {
    uint16_t function = kEmpty;
    std::unique_ptr<RtlAccelerator> accelerator;
    RtlSlotStats stats;
    std::string last_error;
  };
  RtlFabricOptions options_;
  std::vector<Slot> slots_;
};

}  // namespace tandem::devices::rtl
