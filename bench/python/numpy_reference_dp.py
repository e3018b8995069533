"""The published L-GreCo DP as its reference implementation runs it: numpy, one vectorised min-plus
update over the B + 1 error buckets per (layer, candidate) (docs/reference-lgreco.md). A
re-implementation of that loop, not its code: the timing baseline of bench/python/replan_overhead.py
and, in the tests, a second oracle for the C++ reference engine (same rules, so the same choice).

Rules: w = T/B; ẽ = clip(⌈min(e, T + 1)/w⌉, 1, B); DP[0][b] = min over k with ẽ_0(k) < b of s_0(k);
DP[l][b] = min_k DP[l−1][b − ẽ_l(k)] + s_l(k); candidates in order with strict <; answer: the first b
minimising DP[L−1][b]; backtrack through a parent table.
"""
import numpy as np


def discretise(errors, T, B):
    w = T / B
    return [np.clip(np.ceil(np.minimum(np.asarray(e, dtype=np.float64), T + 1) / w), 1, B).astype(np.int64)
            for e in errors]


def solve(errors, sizes, T, B=10000):
    """Candidate index per layer, or None when no column is finite (infeasible)."""
    L = len(errors)
    et = discretise(errors, T, B)
    cols = B + 1
    parent = np.zeros((L, cols), dtype=np.int16)
    prev = np.full(cols, np.inf)
    prev[1:] = 0.0  # a virtual layer −1: column 0 infeasible, every other column free
    for l in range(L):
        cur = np.full(cols, np.inf)
        par = parent[l]
        s = np.asarray(sizes[l], dtype=np.float64)
        for k in range(len(et[l])):
            e = int(et[l][k])
            cand = np.full(cols, np.inf)
            cand[e:] = prev[: cols - e] + s[k]
            better = cand < cur
            cur[better] = cand[better]
            par[better] = k
        prev = cur
    best = int(np.argmin(prev))
    if not np.isfinite(prev[best]):
        return None
    choice = [0] * L
    b = best
    for l in range(L - 1, -1, -1):
        c = int(parent[l, b])
        choice[l] = c
        b -= int(et[l][c])
    return choice


def plan_window(window, alpha=1.0, B=10000):
    """The reference plan of a tables window (a dict of the tables' JSON form) as lgreco's planner
    sets it up: T = α·Σ default errors minus the errors of layers with a single candidate; planned
    layers (more than one candidate) in DDP bucket order (bucket, backward_order). Returns
    {layer name: candidate index} for the planned layers, or None when infeasible."""
    layers = window["layers"]
    T = alpha * sum(l["candidates"][l["default"]]["error"] for l in layers)
    T -= sum(l["candidates"][0]["error"] for l in layers if len(l["candidates"]) == 1)
    planned = sorted((l for l in layers if len(l["candidates"]) > 1), key=lambda l: (l["bucket"], l["backward_order"]))
    choice = solve([[c["error"] for c in l["candidates"]] for l in planned],
                   [[c["bytes"] for c in l["candidates"]] for l in planned], T, B)
    return None if choice is None else {l["name"]: k for l, k in zip(planned, choice)}
