// Internal: the cycle loop shared by every slot, as a template over the Verilated model class.
// Each accelerator's .cc instantiates it once with its model (so only that file includes the
// model's large generated header).
//
// Every model has the same ports (rtl/common/tandem_accel_shell.sv); only the stream data width
// differs, which Verilator represents as QData (up to 64 bits) or VlWide<N> (wider).
#pragma once

#include <verilated.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "devices/rtl/rtl_accelerator.hpp"
#include "devices/rtl/slots.hpp"

namespace tandem::devices::rtl::detail {

// ---- beat <-> port data, little-endian: byte i of a beat is bits [8i+7:8i] ----
// Ports up to 64 bits wide are plain integers (CData, SData, IData, QData).
template <class Port>
requires std::is_integral_v<Port>
void load_beat(Port& port, std::span<const uint8_t> bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes.size() && i < sizeof(Port); ++i) v |= uint64_t{bytes[i]} << (8 * i);
  port = static_cast<Port>(v);
}
template <std::size_t Words>
void load_beat(VlWide<Words>& port, std::span<const uint8_t> bytes) {
  for (std::size_t w = 0; w < Words; ++w) {
    uint32_t v = 0;
    for (std::size_t b = 0; b < 4; ++b) {
      const std::size_t i = w * 4 + b;
      if (i < bytes.size()) v |= uint32_t{bytes[i]} << (8 * b);
    }
    port[w] = v;
  }
}
template <class Port>
requires std::is_integral_v<Port>
void store_beat(const Port& port, std::span<uint8_t> bytes) {
  for (size_t i = 0; i < bytes.size() && i < sizeof(Port); ++i) {
    bytes[i] = static_cast<uint8_t>(uint64_t{port} >> (8 * i));
  }
}
template <std::size_t Words>
void store_beat(const VlWide<Words>& port, std::span<uint8_t> bytes) {
  for (std::size_t i = 0; i < bytes.size() && i < Words * 4; ++i) {
    bytes[i] = static_cast<uint8_t>(port[i / 4] >> (8 * (i % 4)));
  }
}

// Deterministic back-pressure pattern (xorshift64*), restarted for each job.
class StallPattern {
 public:
  StallPattern(uint64_t seed, uint32_t per_mille) : state_(seed | 1), per_mille_(per_mille) {}
  bool stall() {
    if (per_mille_ == 0) return false;
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return ((state_ * 0x2545F4914F6CDD1DULL) >> 32) % 1000 < per_mille_;
  }

 private:
  uint64_t state_;
  uint32_t per_mille_;
};

// A Verilated model with its own context, and the CSR bus and reset sequence every accelerator shares
// (rtl/common/tandem_accel_shell.sv). `model->port` reaches the ports.
template <class Model>
class VerilatedModel {
 public:
  // `scoped`: the model has scopes (assertions), which register with and, when destroyed, erase
  // themselves from the calling thread's current context: it is made this model's on whichever thread
  // creates or destroys it (a stale one from an earlier slot on that thread would be freed).
  explicit VerilatedModel(bool scoped) : scoped_(scoped) {
    const std::lock_guard<std::mutex> lock(verilator_setup_mutex());
    context_ = std::make_unique<VerilatedContext>();
    context_->threads(1);  // single-threaded models: no worker pool per slot
    if (scoped_) Verilated::threadContextp(context_.get());
    model_ = std::make_unique<Model>(context_.get(), "slot");
  }
  ~VerilatedModel() {
    model_->final();
    const std::lock_guard<std::mutex> lock(verilator_setup_mutex());
    if (scoped_) Verilated::threadContextp(context_.get());
    model_.reset();
    context_.reset();
  }
  VerilatedModel(const VerilatedModel&) = delete;
  VerilatedModel& operator=(const VerilatedModel&) = delete;

  Model* operator->() { return model_.get(); }

  // Inputs changed while the clock is low: let combinational outputs follow.
  void settle() { model_->eval(); }
  void clock_edge() {
    model_->clk_i = 1;
    model_->eval();
    model_->clk_i = 0;
    model_->eval();
  }
  void csr_write(uint32_t addr, uint32_t value, uint64_t& cycles) {
    model_->csr_addr_i = static_cast<CData>(addr);
    model_->csr_wdata_i = value;
    model_->csr_we_i = 1;
    settle();
    clock_edge();
    model_->csr_we_i = 0;
    ++cycles;
  }
  uint32_t csr_read(uint32_t addr, uint64_t& cycles) {
    model_->csr_addr_i = static_cast<CData>(addr);
    model_->csr_re_i = 1;
    settle();
    clock_edge();  // the read data register loads at this edge
    model_->csr_re_i = 0;
    ++cycles;
    return model_->csr_rdata_o;
  }
  // Reset for 4 cycles, then the completion interrupt enabled (GIE, IER). The caller idles the
  // model's other inputs first.
  void reset_and_enable() {
    model_->clk_i = 0;
    model_->csr_we_i = 0;
    model_->csr_re_i = 0;
    model_->csr_addr_i = 0;
    model_->csr_wdata_i = 0;
    model_->rst_ni = 0;
    settle();
    for (int i = 0; i < 4; ++i) clock_edge();
    model_->rst_ni = 1;
    settle();
    clock_edge();
    uint64_t ignored = 0;
    csr_write(csr::kGie, 1, ignored);
    csr_write(csr::kIer, 1, ignored);
  }

