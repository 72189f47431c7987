#!/usr/bin/env python3
"""Plots `tandem experiment access-methods` results.

Usage: python3 python/plot_access.py DIR   (DIR holds overhead.csv, breakdown.csv, sobel.csv, scaling.csv,
energy.csv from the experiment). Writes DIR/access_methods.png with five panels:
  (a) per-call time against transfer size per method (HybridOS Fig 5), log-log;
  (b) where a call's time goes per method and size (HybridOS Fig 4), stacked bars;
  (c) Sobel latency per frame size per method (seed 001 Table 6);
  (d) frames/s against client threads, VGA, per method (seed 001 Figs 12-14);
  (e) energy per frame per method and frame size (seed 001 Fig 15).
"""
import csv
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def grouped_bars(ax, table, ylabel, title):
    """One group of bars per row of `table` (frame size -> {method: value}), a bar per method, log scale."""
    names = list(table.keys())
    methods = sorted({m for row in table.values() for m in row})
    width = 0.8 / max(1, len(methods))
    for i, m in enumerate(methods):
        ax.bar([x + i * width for x in range(len(names))], [table[n].get(m, 0) for n in names], width, label=m)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(names))])
    ax.set_xticklabels(names)
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)


def main(out_dir):
    out = Path(out_dir)
    fig, axes = plt.subplots(1, 5, figsize=(26, 5))

    ax = axes[0]
    series = defaultdict(list)
    for r in rows(out / "overhead.csv"):
        series[r["method"]].append((int(r["bytes"]), float(r["median_ns"]) / 1000.0))
    for method, pts in series.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=method)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bytes per call")
    ax.set_ylabel("call time (us, median)")
    ax.set_title("(a) per-call time vs size (HybridOS Fig 5)")
    ax.legend()

    ax = axes[1]
    parts = ["host_copy_us", "gather_us", "device_us", "runtime_us"]
    labels, bottoms = [], []
    data = rows(out / "breakdown.csv")
    for r in data:
        labels.append(f"{r['method']}\n{int(r['bytes']) // 1024}K")
    bottom = [0.0] * len(data)
    for part in parts:
        values = [float(r[part]) for r in data]
        ax.bar(range(len(data)), values, bottom=bottom, label=part.replace("_us", ""))
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(range(len(data)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("us")
    ax.set_title("(b) where a call's time goes (HybridOS Fig 4)")
    ax.legend(fontsize=8)

    ax = axes[2]
    frames = defaultdict(dict)
    for r in rows(out / "sobel.csv"):
        frames[r["frame"]][r["method"]] = float(r["median_us"])
    grouped_bars(ax, frames, "us per frame (median)", "(c) Sobel latency (seed 001 Table 6)")

    ax = axes[3]
    scale = defaultdict(list)
    for r in rows(out / "scaling.csv"):
        if r["frame"] == "VGA":
            scale[r["method"]].append((int(r["threads"]), float(r["frames_per_s"])))
    for m, pts in scale.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=m)
    ax.set_xlabel("client threads")
    ax.set_ylabel("frames/s (VGA)")
    ax.set_title("(d) scaling (seed 001 Figs 12-14)")
    ax.legend(fontsize=8)

    ax = axes[4]
    energy = defaultdict(dict)
    for r in rows(out / "energy.csv"):
        energy[r["frame"]][r["method"]] = float(r["total_j_per_frame"]) * 1000.0
    grouped_bars(ax, energy, "mJ per frame", "(e) energy per frame (seed 001 Fig 15)")

    fig.tight_layout()
    fig.savefig(out / "access_methods.png", dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
