#!/usr/bin/python3
"""Plots an `lgreco whatif --format json` result: speedup over uncompressed against bandwidth.

Top panel: one line per (node count, schedule): uniform dashed, adaptive solid, same colour per node
count; where the points carry adaptive_speedup_range_p80 (predictions with the presets), a shaded band
around the adaptive line: its speedup with the network times off by their class's 80 % held-out factor,
either way (docs/network-model.md, 'Expected error of a prediction'). Bottom panel (when the points carry both step times): the adaptive schedule's gain over the
uniform one, uniform_step_s / adaptive_step_s, per node count.
Usage: whatif_plot.py WHATIF.json OUT.png [--title TEXT]
Writes OUT.png atomically (temporary file + rename); exits 1 with a message on bad input.
"""
import argparse
import json
import os
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("kind") != "lgreco-whatif":
        raise ValueError(f"{path}: kind is {doc.get('kind')!r}, expected 'lgreco-whatif'")
    points = doc.get("points")
    if not isinstance(points, list) or not points:
        raise ValueError(f"{path}: no points")
    for i, p in enumerate(points):
        for key in ("bandwidth_Gbps", "nodes", "uniform_speedup", "adaptive_speedup"):
            if key not in p:
                raise ValueError(f"{path}: points[{i}] lacks {key!r}")
    return doc


def plot(doc, out, title=None):
    by_nodes = {}
    for p in doc["points"]:
        by_nodes.setdefault(p["nodes"], []).append(p)
    gain = all(p.get("uniform_step_s", 0) > 0 and p.get("adaptive_step_s", 0) > 0 for p in doc["points"])
    if gain:
        fig, (ax, gx) = plt.subplots(2, 1, figsize=(7.5, 7.2), dpi=110, sharex=True,
                                     gridspec_kw={"height_ratios": [3, 2]})
    else:
        fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (nodes, pts) in enumerate(sorted(by_nodes.items())):
        pts.sort(key=lambda p: p["bandwidth_Gbps"])
        bw = [p["bandwidth_Gbps"] for p in pts]
        c = colours[i % len(colours)]
        ranks = pts[0].get("ranks", "?")
        ax.plot(bw, [p["adaptive_speedup"] for p in pts], "-o", color=c, ms=3,
                label=f"{nodes} node(s), {ranks} GPUs: adaptive")
        ranges = [p.get("adaptive_speedup_range_p80") for p in pts]
        if all(isinstance(r, list) and len(r) == 2 for r in ranges):
            ax.fill_between(bw, [r[0] for r in ranges], [r[1] for r in ranges], color=c, alpha=0.15, lw=0,
                            label="shaded: adaptive, network times off by the 80 % held-out factor" if i == 0 else None)
        ax.plot(bw, [p["uniform_speedup"] for p in pts], "--", color=c, alpha=0.7,
                label=f"{nodes} node(s): uniform")
        if gain:
            gx.plot(bw, [p["uniform_step_s"] / p["adaptive_step_s"] for p in pts], "-o", color=c, ms=3,
                    label=f"{nodes} node(s)")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_ylabel("speedup over uncompressed (×)")
    fam = doc.get("family", "?")
    ax.set_title(title or f"{doc.get('model', '?')}: {fam}, engine {doc.get('engine', '?')}, {doc.get('cluster', '')}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    if gain:
        gx.axhline(1.0, color="grey", lw=0.8)
        gx.set_ylabel("adaptive gain over uniform\n(uniform / adaptive step time)")
        gx.grid(True, which="both", alpha=0.3)
        gx.legend(fontsize=7, ncol=4)
        gx.set_xlabel("inter-node bandwidth per node (Gb/s)")
    else:
        ax.set_xlabel("inter-node bandwidth per node (Gb/s)")
    fig.tight_layout()
    folder = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(out) + ".tmp.", suffix=".png", dir=folder)
    os.close(fd)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)  # as open() would create it, not mkstemp's 0600
    try:
        fig.savefig(tmp, format="png")
        # mkstemp creates the file private (0600); the plot gets a plain file's mode like every
        # other lgreco output (0666 minus the umask).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise
    finally:
        plt.close(fig)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("whatif_json")
    ap.add_argument("out_png")
    ap.add_argument("--title")
    a = ap.parse_args(argv)
    try:
        plot(load(a.whatif_json), a.out_png, a.title)
    except (OSError, ValueError) as e:
        print(f"whatif_plot: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