 private:
  bool scoped_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Model> model_;
};

template <class Model>
class VerilatedSlot final : public RtlAccelerator {
 public:
  VerilatedSlot(RtlFunction function, const RtlOptions& options, const RtlPortInfo& ports)
      : RtlAccelerator(function, options, ports), model_(/*scoped=*/false) {
    reset();
  }

  void reset() override {
    model_->in_valid_i = 0;
    model_->out_ready_i = 0;
    model_.reset_and_enable();
  }

  RtlResult run(const RtlJob& job) override;

 private:
  VerilatedModel<Model> model_;
};

template <class Model>
RtlResult VerilatedSlot<Model>::run(const RtlJob& job) {
  RtlResult result;
  const RtlPortInfo& p = ports();
  if (job.args.size() > p.num_args) {
    result.status = Status::invalid_argument;
    result.message = "job has " + std::to_string(job.args.size()) + " arguments, the accelerator " +
                     std::to_string(p.num_args);
    return result;
  }
  const size_t in_beats = (job.input.size() + p.in_beat_bytes - 1) / p.in_beat_bytes;
  const size_t out_beats = (job.output_bytes + p.out_beat_bytes - 1) / p.out_beat_bytes;
  std::vector<uint8_t> out(out_beats * p.out_beat_bytes);
  std::span<const uint8_t> input(job.input);

  for (size_t n = 0; n < job.args.size(); ++n) {
    model_.csr_write(csr::kArg0 + 4 * static_cast<uint32_t>(n), job.args[n], result.bus_cycles);
  }
  model_.csr_write(csr::kCtrl, csr::kCtrlStart, result.bus_cycles);

  StallPattern in_stall(options().stall_seed, options().input_stall_per_mille);
  StallPattern out_stall(options().stall_seed ^ 0x9e3779b97f4a7c15ULL,
                         options().output_stall_per_mille);
  size_t next_in = 0, got_out = 0, extra_out = 0;
  bool offering = false;  // once valid is up it stays up until the beat is taken (AXI rule)
  bool finished = false;
  while (!finished) {
    if (result.cycles >= options().max_cycles) {
      result.status = Status::timeout;
      result.message = "no completion within " + std::to_string(options().max_cycles) + " cycles";
      reset();  // leave the slot usable
      return result;
    }
    if (!offering && next_in < in_beats && !in_stall.stall()) {
      const size_t at = next_in * p.in_beat_bytes;
      load_beat(model_->in_data_i,
                input.subspan(at, std::min<size_t>(p.in_beat_bytes, input.size() - at)));
      offering = true;
    }
    model_->in_valid_i = offering;
    const bool sink_ready = !out_stall.stall();
    model_->out_ready_i = sink_ready;
    model_.settle();
    const bool in_fire = offering && model_->in_ready_o;
    const bool out_fire = model_->out_valid_o && sink_ready;
    if (out_fire) {
      if (got_out < out_beats) {
        store_beat(model_->out_data_o,
                   std::span<uint8_t>(out).subspan(got_out * p.out_beat_bytes, p.out_beat_bytes));
        ++got_out;
      } else {
        ++extra_out;
      }
    }
    finished = model_->irq_o;  // completion is reported only once all output has left
    model_.clock_edge();
    if (!finished) ++result.cycles;
    if (in_fire) {
      ++next_in;
      offering = false;
    }
  }
  model_->in_valid_i = 0;
  model_->out_ready_i = 0;

  const uint64_t lo = model_.csr_read(csr::kRetLo, result.bus_cycles);
  const uint64_t hi = model_.csr_read(csr::kRetHi, result.bus_cycles);
  result.value = lo | (hi << 32);
  model_.csr_write(csr::kIsr, 1, result.bus_cycles);
  const uint32_t ctrl = model_.csr_read(csr::kCtrl, result.bus_cycles);
  result.total_cycles = result.cycles + result.bus_cycles;
  result.seconds = seconds(result.total_cycles);

  if ((ctrl & (csr::kCtrlDone | csr::kCtrlIdle)) != (csr::kCtrlDone | csr::kCtrlIdle)) {
    result.status = Status::device_error;
    result.message = "interrupt without CTRL.done and idle";
  } else if (next_in != in_beats) {
    result.status = Status::device_error;
    result.message = "accelerator finished after " + std::to_string(next_in) + " of " +
                     std::to_string(in_beats) + " input beats";
  } else if (got_out != out_beats || extra_out != 0) {
    result.status = Status::device_error;
    result.message = "accelerator produced " + std::to_string(got_out + extra_out) +
                     " output beats, expected " + std::to_string(out_beats);
  }
  out.resize(job.output_bytes);
  result.output = std::move(out);
  return result;
}

}  // namespace tandem::devices::rtl::detail
