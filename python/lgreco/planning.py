"""A small trace-driven PowerSGD rank planner in Python (the L-GreCo rule), for jobs and tests
that need a per-layer schedule without the C++ `lgreco plan`.

Per compressible layer (at the default rank r): A = mean of the last `acc` recorded gradients of
the last burst; candidates k ∈ [⌊γ·r⌋, ⌈β·r⌉] (k ≥ 1 unless r = 1); error e(k) = sqrt(Σ_{i>k} σ_i²)
(exact, from singular values); bytes = the wire-byte contract of PowerSGD rank k (a rank that makes
the layer incompressible sends 4N bytes and has error 0). Choose one k per layer minimising Σ bytes
subject to Σ e ≤ α·Σ e(r): a multiple-choice knapsack solved by DP over `bins` error buckets
(errors rounded up, so the plan never exceeds the budget). Layers that are incompressible at r stay
"none". No error feedback is simulated here (the trace holds raw local gradients).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .methods import parse_method, wire, wire_bytes
from .schedule import make_schedule
from .trace import read_trace


def _psgd(rank: int, mcr: float = 2) -> Dict[str, Any]:
    return {"method": "powersgd", "params": {"rank": rank, "min_compression_rate": mcr}}


def candidate_table(trace: Dict[str, Any], rank: int, gamma: float = 0.5, beta: float = 2.0,
                    acc: int = 10) -> List[Dict[str, Any]]:
    """Per layer: name, shape, and candidates [(k, error, bytes)] (empty when not planned)."""
    steps = np.asarray(trace["steps"])
    # last burst = the trailing run of consecutive step ids
    start = len(steps) - 1
    while start > 0 and steps[start - 1] == steps[start] - 1:
        start -= 1
    lo = max(start, len(steps) - acc)
    rows = []
    for layer in trace["layers"]:
        shape = layer["shape"]
        view = wire(parse_method(_psgd(rank)), shape)["view"]
        comp, n, m = view["compressed"], view["n"], view["m"]
        cands: List[Tuple[int, float, int]] = []
        if comp:
            a = layer["grad"][lo:].astype(np.float64).mean(axis=0).reshape(n, m)
            sv = np.linalg.svd(a, compute_uv=False)
            tail = np.concatenate([np.sqrt(np.cumsum((sv ** 2)[::-1])[::-1]), [0.0]])
            kmin = max(math.floor(gamma * rank), 0 if rank == 1 else 1)
            for k in range(kmin, math.ceil(beta * rank) + 1):
                meth = parse_method(_psgd(k))
                kv = wire(meth, shape)["view"]
                c, keff = kv["compressed"], kv["rank"]
                err = float(tail[min(keff, len(sv))]) if c else 0.0
                cands.append((k, err, wire_bytes(meth, shape)))
        rows.append({"name": layer["name"], "shape": shape, "candidates": cands})
    return rows


def knapsack(errors: Sequence[Sequence[float]], sizes: Sequence[Sequence[int]], budget: float,
             bins: int = 2000) -> Optional[List[int]]:
    """Index per layer minimising Σ size with Σ ⌈e/w⌉ ≤ bins (w = budget/bins); None if infeasible."""
    if budget <= 0:
        choice = []
        for e, s in zip(errors, sizes):
            ok = [j for j in range(len(e)) if e[j] <= 0]
            if not ok:
                return None
            choice.append(min(ok, key=lambda j: (s[j], j)))
        return choice
    w = budget / bins
    inf = float("inf")
    best = np.zeros(bins + 1)
    parents = []
    for e, s in zip(errors, sizes):
        nxt = np.full(bins + 1, inf)
        par = np.full(bins + 1, -1, dtype=np.int64)
        for j, (ej, sj) in enumerate(zip(e, s)):
            q = int(math.ceil(ej / w - 1e-12)) if ej > 0 else 0
            if q > bins:
                continue
            cand = np.full(bins + 1, inf)
            cand[q:] = best[: bins + 1 - q] + sj
            better = cand < nxt
            nxt[better] = cand[better]
            par[better] = j
        parents.append(par)
        best = nxt
    if not np.isfinite(best[bins]):
        return None
    # walk back: best[b] = min size with discretised error ≤ b
    choice, b = [], bins
    for e, par in zip(reversed(errors), reversed(parents)):
        j = int(par[b])
        choice.append(j)
        q = int(math.ceil(e[j] / w - 1e-12)) if e[j] > 0 else 0
        b -= q
    return choice[::-1]


def plan_powersgd(trace_path: str, rank: int = 4, warmup: int = 0, alpha: float = 1.0,
                  gamma: float = 0.5, beta: float = 2.0, acc: int = 10, world_size: Optional[int] = None,
                  uniform: bool = False) -> Dict[str, Any]:
    """Schedule: [0, warmup) uncompressed, then the per-layer plan (or uniform rank r if uniform)."""
    tr = read_trace(trace_path)
    table = candidate_table(tr, rank, gamma, beta, acc)
    shapes = {row["name"]: row["shape"] for row in table}
    planned = [row for row in table if row["candidates"]]
    uni_err = 0.0
    for row in planned:
        uni_err += next(e for k, e, _ in row["candidates"] if k == rank)
    if uniform:
        pick = {row["name"]: rank for row in planned}
        total = uni_err
    else:
        choice = knapsack([[c[1] for c in r["candidates"]] for r in planned],
                          [[c[2] for c in r["candidates"]] for r in planned], alpha * uni_err)
        if choice is None:
            raise ValueError(f"trace {trace_path}: no plan within error budget {alpha * uni_err}")
        pick = {r["name"]: r["candidates"][j][0] for r, j in zip(planned, choice)}
        total = sum(r["candidates"][j][1] for r, j in zip(planned, choice))
    uni_layers = {n: (_psgd(rank) if any(r["name"] == n for r in planned) else {"method": "none"})
                  for n in shapes}
    layers = {n: (_psgd(pick[n]) if n in pick else {"method": "none"}) for n in shapes}
    phases, errs = [], []
    if warmup > 0:
        phases.append((0, warmup, "warmup", {n: {"method": "none"} for n in shapes}))
        errs.append(None)
    phases.append((warmup, None, "uniform" if uniform else "plan-1", layers))
    errs.append(total)
    uni_bytes = sum(wire_bytes(parse_method(uni_layers[n]), shapes[n]) for n in shapes)
    buckets: Dict[int, List[str]] = {}
    for layer in sorted(tr["layers"], key=lambda l: l["backward_order"]):
        buckets.setdefault(int(layer["bucket"]), []).append(layer["name"])
    return make_schedule(phases, shapes, model=str(tr["attrs"].get("model", "")),
                         world_size=int(world_size or tr["attrs"].get("world_size", 1)),
                         family="powersgd", engine="uniform" if uniform else "reference",
                         buckets=[buckets[b] for b in sorted(buckets)], phase_errors=errs,
                         uniform_bytes_per_step=uni_bytes, uniform_total_error=uni_err,
                         config={"rank": rank, "alpha": alpha, "gamma": gamma, "beta": beta, "acc": acc,
                                 "warmup": warmup, "error": "svd", "planner": "lgreco.planning"})
