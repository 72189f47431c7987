#!/usr/bin/env python3
"""Summary plots of a `tandem sim run` / `tandem sim sweep` folder.

usage: plot_sweep.py DIR   (DIR holds points.csv and summary.json)
No axes: each application's slowdown (its calls' latency over their SW-only time). One axis: the
normalised makespan and the utilisation along it. Several: one plot per pair of axes (a, b), the mean
normalised makespan over the other axes against a, one line per value of b: DIR/pair-<a>-<b>.png.
"""
import csv
import itertools
import json
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def number(v):
    try:
        return float(v)
    except ValueError:
        return None


def ordered(values):
    """Axis values in their natural order: numbers numerically, others as they first appear."""
    seen = list(dict.fromkeys(values))
    if all(number(v) is not None for v in seen):
        return sorted(seen, key=float)
    return seen


def main(out):
    out = Path(out)
    summary = json.loads((out / "summary.json").read_text())
    axes = summary["axes"]
    with open(out / "points.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    if not axes:
        slow = summary.get("app_slowdown", [])
        fig, ax = plt.subplots(figsize=(6.5, 4))
        ax.bar(range(len(slow)), slow, color="tab:blue")
        ax.axhline(1, color="black", lw=0.8, ls=":")
        ax.set_xlabel("application")
        ax.set_ylabel("slowdown (latency / SW-only time)")
        ax.set_title(f"{summary['study']}: normalised makespan {summary['avg_normalized_makespan']:.3f}", fontsize=9)
        fig.tight_layout()
        fig.savefig(out / "sweep.png", dpi=110)
        return
    if len(axes) == 1:
        a = axes[0]
        xs = ordered([r[a] for r in rows])
        pos = {v: i for i, v in enumerate(xs)}
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for metric, label in (("normalized_makespan", "normalised makespan"), ("utilization", "utilisation (Eq 5.7)")):
            pts = sorted((pos[r[a]], float(r[metric])) for r in rows)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label)
        ax.set_xticks(range(len(xs)), xs, rotation=30 if len(xs) > 8 else 0)
        ax.set_xlabel(a)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(summary["study"], fontsize=9)
        fig.tight_layout()
        fig.savefig(out / "sweep.png", dpi=110)
        return
    for a, b in itertools.permutations(axes, 2):
        if axes.index(a) > axes.index(b) and len(axes) > 2:
            continue  # one plot per unordered pair beyond two axes: x is the earlier axis
        xs = ordered([r[a] for r in rows])
        pos = {v: i for i, v in enumerate(xs)}
        cells = defaultdict(list)
        for r in rows:
            cells[(r[b], r[a])].append(float(r["normalized_makespan"]))
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for bv in ordered([r[b] for r in rows]):
            pts = sorted((pos[x], sum(v) / len(v)) for (bb, x), v in cells.items() if bb == bv)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=f"{b} = {bv}")
        ax.set_xticks(range(len(xs)), xs, rotation=30 if len(xs) > 8 else 0)
        ax.set_xlabel(a)
        ax.set_ylabel("normalised makespan (mean over the other axes)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, ncol=2 if len(cells) > 16 else 1)
        ax.set_title(summary["study"], fontsize=9)
        fig.tight_layout()
        name = f"pair-{a}-{b}.png".replace("/", "_")
        fig.savefig(out / name, dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
