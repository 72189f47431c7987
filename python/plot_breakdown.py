#!/usr/bin/env python3
"""`tandem trace report`: per-job latency breakdown as stacked bars (median of each phase per function
and access method), in the manner of GPPU's Fig 12 and HybridOS's Fig 4.

usage: plot_breakdown.py BREAKDOWN.csv OUT.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    groups, phases, median = [], [], {}
    with open(sys.argv[1], newline="") as f:
        for row in csv.DictReader(f):
            if row["phase"] == "total":
                continue
            g, p = row["group"], row["phase"]
            if g not in groups:
                groups.append(g)
            if p not in phases:
                phases.append(p)
            median[(g, p)] = float(row["median_us"])
    if not groups:
        sys.exit("plot_breakdown.py: no jobs in the breakdown")
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(groups) + 3), 4.5))
    bottom = [0.0] * len(groups)
    for p in phases:
        values = [median.get((g, p), 0.0) for g in groups]
        ax.bar(range(len(groups)), values, bottom=bottom, label=p)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_ylabel("median per phase (us)")
    ax.set_title("Where a job's latency goes (tandem trace report)")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
