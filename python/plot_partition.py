#!/usr/bin/env python3
"""Plots `tandem experiment partition` results like thesis Fig 4.10.

Usage: python3 python/plot_partition.py DIR   (DIR holds results.csv, nl_grid.csv, summary.json)
Writes DIR/partition.png with three panels:
  (a) completion time against workload, log-log: SW-only, HW-only, the model's choice (measured),
      the model's prediction, and the empirical optimum of the alpha sweep;
  (b) around N_L, linear: SW-only and the best partitioned call on the fine grid, the lines fitted
      to them, and N_L predicted and empirical;
  (c) the hardware share: the model's alpha against the empirical optimum's.
"""
import csv
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    with open(path, newline="") as f:
        return [{k: float(v) if v not in ("",) else float("nan") for k, v in r.items()} for r in csv.DictReader(f)]


def main(out_dir):
    out = Path(out_dir)
    res = rows(out / "results.csv")
    grid = rows(out / "nl_grid.csv")
    summary = json.loads((out / "summary.json").read_text())
    units = summary.get("units", "bytes")
    unit = "B" if units == "bytes" else units

    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    size = [r["size"] for r in res]
    us = lambda key: [r[key] / 1000.0 for r in res]  # noqa: E731

    ax = axes[0]
    ax.plot(size, us("sw_ns"), "o-", color="tab:blue", ms=3, label="SW-only (alpha = 0)")
    ax.plot(size, us("hw_ns"), "s-", color="tab:red", ms=3, label="HW-only (alpha = 1)")
    ax.plot(size, us("opt_ns"), "-", color="black", lw=2.5, alpha=0.35, label="empirical optimum (alpha sweep)")
    ax.plot(size, us("model_ns"), "^-", color="tab:green", ms=3, label="model's alpha (measured)")
    ax.plot(size, us("predicted_ns"), "--", color="tab:green", label="model's prediction")
    ax.axvline(summary["nl_predicted_bytes"], color="tab:green", ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(f"workload N ({unit})")
    ax.set_ylabel("completion time (us)")
    ax.set_title(f"(a) {summary['function']}: completion time")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)

    ax = axes[1]
    gs = [r["size"] for r in grid]
    ax.plot(gs, [r["sw_ns"] / 1000 for r in grid], "o", color="tab:blue", ms=4, label="SW-only")
    ax.plot(gs, [r["best_partitioned_ns"] / 1000 for r in grid], "^", color="tab:purple", ms=4,
            label="best partitioned split")
    fits = summary["fits"]
    xs = [min(gs), max(gs)]
    ax.plot(xs, [(fits["sw_intercept_ns"] + fits["sw_slope_ns_per_unit"] * x) / 1000 for x in xs], "-",
            color="tab:blue", lw=1)
    ax.plot(xs, [(fits["partitioned_intercept_ns"] + fits["partitioned_slope_ns_per_unit"] * x) / 1000 for x in xs],
            "-", color="tab:purple", lw=1)
    ax.axvline(summary["nl_predicted_bytes"], color="tab:green", ls="--",
               label=f"N_L predicted {summary['nl_predicted_bytes']:.0f} {unit}")
    ax.axvline(summary["nl_empirical_bytes"], color="black", ls=":",
               label=f"N_L empirical {summary['nl_empirical_bytes']:.0f} {unit}")
    ax.set_xlabel(f"workload N ({unit})")
    ax.set_ylabel("completion time (us)")
    ax.set_title(f"(b) the crossover: {100 * summary['nl_relative_error']:.1f}% apart")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)

    ax = axes[2]
    ax.plot(size, [r["opt_alpha"] for r in res], "o", color="black", ms=4, label="empirical optimum")
    ax.plot(size, [r["model_alpha"] for r in res], "^-", color="tab:green", ms=3, label="model (Eq 4.4 after Eq 4.8)")
    ax.set_xscale("log", base=2)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(f"workload N ({unit})")
    ax.set_ylabel("alpha (share for the accelerator)")
    ax.set_title(f"(c) split: mean gap {100 * summary['mean_gap_to_optimum']:.2f}%, "
                 f"prediction MRE {100 * summary['prediction_mre']:.1f}%")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)

    fig.tight_layout()
    fig.savefig(out / "partition.png", dpi=120)
    print(f"wrote {out / 'partition.png'}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
