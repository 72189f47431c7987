#!/bin/sh
# tandem sim sweep, end to end. usage: sweep_test.sh TANDEM SWEEP.toml WORKDIR resume|ray
#   resume: a sweep run again after losing two results and damaging a third runs exactly those three,
#           and every file it writes is the same bytes as before;
#   ray:    the same sweep through a local Ray instance with 2 workers gives byte-identical results.
set -eu
tandem=$1 sweep=$2 work=$3 mode=$4
rm -rf "$work"
mkdir -p "$work"
"$tandem" sim sweep "$sweep" --out "$work/a" --no-plot
fail() { echo "sweep_test: FAIL: $*"; exit 1; }
same() {
  diff -r "$1/runs" "$2/runs" || fail "runs differ"
  cmp "$1/runs.csv" "$2/runs.csv" || fail "runs.csv differs"
  cmp "$1/points.csv" "$2/points.csv" || fail "points.csv differs"
}
case $mode in
  resume)
    total=$(ls "$work/a/runs" | wc -l)
    cp -r "$work/a" "$work/b"
    for f in $(ls "$work/b/runs" | head -2); do rm "$work/b/runs/$f"; done
    damaged=$(ls "$work/b/runs" | head -1)
    echo "not json" > "$work/b/runs/$damaged"
    "$tandem" sim sweep "$sweep" --out "$work/b" --no-plot
    grep -q '"executed_runs": 3,' "$work/b/summary.json" || fail "expected 3 runs executed: $(cat "$work/b/summary.json")"
    grep -q "\"reused_runs\": $((total - 3))," "$work/b/summary.json" || fail "expected $((total - 3)) reused"
    same "$work/a" "$work/b"
    echo "sweep_test: resume ran 3 of $total runs, results identical"
    ;;
  ray)
    "$tandem" sim sweep "$sweep" --out "$work/r" --ray local --ray-workers 2 --no-plot
    same "$work/a" "$work/r"
    echo "sweep_test: local and Ray (2 workers) identical over $(ls "$work/a/runs" | wc -l) runs"
    ;;
  *) fail "mode must be resume or ray" ;;
esac
