#!/usr/bin/env python3
"""Runs `tandem bench device ... --json` and checks the sharing comparison's shape: every round of both
set-ups measured jobs, no errors or late starts, and the headline ratio is the median of the rounds'
ratios; the no-op round trip and the split were measured and their ratios follow from their times; the
chains ran on host and device-local buffers (the figures themselves are not judged: this machine's
noise).

usage: check_bench_device.py TANDEM_BINARY ROUNDS BENCH_ARGS...
"""
import json
import statistics
import subprocess
import sys


def fail(msg):
    print("check_bench_device: FAIL: " + msg)
    sys.exit(1)


def main():
    tandem, rounds, args = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    processes = int(args[args.index("--processes") + 1]) if "--processes" in args else 8
    run = subprocess.run([tandem, "bench", "device", *args, "--json"], capture_output=True, text=True, timeout=280)
    if run.returncode != 0:
        fail("exit %d: %s" % (run.returncode, run.stderr[-2000:]))
    report = json.loads(run.stdout)
    p = report["processes"]
    if p["rounds"] != rounds:
        fail("rounds %s, expected %d" % (p["rounds"], rounds))
    for group in ("separate_contexts", "through_tandemd"):
        g = p[group]
        if g["processes"] != processes:
            fail("%s: %s processes ran, %d asked" % (group, g["processes"], processes))
        per_round = g["aggregate_jobs_per_s_per_round"]
        if len(per_round) != rounds or min(per_round) <= 0:
            fail("%s: jobs/s per round %s" % (group, per_round))
        if g["errors"] != 0 or g["late_starts"] != 0:
            fail("%s: %d errors, %d late starts" % (group, g["errors"], g["late_starts"]))
        if abs(g["aggregate_jobs_per_s"] - statistics.median(per_round)) > 1e-6 * g["aggregate_jobs_per_s"]:
            fail("%s: aggregate is not the median round" % group)
        if not g["setup_ms_median"] > 0:
            fail("%s: start-up %s ms" % (group, g["setup_ms_median"]))
    # The daemon's own start-up is timed apart from its clients' (they start once it answers).
    if not p["daemon_startup_ms"] > 0:
        fail("daemon start-up %s ms" % p["daemon_startup_ms"])
    ratios = p["ratio_per_round"]
    expected = [t / s for t, s in zip(p["through_tandemd"]["aggregate_jobs_per_s_per_round"],
                                      p["separate_contexts"]["aggregate_jobs_per_s_per_round"])]
    if len(ratios) != rounds or any(abs(a - b) > 1e-9 * b for a, b in zip(ratios, expected)):
        fail("ratio per round %s, expected %s" % (ratios, expected))
    headline = report["aggregate_jobs_per_s_over_separate_contexts"]
    if abs(headline - statistics.median(ratios)) > 1e-9 * headline:
        fail("headline ratio %s is not the median of %s" % (headline, ratios))
    # The no-op round trip: both medians measured, and the headline is their ratio.
    noop = report["noop"]
    if not (noop["raw_median_ns"] > 0 and noop["tandem_median_ns"] > 0):
        fail("no-op medians %s" % noop)
    expected_noop = noop["tandem_median_ns"] / noop["raw_median_ns"]
    if abs(report["noop_rtt_over_raw"] - expected_noop) > 1e-9 * expected_noop:
        fail("noop_rtt_over_raw %s is not tandem / raw = %s" % (report["noop_rtt_over_raw"], expected_noop))
    # The split: accumulate and sobel at each size in every mode, and each gain the better fixed side
    # over the split.
    split = report["split"]
    if sorted({r["function"] for r in split}) != ["accumulate", "sobel"]:
        fail("split functions %s" % sorted({r["function"] for r in split}))
    for r in split:
        times = [r[k] for k in ("cpu_only_s", "device_only_s", "split_s", "device_packet_s")]
        if not all(t > 0 for t in times):
            fail("split row %s" % r)
        gain = min(r["cpu_only_s"], r["device_only_s"]) / r["split_s"]
        if abs(r["split_speedup_over_best_single"] - gain) > 1e-9 * gain:
            fail("split row %s: gain is not best / split = %s" % (r, gain))
    # Chains: every size measured on both kinds of buffers (the device has local memory), and the
    # headline is the least gain.
    chain = report["chain"]
    if not chain or any(r["local_chain_s"] is None or not r["host_chain_s"] > 0 for r in chain):
        fail("chain rows %s" % chain)
    gains = [r["host_chain_s"] / r["local_chain_s"] for r in chain]
    if abs(report["local_chain_over_host_min"] - min(gains)) > 1e-9 * min(gains):
        fail("local_chain_over_host_min %s is not the least of %s" % (report["local_chain_over_host_min"], gains))
    print("check_bench_device: ok (rounds %s, ratio %.2f, chain gains %s)" %
          (["%.2f" % r for r in ratios], headline, ["%.2f" % g for g in gains]))


if __name__ == "__main__":
    main()
