// Reconfiguration delay of a slot from the size of its partial bitstream, for 7-series FPGAs.
//
// A partial bitstream rewrites whole configuration frames of the columns the slot's region spans,
// in each clock-region row it covers. The region must hold the slot's resources, so the number of
// columns of each kind follows from the resources (with a packing margin for CLBs); the frames per
// column, words per frame and column capacities are the 7-series figures (UG470, UG474). The delay
// is the bitstream's bytes pushed through the configuration port (ICAPE2: 32 bits at up to 100 MHz)
// plus a fixed set-up time (decoupling, driver). The docs (docs/rtl.md) walk through an example.
#pragma once

#include <cstdint>

namespace tandem::devices::rtl {

struct SlotResources {
  uint32_t luts = 0;  // logic and memory LUTs
  uint32_t flip_flops = 0;
  double bram36 = 0;  // RAMB36 equivalents (a RAMB18 counts 0.5)
  uint32_t dsps = 0;
};

struct FabricGeometry {
  uint32_t words_per_frame = 101;
  uint32_t bytes_per_word = 4;
  uint32_t clb_frames_per_column = 36;
  uint32_t bram_frames_per_column = 28;           // interconnect and configuration
  uint32_t bram_content_frames_per_column = 128;  // initial contents (block type 1)
  uint32_t dsp_frames_per_column = 28;
  uint32_t pad_frames_per_row = 1;  // written after each row's frames
  // Per column and clock-region row (50 CLBs of 8 LUTs and 16 flip-flops, 10 RAMB36, 20 DSP48E1).
  uint32_t luts_per_clb_column = 400;
  uint32_t ffs_per_clb_column = 800;
  uint32_t bram36_per_column = 10;
  uint32_t dsps_per_column = 20;
  double clb_packing = 0.75;  // fraction of a region's CLB capacity a design can use
  bool include_bram_content = true;
  uint32_t header_bytes = 512;  // sync word, commands, frame address, CRC, desync
};

struct PartialBitstream {
  uint32_t rows = 1;
  uint32_t clb_columns = 0;   // per row
  uint32_t bram_columns = 0;  // per row
  uint32_t dsp_columns = 0;   // per row
  uint64_t frames = 0;
  uint64_t bytes = 0;
};

// The slot's region spans `rows` clock-region rows (at least 1) and as many columns as it needs.
PartialBitstream estimate_partial_bitstream(const SlotResources& slot, uint32_t rows = 1,
                                            const FabricGeometry& fabric = {});

struct ConfigPort {
  uint32_t bytes_per_cycle = 4;  // ICAPE2 is 32 bits wide
  double clock_hz = 100e6;
  double setup_s = 0;  // fixed cost per reconfiguration (decouple, driver, start-up)
};

// Seconds to load a partial bitstream of `bytes` bytes.
double reconfiguration_delay_s(uint64_t bytes, const ConfigPort& port = {});

inline double reconfiguration_delay_s(const SlotResources& slot, uint32_t rows = 1,
                                      const FabricGeometry& fabric = {},
                                      const ConfigPort& port = {}) {
  return reconfiguration_delay_s(estimate_partial_bitstream(slot, rows, fabric).bytes, port);
}

}  // namespace tandem::devices::rtl
