#!/usr/bin/env python3
"""Plots a figure CSV written by `tandem experiment thesis` / `compare-policies`.

usage: plot_thesis.py FIGURE.csv METRIC TITLE OUT.png
METRIC is normalized_makespan or utilization; one line per series against the accelerator speedup.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    path, metric, title, out = sys.argv[1:5]
    series = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            series.setdefault(row["series"], []).append((float(row["speedup"]), float(row[metric])))
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for name, pts in series.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=name)
    ax.set_xlabel("accelerator speedup (x)")
    ax.set_ylabel("normalised makespan" if metric == "normalized_makespan" else "system utilisation (Eq 5.7)")
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=2 if len(series) > 8 else 1)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
