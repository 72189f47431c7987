#!/usr/bin/env bash
# Synthesizes every RTL accelerator with Yosys for Xilinx 7-series (synth_xilinx) and writes a
# Markdown table of its resources (like seed 001's Table 7) to docs/results/rtl_area.md.
#
#   scripts/rtl_area.sh [output.md]
#
# Each accelerator is synthesized out of context (-noiopad: no I/O buffers, it is a slot's
# contents, not a chip) and flattened, with its default parameters. Takes a few minutes.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/docs/results/rtl_area.md}
accelerators=(accumulate sobel matmul dct_quant priority_queue list_walk)
command -v yosys >/dev/null || { echo "rtl_area: yosys not found (scripts/setup.sh installs it)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rows=()
for name in "${accelerators[@]}"; do
  sources=("$root"/rtl/common/*.sv "$root"/rtl/"$name"/*.sv)
  script="read_verilog -sv ${sources[*]}; synth_xilinx -family xc7 -top tandem_$name -flatten -noiopad; tee -q -o $work/$name.stat stat"
  echo "rtl_area: synthesizing $name" >&2
  start=$SECONDS
  if ! nice yosys -q -l "$work/$name.log" -p "$script" >/dev/null 2>&1; then
    echo "rtl_area: yosys failed for $name; see the log:" >&2
    tail -20 "$work/$name.log" >&2
    exit 1
  fi
  seconds=$((SECONDS - start))
  # LUTs used as memory: distributed RAM primitives and shift registers, counted in LUTs.
  rows+=("$(awk -v name="$name" -v secs="$seconds" '
    $1 ~ /^LUT[1-6]$/ { logic += $2 }
    $1 == "RAM32M" || $1 == "RAM64M" || $1 == "RAM128X1D" || $1 == "RAM256X1S" { mem += 4 * $2 }
    $1 == "RAM32X1D" || $1 == "RAM64X1D" || $1 == "RAM128X1S" { mem += 2 * $2 }
    $1 == "RAM32X1S" || $1 == "RAM64X1S" || $1 ~ /^SRL/ { mem += $2 }
    $1 ~ /^FD[RSCP]E$/ || $1 ~ /^LD[CP]E$/ { ff += $2 }
    $1 == "RAMB36E1" { bram += $2 }
    $1 == "RAMB18E1" { bram += 0.5 * $2 }
    $1 == "DSP48E1" { dsp += $2 }
    $1 == "CARRY4" { carry += $2 }
    END {
      printf "| %s | %d | %d | %d | %d | %g | %d | %d | %d |", name, logic + mem, mem, logic,
             ff, bram, dsp, carry, secs
    }' "$work/$name.stat")")
done

{
  echo "# RTL accelerator area (Yosys, Xilinx 7-series)"
  echo
  echo "Made by \`scripts/rtl_area.sh\` with $(yosys -V | head -1) on $(date -u +%Y-%m-%d); each"
  echo "accelerator (its common CSR shell and stream skid buffers included) was synthesized with"
  echo
  echo '```'
  echo "yosys -p 'read_verilog -sv rtl/common/*.sv rtl/<name>/*.sv;"
  echo "          synth_xilinx -family xc7 -top tandem_<name> -flatten -noiopad; stat'"
  echo '```'
  echo
  echo "with default parameters (sobel: 16 lanes, width up to 1920; matmul: up to 100x100;"
  echo "priority_queue: 256 entries). Yosys's mapping is not Vivado's: treat the numbers as"
  echo "estimates (Vivado usually packs tighter). BRAMs count RAMB36 (a RAMB18 counts 0.5);"
  echo "memory LUTs are distributed RAM (LUTRAM) and shift registers."
  echo
  echo "| Accelerator | Slice LUTs | LUTs (memory) | LUTs (logic) | Flip-flops | BRAMs | DSPs | CARRY4 | Synthesis (s) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
} > "$out"
echo "rtl_area: wrote $out" >&2
