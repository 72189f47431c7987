#!/usr/bin/env python3
"""Plots `tandem experiment jpeg` results (HybridOS's JPEG case study, seed 002 Fig 4).

Usage: python3 python/plot_jpeg.py DIR   (DIR holds results.csv, throughput.csv, summary.json)
Writes DIR/jpeg.png with four panels:
  (a) whole-program speedup of each configuration over plain cjpeg, per image;
  (b) where one block row's call goes for the largest image (Fig 4 style: fill, accelerator time as
      modelled, the rest of the call, read back), with libjpeg's own DCT of a row for comparison;
  (c) the share of plain cjpeg's time that is DCT + quantization, and the Amdahl bound it implies;
  (d) images per second with N processes at once: plain cjpeg, through one tandemd, an embedded runtime each.
"""
import csv
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ACCELERATED = ["emu_sw", "emu_hw", "emu_auto", "tandemd_emu_hw", "tandemd_emu_auto", "tandemd_emu_hw_spin",
               "tandemd_rtl_hw"]


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main(out_dir):
    out = Path(out_dir)
    res = rows(out / "results.csv")
    tput = rows(out / "throughput.csv")
    summary = json.loads((out / "summary.json").read_text())
    images = [i["image"] for i in summary["images"]]
    variants = [v for v in ACCELERATED if any(r["variant"] == v for r in res)]
    label = {r["variant"]: r["label"] for r in res}
    get = {(r["image"], r["variant"]): r for r in res}

    fig, axes = plt.subplots(2, 2, figsize=(15, 10))

    ax = axes[0][0]
    width = 0.8 / max(len(variants), 1)
    for k, v in enumerate(variants):
        xs = [i + k * width for i in range(len(images))]
        ax.bar(xs, [float(get[(im, v)]["speedup"]) for im in images], width, label=label[v])
    ax.axhline(1.0, color="black", lw=1)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(images))])
    ax.set_xticklabels(images)
    ax.set_ylabel("speedup over plain cjpeg (whole program)")
    ax.set_title("(a) cjpeg with libtandem_jpeg.so preloaded")
    ax.legend(fontsize=8)

    ax = axes[0][1]
    big = images[-1]
    parts = [("fill_us_per_row", "fill (gather samples)", "tab:blue"),
             ("device_us_per_row", "accelerator (modelled)", "tab:green"),
             ("rest_us_per_row", "rest of the call", "tab:orange"),
             ("read_us_per_row", "read back (check + copy)", "tab:purple")]
    names = [label[v] for v in variants]
    bottom = [0.0] * len(variants)
    for key, name, color in parts:
        vals = [max(float(get[(big, v)][key]), 0.0) for v in variants]
        ax.bar(names, vals, bottom=bottom, label=name, color=color)
        bottom = [b + x for b, x in zip(bottom, vals)]
    libjpeg = float(get[(big, "plain")]["libjpeg_us_per_row"])
    ax.axhline(libjpeg, color="black", ls="--", label=f"libjpeg-turbo's own DCT+quant of a row ({libjpeg:.1f} us)")
    ax.set_ylabel("us per block row (one dct_quant call)")
    ax.set_yscale("log")
    ax.set_title(f"(b) where a block row's call goes ({big})")
    ax.tick_params(axis="x", labelrotation=20, labelsize=8)
    ax.legend(fontsize=8)

    ax = axes[1][0]
    shares = [i["dct_share"] * 100 for i in summary["images"]]
    bounds = [i["amdahl_bound"] for i in summary["images"]]
    ax.bar(images, shares, color="tab:gray")
    ax.set_ylabel("DCT + quantization, % of plain cjpeg's time")
    ax2 = ax.twinx()
    ax2.plot(images, bounds, "o-", color="tab:red")
    ax2.set_ylabel("speedup bound with a free accelerator (Amdahl)", color="tab:red")
    ax.set_title("(c) how much of cjpeg an accelerator can take")

    ax = axes[1][1]
    n = [int(r["processes"]) for r in tput]
    ax.plot(n, [float(r["plain_images_per_s"]) for r in tput], "o-", label="plain cjpeg")
    ax.plot(n, [float(r["tandemd_images_per_s"]) for r in tput], "s-", label="preloaded, one tandemd (hw)")
    ax.plot(n, [float(r["embedded_images_per_s"]) for r in tput], "^-", label="preloaded, embedded runtime each (hw)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("cjpeg processes at once")
    ax.set_ylabel(f"images per second ({summary['throughput_image']})")
    ax.set_title(f"(d) aggregate throughput, {summary['cpus_online']} CPUs")
    ax.legend(fontsize=8)

    fig.tight_layout()
    fig.savefig(out / "jpeg.png", dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
