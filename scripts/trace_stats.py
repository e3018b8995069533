#!/usr/bin/env python3
"""Per-layer statistics of a gradient trace (docs/trace-format.md): the ones that decide what
layer-wise compression can gain. Used to measure real traces, to set the defaults of
`lgreco trace synth` and to check them (docs/synthetic-traces.md).

    /usr/bin/python3 scripts/trace_stats.py TRACE.h5 [TRACE2.h5 ...] [--json out.json] [--layers]
        [--max-steps 12] [--rank 4] [--max-numel N] [--markdown [--labels A,B,...]]

Every tensor is viewed as PowerSGD views it: n = shape[0] rows, m = numel / n columns. A matrix is
"compressible" when PowerSGD at rank r sends fewer elements than the dense gradient at the default
minimum compression rate 2: (n + m) · min(n, m, r) · 2 < n · m (sim/replay_candidates.hpp).

Layer classes (the same rule as traces/synth.cpp, `classify_layers`):
  norm, bias, embedding  the trace's `kind`;
  conv                   weights with ≥ 3 dimensions;
  head                   the last weight matrix in parameter order when its module is called head,
                         lm_head, fc, linear or classifier (the output layer);
  attention              weight matrices of attention (names with attn, attention, qkv, query, key,
                         value, q/k/v/o_proj, in_proj, out_proj, qkv_net, o_net, r_net, or a module
                         called proj);
  linear                 every other weight matrix (MLP, pooler, projections).
Depth f = i / (N − 1) for tensor i of N in parameter order.

Per layer, over the analysed steps (the first --max-steps of the trace):
  rms            ‖G‖_F / sqrt(numel), root of the mean square over steps;
  rel_rms        rms / the median rms of the compressible matrices of the same trace (scale-free);
  E_k            energy in the top k singular values, Σ_{i<k} σ_i² / Σ σ_i², k = 1, r, 2r
                 (1 − E_k: squared relative error of the best rank-k approximation);
  decay          α of a least-squares fit log σ_i = c − α · log(i + 1), i < min(32, p/2), p = min(n, m);
  stable_rank    Σ σ_i² / σ_0²;
  corr1          cos(G_t, G_{t+1}) for consecutive step ids, mean;
  sub_left/right ‖U_tᵀ U_{t+1}‖²_F / r for the top-r left (right) singular vectors of consecutive
                 steps (1: same subspace, r/n: unrelated), mean;
  norm_cv        coefficient of variation of ‖G_t‖_F over the analysed steps;
  kurtosis       E[x⁴] / E[x²]² of the entries (3 for a Gaussian), mean over steps;
  max_to_rms     max |x| / rms of the entries, mean over steps; max_z = max_to_rms / sqrt(2 ln numel)
                 (about 1 for Gaussian entries, whatever the size).
Summary: the same statistics by class (median and count) and, for compressible conv / attention /
linear matrices, by depth third; the depth slope of log10 rms of those matrices and the exponent γ
of ‖G‖_F ∝ numel^γ across them; percentiles over compressible matrices.
Singular values come from the eigenvalues of the Gram matrix of the smaller side (float64).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys

import h5py
import numpy as np

FIT_MAX = 32  # ranks used by the decay fit (fewer for small matrices: p/2)
CLASSES = ("conv", "attention", "linear", "head", "embedding", "norm", "bias")
MATRIX_CLASSES = ("conv", "attention", "linear")
HEAD_NAMES = ("head", "lm_head", "fc", "linear", "classifier")
ATTENTION = re.compile(r"attn|attention|qkv|query|key|value|(^|[._])[qkvo]_proj|in_proj|out_proj|o_net|r_net"
                       r"|(^|\.)proj\.weight$")


def matrix_view(shape):
    n = int(shape[0])
    return n, int(np.prod(shape)) // n


def compressible(shape, rank: int) -> bool:
    if len(shape) < 2:
        return False
    n, m = matrix_view(shape)
    return (n + m) * min(n, m, rank) * 2 < n * m


def classify_layers(layers) -> list:
    """layers: [(name, shape, kind)] in parameter order → class of each (module docstring)."""
    out = []
    last_matrix = max((i for i, (_, s, k) in enumerate(layers) if k == "weight" and len(s) == 2), default=-1)
    for i, (name, shape, kind) in enumerate(layers):
        if kind in ("norm", "bias", "embedding"):
            out.append(kind)
        elif len(shape) >= 3:
            out.append("conv")
        elif len(shape) == 2 and i == last_matrix and name.rsplit(".weight", 1)[0].split(".")[-1] in HEAD_NAMES:
            out.append("head")
        elif len(shape) == 2 and ATTENTION.search(name):
            out.append("attention")
        elif len(shape) == 2:
            out.append("linear")
        else:
            out.append("bias")  # a 1-D "weight" (a scale vector)
    return out


def decay_exponent(s: np.ndarray) -> float:
    k = min(FIT_MAX, len(s) // 2)
    if k < 4 or s[0] <= 0:
        return float("nan")
    i = np.arange(k)
    y = np.log(np.maximum(s[:k], s[0] * 1e-12))
    return float(-np.polyfit(np.log(i + 1.0), y, 1)[0])


def spectrum(g: np.ndarray, rank: int):
    """Singular values (descending) and top-`rank` left and right singular vectors of g [n, m]."""
    n, m = g.shape
    small_left = n <= m
    gram = g @ g.T if small_left else g.T @ g
    w, vecs = np.linalg.eigh(gram)
    w, vecs = np.maximum(w[::-1], 0.0), vecs[:, ::-1]
    s = np.sqrt(w)
    r = min(rank, len(s))
    top = vecs[:, :r]
    inv = np.where(s[:r] > s[0] * 1e-9, 1.0 / np.maximum(s[:r], 1e-300), 0.0)
    other = (g.T @ top if small_left else g @ top) * inv
    return (s, top, other) if small_left else (s, other, top)


def mean(v):
    v = [x for x in v if x is not None and np.isfinite(x)]
    return float(np.mean(v)) if v else float("nan")


def layer_stats(grads: np.ndarray, steps: np.ndarray, shape, rank: int, max_numel: int) -> dict:
    """grads: float32 [T, numel]."""
    T, numel = grads.shape
    n, m = matrix_view(shape)
    ms, kurt, mx, norms = [], [], [], []
    for t in range(T):
        x = grads[t].astype(np.float64)
        x2 = x * x
        m2 = float(np.mean(x2))
        ms.append(m2)
        norms.append(math.sqrt(m2 * numel))
        if m2 > 0:
            kurt.append(float(np.mean(x2 * x2)) / (m2 * m2))
            mx.append(float(np.sqrt(np.max(x2) / m2)))
    rms = math.sqrt(float(np.mean(ms))) if ms else float("nan")
    out = {"n": n, "m": m, "rms": rms, "kurtosis": mean(kurt), "max_to_rms": mean(mx)}
    out["max_z"] = out["max_to_rms"] / math.sqrt(2 * math.log(numel)) if numel > 1 else float("nan")
    out["norm_cv"] = float(np.std(norms) / np.mean(norms)) if len(norms) > 1 and np.mean(norms) > 0 else float("nan")
    cors = []
    for t in range(T - 1):
        if steps[t + 1] != steps[t] + 1:
            continue
        a, b = grads[t].astype(np.float64), grads[t + 1].astype(np.float64)
        den = math.sqrt(float(a @ a) * float(b @ b))
        if den > 0:
            cors.append(float(a @ b) / den)
    out["corr1"] = mean(cors)
    out["compressible"] = compressible(shape, rank)
    if len(shape) < 2 or min(n, m) < 2 or numel > max_numel:
        return out
    energies = {1: [], rank: [], 2 * rank: []}
    decays, stable, sub_l, sub_r = [], [], [], []
    prev = None
    for t in range(T):
        s, ul, ur = spectrum(grads[t].reshape(n, m).astype(np.float64), rank)
        tot = float(np.sum(s * s))
        if tot <= 0:
            prev = None
            continue
        for kk in energies:
            energies[kk].append(float(np.sum(s[:kk] ** 2)) / tot)
        decays.append(decay_exponent(s))
        stable.append(tot / float(s[0] ** 2))
        if prev is not None and steps[t] == steps[t - 1] + 1:
            sub_l.append(float(np.sum((prev[0].T @ ul) ** 2)) / ul.shape[1])
            sub_r.append(float(np.sum((prev[1].T @ ur) ** 2)) / ur.shape[1])
        prev = (ul, ur)
    for kk, v in energies.items():
        out[f"E{kk}"] = mean(v)
    out.update(decay=mean(decays), stable_rank=mean(stable), sub_left=mean(sub_l), sub_right=mean(sub_r))
    return out


def read_grads(g, max_steps: int) -> np.ndarray:
    dtype = g.attrs["dtype"]
    dtype = dtype.decode() if isinstance(dtype, bytes) else str(dtype)
    raw = g["grad"][:max_steps]
    if dtype == "bfloat16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    return raw.astype(np.float32)


def text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def analyse(path: str, max_steps: int = 12, rank: int = 4, max_numel: int = 1 << 26) -> dict:
    rows = []
    with h5py.File(path, "r") as f:
        steps = f["steps"][:max_steps]
        model = text(f.attrs.get("model", ""))
        names = sorted(f["layers"])
        specs = [(text(f["layers"][k].attrs["name"]), [int(x) for x in f["layers"][k].attrs["shape"]],
                  text(f["layers"][k].attrs["kind"])) for k in names]
        classes = classify_layers(specs)
        for i, (gname, (name, shape, kind)) in enumerate(zip(names, specs)):
            r = layer_stats(read_grads(f["layers"][gname], max_steps), steps, shape, rank, max_numel)
            r.update(index=i, name=name, shape=shape, kind=kind, cls=classes[i],
                     depth=i / (len(names) - 1) if len(names) > 1 else 1.0)
            rows.append(r)
    comp = [r for r in rows if r["compressible"]]
    med = float(np.median([r["rms"] for r in comp])) if comp else float("nan")
    for r in rows:
        r["rel_rms"] = r["rms"] / med if med > 0 else float("nan")
    return {"trace": path, "model": model, "steps": [int(s) for s in steps], "rank": rank, "layers": rows,
            "summary": summarise(rows, rank)}


def stat_keys(rank: int):
    return ["rel_rms", "E1", f"E{rank}", f"E{2 * rank}", "decay", "stable_rank", "corr1", "sub_left", "sub_right",
            "norm_cv", "kurtosis", "max_z"]


def pct(values, q):
    v = [x for x in values if x is not None and np.isfinite(x)]
    return float(np.percentile(v, q)) if v else float("nan")


def medians(rows, keys) -> dict:
    d = {k: pct([r.get(k) for r in rows], 50) for k in keys}
    d["count"] = len(rows)
    return d


def summarise(rows, rank) -> dict:
    keys = stat_keys(rank)
    comp = [r for r in rows if r["compressible"]]
    s = {"layers": len(rows), "compressible": len(comp), "percentiles": {}}
    for k in keys:
        vals = [r.get(k) for r in comp]
        s["percentiles"][k] = {"p10": pct(vals, 10), "median": pct(vals, 50), "p90": pct(vals, 90)}
    s["by_class"] = {c: medians([r for r in rows if r["cls"] == c], keys) for c in CLASSES
                     if any(r["cls"] == c for r in rows)}
    body = [r for r in comp if r["cls"] in MATRIX_CLASSES and r["rms"] > 0]
    s["by_depth"] = {}
    for name, lo, hi in (("early", 0.0, 1 / 3), ("middle", 1 / 3, 2 / 3), ("late", 2 / 3, 1.01)):
        part = [r for r in body if lo <= r["depth"] < hi]
        if part:
            s["by_depth"][name] = medians(part, keys)
    if len(body) >= 3:
        s["log10_rms_depth_slope"] = float(np.polyfit([r["depth"] for r in body],
                                                      [math.log10(r["rel_rms"]) for r in body], 1)[0])
        s["frobenius_numel_exponent"] = float(np.polyfit([math.log(r["n"] * r["m"]) for r in body],
                                                         [math.log(r["rms"] * math.sqrt(r["n"] * r["m"])) for r in body],
                                                         1)[0])
        s["log10_frobenius_sd"] = float(np.std([math.log10(r["rms"] * math.sqrt(r["n"] * r["m"])) for r in body]))
    return s


def fmt(x, digits=3):
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    return f"{x:.{digits}g}"


def print_report(res, show_layers: bool):
    s, rank = res["summary"], res["rank"]
    keys = stat_keys(rank)
    print(f"== {res['trace']} (model {res['model']}, {len(res['steps'])} steps analysed, "
          f"{s['compressible']} of {s['layers']} tensors compressible at rank {rank})")
    if show_layers:
        print(f"  {'name':<36} {'class':>9} {'n':>6} {'m':>6} " + " ".join(f"{k:>8}" for k in keys))
        for r in res["layers"]:
            print(("*" if r["compressible"] else " ") + f" {r['name'][:36]:<36} {r['cls']:>9} {r['n']:>6} {r['m']:>6} "
                  + " ".join(f"{fmt(r.get(k)):>8}" for k in keys))
    print(f"  {'by class':<16} {'count':>5} " + " ".join(f"{k:>8}" for k in keys))
    for c, d in s["by_class"].items():
        print(f"  {c:<16} {d['count']:>5} " + " ".join(f"{fmt(d[k]):>8}" for k in keys))
    for c, d in s["by_depth"].items():
        print(f"  {'matrices ' + c:<16} {d['count']:>5} " + " ".join(f"{fmt(d[k]):>8}" for k in keys))
    print(f"  compressible matrices: depth slope of log10 rms {fmt(s.get('log10_rms_depth_slope'))}, "
          f"‖G‖_F ∝ numel^{fmt(s.get('frobenius_numel_exponent'))}, sd of log10 ‖G‖_F {fmt(s.get('log10_frobenius_sd'))}")


ROW_ORDER = list(CLASSES) + ["matrices early", "matrices middle", "matrices late"]
SCALARS = (("log10_rms_depth_slope", "depth slope of log10 rms (compressible conv/attention/linear)"),
           ("frobenius_numel_exponent", "γ in ‖G‖_F ∝ numel^γ (same matrices)"))


def markdown_tables(results, labels) -> str:
    """One table per statistic: rows are classes and depth thirds, columns the traces."""
    keys = stat_keys(results[0]["rank"])
    out = []
    head = "| | " + " | ".join(labels) + " |\n|---|" + "---|" * len(labels)
    for k in keys:
        rows = []
        for row in ROW_ORDER:
            cells = []
            for res in results:
                s = res["summary"]
                d = s["by_class"].get(row) if not row.startswith("matrices") else s["by_depth"].get(row.split()[1])
                cells.append(fmt(d[k]) if d else "")
            if any(c not in ("", "–") for c in cells):
                rows.append(f"| {row} | " + " | ".join(cells) + " |")
        if rows:
            out.append(f"**{k}**\n\n{head}\n" + "\n".join(rows) + "\n")
    out.append("**per trace**\n\n" + head + "\n" + "\n".join(
        f"| {title} | " + " | ".join(fmt(res["summary"].get(key)) for res in results) + " |" for key, title in SCALARS) + "\n")
    return "\n".join(out)


def finite(x):
    """NaN and ±Inf → None, so that the JSON is standard."""
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [finite(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--json", help="write all results here")
    ap.add_argument("--layers", action="store_true", help="print the per-layer table")
    ap.add_argument("--max-steps", type=int, default=12, help="analyse the first N recorded steps (default 12)")
    ap.add_argument("--rank", type=int, default=4, help="PowerSGD default rank r (default 4)")
    ap.add_argument("--max-numel", type=int, default=1 << 26, help="skip the spectra of larger tensors")
    ap.add_argument("--markdown", action="store_true",
                    help="print one Markdown table per statistic with a column per trace instead")
    ap.add_argument("--labels", help="comma-separated column titles for --markdown (default: the file names)")
    args = ap.parse_args(argv)
    results = [analyse(p, args.max_steps, args.rank, args.max_numel) for p in args.traces]
    if args.markdown:
        labels = args.labels.split(",") if args.labels else [r["trace"].rsplit("/", 1)[-1] for r in results]
        if len(labels) != len(results):
            ap.error(f"--labels has {len(labels)} titles for {len(results)} traces")
        print(markdown_tables(results, labels))
    else:
        for r in results:
            print_report(r, args.layers)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(finite(results), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
