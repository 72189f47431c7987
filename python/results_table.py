#!/usr/bin/env python3
"""Markdown tables of the figures' summary.json files (docs/results/thesis.md is built from these).

usage: results_table.py DIR...   (each DIR holds a summary.json and a figure.csv)
"""
import csv
import json
import os
import sys


def main():
    for d in sys.argv[1:]:
        s = json.load(open(os.path.join(d, "summary.json")))
        print(f"**Figure {s['figure']}** — {s['title']} ({s['seeds']} seeds x {s['reps']} reps, {s['runs']} runs, "
              f"{s['events'] / 1e6:.0f} M events, {s['events_per_second'] / 1e6:.1f} M events/s per thread, "
              f"{s['wall_seconds']:.1f} s wall)\n")
        print(f"Average normalised makespan {s['avg_normalized_makespan']:.3f}, average utilisation "
              f"{s['avg_utilization']:.3f}.\n")
        rows = list(csv.DictReader(open(os.path.join(d, "figure.csv"))))
        xs = sorted({float(r["speedup"]) for r in rows})
        metric = s["metric"]
        print("| series | avg | " + " | ".join(f"{x:g}x" for x in xs) + " |")
        print("|---|---|" + "---|" * len(xs))
        series = []
        for r in rows:
            if r["series"] not in series:
                series.append(r["series"])
        for name in series:
            vals = {float(r["speedup"]): float(r[metric]) for r in rows if r["series"] == name}
            avg = sum(vals.values()) / len(vals)
            print(f"| {name} | {avg:.3f} | " + " | ".join(f"{vals[x]:.3f}" for x in xs) + " |")
        print()


if __name__ == "__main__":
    main()
