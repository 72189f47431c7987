#!/usr/bin/env python3
"""Plots seed 004 Fig 4's effective-speedup surface with the service-request overheads measured by
`tandem experiment virtual-memory`.

Usage: python3 python/plot_fastpath.py DIR   (DIR holds service_rtt.csv). Writes DIR/fastpath_fig4.png.

A program whose accelerated part is a fraction f of its software time runs that part S times faster
(raw speedup), but the part asks the CPU for n services per second of its software time, each costing
one round trip t (measured: polling client, sleeping client, signal path; and seed 004's 9.6 us
FastPath and 62 us interrupt path for comparison). Normalised to the software
time: T = (1 - f) + f / S + f * n * t, effective speedup = 1 / T. One panel per round trip, f = 0.9.
"""
import csv
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

FRACTION = 0.9
PATHS = [("service_poll", "polling client"), ("service_sleep", "sleeping client"), ("signal", "signal round trip"),
         ("paper_fastpath", "seed 004 FastPath (worst)"), ("paper_interrupt", "seed 004 interrupt path")]
PAPER = {"paper_fastpath": 9.6e-6, "paper_interrupt": 62e-6}


def main(out_dir):
    out = Path(out_dir)
    with open(out / "service_rtt.csv", newline="") as f:
        rtt = {r["path"]: float(r["rtt_ns"]) * 1e-9 for r in csv.DictReader(f)}
    rtt.update(PAPER)
    speedups = np.logspace(0, 2, 60)  # raw speedup S: 1..100
    rates = np.logspace(2, 6, 60)  # services per second of the part's software time
    s_grid, n_grid = np.meshgrid(speedups, rates)
    fig, axes = plt.subplots(1, len(PATHS), figsize=(6 * len(PATHS), 5), sharey=True)
    for ax, (key, label) in zip(axes, PATHS):
        t = rtt.get(key, 0.0)
        effective = 1.0 / ((1 - FRACTION) + FRACTION / s_grid + FRACTION * n_grid * t)
        mesh = ax.pcolormesh(s_grid, n_grid, effective, shading="auto", vmin=0, vmax=1 / (1 - FRACTION))
        ax.contour(s_grid, n_grid, effective, levels=[1, 2, 5, 8], colors="white", linewidths=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("raw speedup S")
        ax.set_title(f"{label}: {t * 1e6:.2f} us per service")
        fig.colorbar(mesh, ax=ax, label="effective speedup")
    axes[0].set_ylabel("services per second of accelerated work")
    fig.suptitle(f"seed 004 Fig 4 with measured overheads: 1 / ((1-f) + f/S + f n t), f = {FRACTION}")
    fig.tight_layout()
    fig.savefig(out / "fastpath_fig4.png", dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
