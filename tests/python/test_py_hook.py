"""ScheduleHook in a real 2-process gloo DDP job (TinyNet, several DDP buckets).

- method none is bit-identical to DDP's own allreduce;
- uniform PowerSGD matches torch's powerSGD_hook (same seed, rank, start iteration);
- for every method the bytes handed to collectives per step equal the wire-byte formulas of the
  method contract, computed here independently from the parameter shapes, and equal the
  schedule's predicted bytes; every rank ends with identical parameters.
"""
import math

import pytest
import torch

import py_ddp_workers as w
from lgreco import make_schedule

# PowerSGD vs torch: identical arithmetic except torch's error feedback on uncompressed tensors
# (it keeps local − mean there, which cancels in the mean up to rounding); a few float32 ulps of
# rounding, amplified over 6 SGD steps, stay far below 1e-5 while compression itself moves the
# parameters by ~1e-2 (checked below, so the comparison can fail).
PSGD_ATOL = 1e-5


def contract_bytes(method, params, shape):
    """The method table's wire bytes, written out again here from the contract text."""
    N = math.prod(shape)
    cd = lambda a, b: -(-a // b)  # noqa: E731
    if method == "none":
        return 4 * N
    if method in ("fp16", "bf16"):
        return 2 * N
    if method == "powersgd":
        n = shape[0]
        m = N // n
        r = min(n, m, params.get("rank", 4))
        q = params.get("power_iterations", 1)
        return q * 4 * r * (n + m) if (n + m) * r * params.get("min_compression_rate", 2) < n * m else 4 * N
    k = 0 if N == 0 else max(1, math.ceil(params.get("density", 0.01) * N))
    if method == "randomk":
        return 4 * k
    if method == "topk":
        pairs, bitmap = 8 * k, cd(N, 8) + 4 * k
        enc = params.get("encoding", "auto")
        return {"pairs": pairs, "bitmap": bitmap, "auto": min(pairs, bitmap)}[enc]
    if method == "qsgd":
        s = params.get("levels", 2 ** (params.get("bits", 4) - 1) - 1)
        return cd(N * math.ceil(math.log2(2 * s + 1)), 8) + 4 * cd(N, params.get("bucket_size", 512))
    if method == "maxmin":
        return 4 * N if N < 16 else cd(params.get("bits", 4) * N, 8) + 8 * cd(N, params.get("bucket_size", 1024))
    if method == "sign":
        return cd(N, 8) + 4 * cd(N, params.get("bucket_size", 1024))
    if method == "terngrad":
        return cd(2 * N, 8) + 4
    if method == "nuqsgd":
        s = params.get("levels", 4)
        return cd(N * (1 + math.ceil(math.log2(s + 2))), 8) + 4 * cd(N, params.get("bucket_size", 512))
    raise AssertionError(method)


METHODS = [
    ("none", {}), ("fp16", {}), ("bf16", {}),
    ("powersgd", {"rank": 1}), ("powersgd", {"rank": 4}), ("powersgd", {"rank": 0}),
    ("powersgd", {"rank": 2, "power_iterations": 3}),
    ("topk", {"density": 0.05}), ("topk", {"density": 0.3, "encoding": "bitmap"}),
    ("topk", {"density": 0.01, "encoding": "pairs"}), ("randomk", {"density": 0.1}),
    ("qsgd", {}), ("qsgd", {"bits": 3, "bucket_size": 100, "norm": "max"}),
    ("maxmin", {}), ("maxmin", {"bits": 2, "bucket_size": 64, "rounding": "nearest"}),
    ("sign", {"bucket_size": 128}), ("terngrad", {}), ("nuqsgd", {"levels": 3, "bucket_size": 256}),
]


def uniform_doc(shapes, method, params, warmup=0):
    m = {"method": method, "params": params}
    phases = []
    if warmup:
        phases.append((0, warmup, "warmup", {n: {"method": "none"} for n in shapes}))
    phases.append((warmup, None, "uniform", {n: m for n in shapes}))
    return make_schedule(phases, shapes, model="tinynet", world_size=2)


def test_none_is_bit_identical_to_ddp_allreduce():
    shapes = w.shapes()
    res = w.run_ddp(w.task_none_vs_plain, 2, 4, uniform_doc(shapes, "none", {}))
    for r in res:
        assert len(set(b for names in r["buckets"].values() for b in names)) == len(shapes)
        assert len(r["buckets"]) >= 2, r["buckets"]  # the small caps really give several buckets
        for name in shapes:
            assert torch.equal(r["plain"][name], r["hooked"][name]), name
        assert set(r["bytes"].values()) == {sum(4 * math.prod(s) for s in shapes.values())}


@pytest.mark.parametrize("rank", [2, 4])  # Gram-Schmidt (r ≤ 2) and QR orthogonalisation
def test_uniform_powersgd_matches_torch_hook(rank):
    shapes = w.shapes()
    start, steps = 2, 6
    doc = uniform_doc(shapes, "powersgd", {"rank": rank}, warmup=start)
    res = w.run_ddp(w.task_powersgd_vs_torch, 2, steps, rank, start, doc)
    for r in res:
        moved = max((r["torch"][n] - r["plain"][n]).abs().max().item() for n in shapes)
        assert moved > 100 * PSGD_ATOL, "compression must visibly change the result"
        for n in shapes:
            diff = (r["torch"][n] - r["ours"][n]).abs().max().item()
            assert diff <= PSGD_ATOL, (n, diff)
        want = [sum(contract_bytes("none", {}, s) for s in shapes.values())] * start + \
               [sum(contract_bytes("powersgd", {"rank": rank}, s) for s in shapes.values())] * (steps - start)
        assert [r["bytes"][s] for s in range(steps)] == want


def test_bytes_per_step_equal_contract_for_every_method():
    shapes = w.shapes()
    docs = [uniform_doc(shapes, m, p) for m, p in METHODS]
    # a mixed schedule with two phases: per-layer methods that change at step 2
    names = list(shapes)
    mix_a = {n: {"method": METHODS[i % len(METHODS)][0], "params": METHODS[i % len(METHODS)][1]}
             for i, n in enumerate(names)}
    mix_b = {n: {"method": METHODS[(i + 5) % len(METHODS)][0], "params": METHODS[(i + 5) % len(METHODS)][1]}
             for i, n in enumerate(names)}
    docs.append(make_schedule([(0, 2, "plan-1", mix_a), (2, None, "plan-2", mix_b)], shapes, world_size=2))
    steps = 3
    res = w.run_ddp(w.task_bytes, 2, steps, docs)
    for j, doc in enumerate(docs):
        for step in range(steps):
            ph = [p for p in doc["phases"] if p["start_step"] <= step and (p["end_step"] is None or step < p["end_step"])][0]
            want = sum(contract_bytes(ph["layers"][n]["method"], ph["layers"][n]["params"], shapes[n]) for n in names)
            assert ph["predicted"]["bytes_per_step"] == want, (j, step)
            for r in res:
                assert r[j]["bytes"][step] == want, (j, METHODS[j] if j < len(METHODS) else "mixed", step)
        # every rank decoded the same payloads: parameters identical on both ranks
        for n in names:
            assert torch.equal(res[0][j]["params"][n], res[1][j]["params"][n]), (j, n)
            assert torch.isfinite(res[0][j]["params"][n]).all()


def test_powersgd_power_iterations_converge_to_the_best_rank_r_approximation():
    """Step 0 (no residual yet): the synchronised gradient of a PowerSGD layer is the rank-r
    approximation P·Qᵀ of the ranks' mean gradient G. More power iterations move it towards the
    best one, whose error is the SVD tail sqrt(Σ_{i>r} σ_i²); with q = 12 the error is within 2 % of
    that tail, and q = 1 is never better than q = 12 beyond rounding."""
    lr = 0.1
    shapes = w.shapes()
    r = 3
    docs = [uniform_doc(shapes, "powersgd", {"rank": r, "power_iterations": q}) for q in (1, 12)]
    res = w.run_ddp(w.task_one_step, 2, docs, lr)[0]
    torch.manual_seed(0)
    p0 = {n: p.detach().clone() for n, p in w.TinyNet().named_parameters()}
    checked = 0
    for name, shape in shapes.items():
        if len(shape) < 2:
            continue
        n = shape[0]
        g = ((p0[name] - res["plain"][name]) / lr).reshape(n, -1).double()
        m = g.shape[1]
        if not (n + m) * min(n, m, r) * 2 < n * m:
            continue
        sv = torch.linalg.svdvals(g)
        tail = float(torch.sqrt((sv[r:] ** 2).sum()))
        errs = []
        for hooked in res["hooked"]:
            approx = ((p0[name] - hooked[name]) / lr).reshape(n, -1).double()
            errs.append(float(torch.linalg.norm(g - approx)))
        assert tail > 1e-6 * float(torch.linalg.norm(g)), name  # a real tail, so the test can fail
        assert errs[1] <= 1.02 * tail, (name, errs, tail)
        assert errs[1] >= tail * (1 - 1e-4), (name, errs, tail)  # nothing beats the SVD
        assert errs[0] >= errs[1] * (1 - 1e-4), (name, errs)
        checked += 1
    assert checked >= 2
