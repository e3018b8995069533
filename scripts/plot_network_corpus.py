#!/usr/bin/env python3
"""Predicted against measured collective time for every corpus row (docs/network-model.md).

Runs `lgreco net validate tests/data/network --holdout --format json` (each system predicted by constants
fitted without it) and the same without --holdout (the shipped presets), and draws both log-log, one
colour per system, with the +-20 % band of the >= 1 MiB bar.

usage: scripts/plot_network_corpus.py [--lgreco build/tools/lgreco] [-o docs/network-corpus.png]
"""
import argparse
import json
import pathlib
import subprocess

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]


def rows(lgreco, holdout):
    args = [lgreco, "net", "validate", str(REPO / "tests" / "data" / "network"), "--format", "json"]
    return json.loads(subprocess.run(args + (["--holdout"] if holdout else []), check=True, capture_output=True, text=True).stdout)


def panel(ax, doc, title):
    systems = sorted({r["system"] for r in doc["rows"]})
    cmap = plt.get_cmap("tab20")
    markers = "os^Dv"
    for i, s in enumerate(systems):
        pts = [r for r in doc["rows"] if r["system"] == s]
        ax.scatter([r["measured_us"] for r in pts], [r["predicted_us"] for r in pts], s=9, color=cmap(i % 20),
                   marker=markers[(i // 20 + i) % len(markers)], label=s, alpha=0.8)
    lo, hi = 3, 2e6
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    ax.fill_between([lo, hi], [0.8 * lo, 0.8 * hi], [1.2 * lo, 1.2 * hi], color="grey", alpha=0.2, lw=0, label="+-20 %")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured time (us)")
    ax.set_ylabel("predicted time (us)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", lw=0.3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lgreco", default=str(REPO / "build" / "tools" / "lgreco"))
    ap.add_argument("-o", "--output", default=str(REPO / "docs" / "network-corpus.png"))
    a = ap.parse_args()
    fig, axes = plt.subplots(1, 2, figsize=(12, 6))
    panel(axes[0], rows(a.lgreco, True), "held out: each system predicted by constants fitted without it")
    panel(axes[1], rows(a.lgreco, False), "shipped presets (constants fitted on the whole corpus)")
    axes[1].legend(fontsize=6, loc="upper left", ncol=2)
    fig.tight_layout()
    fig.savefig(a.output, dpi=90)
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
