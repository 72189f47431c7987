#!/usr/bin/env bash
# The CUDA checks for a machine with an NVIDIA GPU, run from the repository root with the binaries
# built elsewhere: scripts/cuda_device_check.sh BIN_DIR OUT_DIR. BIN_DIR holds tandem, tandemd,
# test_cuda_kernels and test_cuda_device (and, in BIN_DIR/lib, the shared libraries they need that
# the machine may lack). Each step has its own time limit and its own log in OUT_DIR, so one that
# hangs or fails leaves the others' results; a table of outcomes is printed last. BENCH_RUNS (1):
# how many times `tandem bench device --device cuda` runs.
set -u
bin=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TANDEM_LEARNED_DIR=off
# The device tests start the tandemd their build names (TANDEM_TANDEMD_PATH): put it there.
built_at=$(grep -a -o -m1 '/[[:graph:]]*/tandemd' "$bin/test_cuda_device" | head -n 1 || true)
if [ -n "$built_at" ] && [ ! -e "$built_at" ]; then
  mkdir -p "$(dirname "$built_at")" && ln -sf "$bin/tandemd" "$built_at"
fi
summary=()
step() {  # step NAME LIMIT_S COMMAND...: runs it, its output in OUT/NAME.log
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-16s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$(tail -n 1 "$out/$name.log" | cut -c1-90)")")
  return 0
}
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv; uname -r;
  ldd "$bin/tandem" | grep "not found"; } > "$out/machine.log" 2>&1
step kernels 50 "$bin/test_cuda_kernels"
# The trap test loses its process's CUDA context for good: every other test runs before it, in one process.
step device 110 "$bin/test_cuda_device" --gtest_filter=-*Traps*
step device_trap 20 "$bin/test_cuda_device" --gtest_filter=*Traps*
for run in $(seq "${BENCH_RUNS:-1}"); do
  step "bench_$run" 90 "$bin/tandem" bench device --device cuda --out "$out/bench_cuda_$run.json"
done
step calibrate 25 "$bin/tandem" calibrate --device cuda --dry-run
# What `tandem status` says of a tandemd on the GPU (persistent mode).
status_dir=$(mktemp -d)
printf '[device]\nkinds = ["cuda"]\n[device.cuda]\nslots = 2\nmode = "persistent"\n' > "$status_dir/cuda.toml"
"$bin/tandemd" --foreground --config "$status_dir/cuda.toml" --socket "$status_dir/sock" > "$out/status_daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do
  timeout 5 "$bin/tandem" status --socket "$status_dir/sock" > "$out/status.log" 2>&1 && break
  sleep 0.2
done
summary+=("$(printf '%-16s %s' status "$(grep -m1 -i cuda "$out/status.log" | cut -c1-100)")")
kill "$daemon" 2> /dev/null
for _ in $(seq 50); do kill -0 "$daemon" 2> /dev/null || break; sleep 0.1; done
kill -9 "$daemon" 2> /dev/null
wait "$daemon" 2> /dev/null
cat "$out/machine.log"
grep -h "FAILED\|Failure\|error" "$out/kernels.log" "$out/device.log" | head -40
printf '%s\n' "${summary[@]}"
