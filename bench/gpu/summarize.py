#!/usr/bin/env python3
"""Summarises a GPU check (scripts/gpu-check.sh): reads RESULTS/bench.json, RESULTS/torch_topk.json
and the step exit codes, checks the performance goals and writes RESULTS/summary.txt and
RESULTS/summary.json. Standard library only.

Goals (docs/performance.md):
  quantisation: compress input GB/s (4n/t) >= 0.70 x the device-to-device copy bandwidth (8n/t_copy)
                at the largest size, for maxmin, qsgd, nuqsgd, sign, terngrad;
  top-k:        our exact top-k (select + gather of the values) no slower than torch.topk on the same
                n and k (prepared |x|, sorted=False) at the largest size.
Usage: summarize.py --results DIR --steps "configure=0 build=0 tests=0 bench=0 torch=0"
"""
import argparse
import datetime
import json
import os
import sys

QUANT = ["maxmin", "qsgd", "nuqsgd", "sign", "terngrad"]
QUANT_GOAL = 0.70


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"_error": f"{path}: {e}"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--steps", default="")
    a = ap.parse_args()
    steps = dict(kv.split("=", 1) for kv in a.steps.split() if "=" in kv)
    bench = load(os.path.join(a.results, "bench.json"))
    torch = load(os.path.join(a.results, "torch_topk.json"))
    lines, goals = [], {}
    lines.append("lgreco GPU check — " + datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    lines.append("steps (exit codes): " + ", ".join(f"{k}={v}" for k, v in steps.items()))
    ctx = bench.get("context", {})
    lines.append(f"device: {ctx.get('device', '?')}, CUDA runtime {ctx.get('cuda_runtime', '?')}, git {ctx.get('git_sha', '?')}")
    if "_error" in bench:
        lines.append("benchmark: " + bench["_error"])
    else:
        copy = {p["n"]: p for p in bench.get("copy", [])}
        nmax = max(copy) if copy else None
        if nmax:
            lines.append(f"device copy at n={nmax}: {copy[nmax]['copy_bandwidth_GBps']:.0f} GB/s (read+write)")
        lines.append("")
        lines.append(f"{'method':<10}{'valid':>6}{'n':>11}{'compress GB/s':>15}{'x copy':>8}{'roundtrip GB/s':>16}")
        for name, m in bench.get("methods", {}).items():
            pts = m.get("points", [])
            if not pts:
                lines.append(f"{name:<10}{str(m.get('valid')):>6}  {m.get('error', 'no points')}")
                continue
            p = pts[-1]
            lines.append(f"{name:<10}{str(m.get('valid')):>6}{p['n']:>11}{p['compress_input_GBps']:>15.1f}"
                         f"{p['fraction_of_copy']:>8.2f}{p['roundtrip_input_GBps']:>16.1f}")
            if name in QUANT:
                ok = bool(m.get("valid")) and p["fraction_of_copy"] >= QUANT_GOAL
                goals[f"quantisation {name} >= {QUANT_GOAL} x copy"] = {"pass": ok, "n": p["n"],
                                                                        "fraction_of_copy": p["fraction_of_copy"]}
        tk = {p["n"]: p for p in bench.get("methods", {}).get("topk", {}).get("points", [])}
        if "_error" in torch or not torch.get("points"):
            lines.append("torch.topk: " + torch.get("_error", "no points"))
        else:
            lines.append("")
            lines.append(f"{'n':>11}{'k':>9}{'lgreco top-k us':>17}{'torch prepared us':>19}{'torch with abs us':>19}")
            last = None
            for p in torch["points"]:
                ours = tk.get(p["n"])
                if not ours:
                    continue
                lines.append(f"{p['n']:>11}{p['k']:>9}{ours['compress_us']:>17.1f}{p['topk_prepared_us']:>19.1f}"
                             f"{p['topk_abs_us']:>19.1f}")
                last = (p, ours)
            if last:
                p, ours = last
                goals["top-k no slower than torch.topk"] = {"pass": ours["compress_us"] <= p["topk_prepared_us"],
                                                            "n": p["n"], "lgreco_us": ours["compress_us"],
                                                            "torch_prepared_us": p["topk_prepared_us"],
                                                            "torch_with_abs_us": p["topk_abs_us"]}
    lines.append("")
    for g, v in goals.items():
        lines.append(f"goal {'PASS' if v['pass'] else 'MISS'}: {g} ({json.dumps({k: x for k, x in v.items() if k != 'pass'})})")
    ok_steps = all(v == "0" for k, v in steps.items() if k in ("configure", "build", "tests", "bench"))
    lines.append(f"overall: {'OK' if ok_steps else 'FAILED'} (tests and benchmark validation; goals are reported, not enforced)")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.results, "summary.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(a.results, "summary.json"), "w") as f:
        json.dump({"schema_version": 1, "kind": "lgreco-gpu-check", "steps": steps, "goals": goals,
                   "context": ctx, "ok": ok_steps}, f, indent=1)
    sys.stdout.write(text)
    return 0 if ok_steps else 1


if __name__ == "__main__":
    sys.exit(main())
