#!/usr/bin/env python3
"""Fig 5.13/5.14: resident accelerators per function over time (heat map) under each app's calls.

usage: plot_trace.py RESIDENCY.csv CALLS.csv OUT.png TITLE
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    residency_path, calls_path, out, title = sys.argv[1:5]
    spans = [(int(r["function"]), float(r["begin_s"]), float(r["end_s"])) for r in csv.DictReader(open(residency_path))]
    calls = [(int(r["app"]), int(r["function"]), float(r["begin_s"]), float(r["end_s"]), float(r["sw_only_s"]))
             for r in csv.DictReader(open(calls_path))]
    end = max([s[2] for s in spans] + [c[3] for c in calls] + [1e-3])
    functions = 16
    bins = 800
    dt = end / bins
    heat = np.zeros((functions, bins))
    for f, b, e in spans:
        if 0 <= f < functions:
            i0, i1 = int(b / dt), int(min(e / dt, bins))
            heat[f, i0:i1] += 1
    fig, ax = plt.subplots(figsize=(10, 4.8))
    im = ax.imshow(heat, aspect="auto", origin="lower", cmap="Greys", extent=(0, end * 1e3, -0.5, functions - 0.5),
                   vmin=0, vmax=max(1, heat.max()), interpolation="nearest")
    fig.colorbar(im, ax=ax, label="resident accelerators")
    colours = plt.get_cmap("tab10").colors
    apps = max([c[0] for c in calls] + [0]) + 1
    for app, f, b, e, sw in calls:
        y = f - 0.35 + 0.7 * (app + 0.5) / apps  # each app its own lane within the function's row
        ax.plot([b * 1e3, e * 1e3], [y, y], color=colours[app % 10], linewidth=2.5 if apps <= 4 else 1.5,
                solid_capstyle="butt")
        ax.plot([b * 1e3, (b + sw) * 1e3], [y, y], color=colours[app % 10], linewidth=0.6, alpha=0.5)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("function")
    ax.set_yticks(range(functions))
    ax.set_title(title + " (thick: call, thin: its SW-only duration)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
