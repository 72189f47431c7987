#include "devices/rtl/reconfig_model.hpp"

#include <algorithm>
#include <cmath>

namespace tandem::devices::rtl {
namespace {

uint32_t columns_for(double amount, double per_column) {
  if (amount <= 0 || per_column <= 0) return 0;
  return static_cast<uint32_t>(std::ceil(amount / per_column - 1e-9));
}

}  // namespace

PartialBitstream estimate_partial_bitstream(const SlotResources& slot, uint32_t rows,
                                            const FabricGeometry& fabric) {
  PartialBitstream b;
  b.rows = std::max<uint32_t>(rows, 1);
  const double r = b.rows;
  const double clb_by_luts = slot.luts / (fabric.luts_per_clb_column * fabric.clb_packing * r);
  const double clb_by_ffs = slot.flip_flops / (fabric.ffs_per_clb_column * fabric.clb_packing * r);
  b.clb_columns = columns_for(std::max(clb_by_luts, clb_by_ffs), 1.0);
  b.bram_columns = columns_for(slot.bram36, fabric.bram36_per_column * r);
  b.dsp_columns = columns_for(slot.dsps, fabric.dsps_per_column * r);

  uint64_t per_row = uint64_t{b.clb_columns} * fabric.clb_frames_per_column +
                     uint64_t{b.bram_columns} * fabric.bram_frames_per_column +
                     uint64_t{b.dsp_columns} * fabric.dsp_frames_per_column;
  if (per_row > 0) per_row += fabric.pad_frames_per_row;
  if (fabric.include_bram_content && b.bram_columns > 0) {
    per_row += uint64_t{b.bram_columns} * fabric.bram_content_frames_per_column +
               fabric.pad_frames_per_row;
  }
  b.frames = per_row * b.rows;
  b.bytes = b.frames * fabric.words_per_frame * fabric.bytes_per_word + fabric.header_bytes;
  return b;
}

double reconfiguration_delay_s(uint64_t bytes, const ConfigPort& port) {
  if (port.bytes_per_cycle == 0 || !(port.clock_hz > 0)) return 0;
  const double cycles = std::ceil(static_cast<double>(bytes) / port.bytes_per_cycle);
  return port.setup_s + cycles / port.clock_hz;
}

}  // namespace tandem::devices::rtl
