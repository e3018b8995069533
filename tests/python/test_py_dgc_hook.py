"""DGC momentum correction and warm-up in the DDP hook (2-process gloo DDP, TinyNet, several buckets).

- Warm-up: the bytes each rank hands to collectives at step t equal the top-k contract at the
  density d(t) = max(density, 0.25·4^(−floor(t/W))), written out here from the formula, with t the
  training step (the hook's step counter, also with start_step ≠ 0 and a phase starting late);
  `predicted_bytes_per_step(t)` agrees, and a phase's predicted.bytes_per_step stays the steady state.
- Momentum correction: from the local gradients captured as they enter the hook, a NumPy
  reimplementation of the rule (u ← m·u + g; acc = e + u; c = top-k(acc); e ← acc − c; u[sent] ← 0,
  fp32, one rounding per operation) predicts, per rank and layer, what each rank sends; the
  synchronised gradient DDP leaves in `.grad` must equal the mean of both ranks' predicted payloads
  bit for bit at every step, and the hook's final residuals and velocities must equal the
  reimplementation's. The schedule switches layers between momentum top-k, plain top-k and none
  across phases (velocity dropped on leaving, restarted from zero on return). The check can fail:
  the same gradients under plain error feedback give a different synchronised gradient (asserted).
"""
import math

import numpy as np
import pytest
import torch

import py_ddp_workers as w
from lgreco import make_schedule
from test_py_hook import contract_bytes


def density_at(density, warmup_steps, t):
    """DGC warm-up, from docs/dgc.md: W > 0 → max(density, 0.25·4^(−floor(t/W)))."""
    if warmup_steps == 0:
        return density
    return max(density, 0.25 / 4 ** (t // warmup_steps))


def phase_at(doc, t):
    return [p for p in doc["phases"] if p["start_step"] <= t and (p["end_step"] is None or t < p["end_step"])][0]


def expected_bytes(doc, shapes, t):
    total = 0
    for name, shape in shapes.items():
        m = phase_at(doc, t)["layers"][name]
        params = dict(m["params"])
        if m["method"] == "topk":
            params["density"] = density_at(params["density"], params.get("warmup_steps", 0), t)
        total += contract_bytes(m["method"], params, shape)
    return total


@pytest.mark.parametrize("late_phase,start_step", [(False, 0), (True, 3)])
def test_warmup_bytes_per_step_follow_the_density_schedule(late_phase, start_step):
    shapes = w.shapes()
    names = list(shapes)
    steps = 6
    if late_phase:  # top-k starts at step 2 (hook counting from 3): densities at the global step
        topk = {"method": "topk", "params": {"density": 0.001, "warmup_steps": 2, "momentum": 0.9}}
        phases = [(0, 2, "warmup", {n: {"method": "none"} for n in names}),
                  (2, None, "uniform", {n: topk for n in names})]
    else:  # the brief's example: 25 %, 6.25 %, 1.5625 %, then the 1 % target
        topk = {"method": "topk", "params": {"density": 0.01, "warmup_steps": 1}}
        phases = [(0, None, "uniform", {n: topk for n in names})]
        assert [density_at(0.01, 1, t) for t in range(5)] == [0.25, 0.0625, 0.015625, 0.01, 0.01]
    doc = make_schedule(phases, shapes, world_size=2)
    res = w.run_ddp(w.task_capture, 2, steps, doc, 0.1, start_step)
    hook_steps = list(range(start_step, start_step + steps))
    want = [expected_bytes(doc, shapes, t) for t in hook_steps]
    steady = sum(contract_bytes("topk", {"density": topk["params"]["density"]}, s) for s in shapes.values())
    assert doc["phases"][-1]["predicted"]["bytes_per_step"] == steady  # phases predict the steady state
    assert want[0] > steady and len(set(want)) >= 3, want  # the warm-up really changes the sizes
    for r in res:
        assert [r["bytes"][t] for t in hook_steps] == want
        assert [r["predicted"][t] for t in hook_steps] == want
    for n in names:
        assert torch.equal(res[0]["params"][n], res[1]["params"][n]), n


def _topk_idx(acc, k):
    """Ascending indices of the k largest |acc|, ties to the lower index (independent of the hook)."""
    order = np.lexsort((np.arange(acc.size), -np.abs(acc)))
    return np.sort(order[:k])


def reimplement(doc, shapes, local, steps, use_momentum=True):
    """Per rank: the payload c each layer contributes at each step, and the final (e, u) state."""
    sent, state = [], []
    for g_rank in local:
        e, u, c_rank = {}, {}, []
        for t in range(steps):
            c_step = {}
            for name, shape in shapes.items():
                N = math.prod(shape)
                g = g_rank[t][name].numpy().astype(np.float32)
                spec = phase_at(doc, t)["layers"][name]
                p = spec["params"]
                m = np.float32(p.get("momentum", 0) if use_momentum else 0)
                if spec["method"] == "topk" and m != 0:
                    uu = u.get(name, np.zeros(N, np.float32))
                    uu = (m * uu + g).astype(np.float32)
                    acc = (e[name] + uu).astype(np.float32) if name in e else uu.copy()
                else:
                    u.pop(name, None)
                    uu = None
                    acc = (g + e[name]).astype(np.float32) if name in e else g.copy()
                if spec["method"] == "none":
                    c_step[name] = acc
                    e.pop(name, None)
                    continue
                assert spec["method"] == "topk"
                k = max(1, math.ceil(density_at(p["density"], p.get("warmup_steps", 0), t) * N))
                idx = _topk_idx(acc, k)
                c = np.zeros(N, np.float32)
                c[idx] = acc[idx]
                e[name] = (acc - c).astype(np.float32)
                if uu is not None:
                    uu[idx] = 0.0
                    u[name] = uu
                c_step[name] = c
            c_rank.append(c_step)
        sent.append(c_rank)
        state.append((e, u))
    return sent, state


def momentum_doc(shapes):
    mom = lambda d, **kw: {"method": "topk", "params": {"density": d, "momentum": 0.9, **kw}}  # noqa: E731
    plain = lambda d: {"method": "topk", "params": {"density": d}}  # noqa: E731
    none = {"method": "none"}
    a = {"conv.weight": mom(0.05, warmup_steps=1), "conv.bias": mom(0.3, momentum=0.5),
         "fc1.weight": mom(0.01, warmup_steps=1), "fc1.bias": plain(0.1), "norm.weight": none,
         "norm.bias": mom(0.2, warmup_steps=2), "fc2.weight": mom(0.02, encoding="pairs"), "fc2.bias": none}
    b = dict(a, **{"conv.weight": plain(0.05), "fc1.bias": mom(0.1), "norm.weight": mom(0.1), "fc2.weight": none})
    c = dict(b, **{"conv.weight": mom(0.05, warmup_steps=1), "fc2.weight": mom(0.02, encoding="bitmap")})
    assert set(a) == set(shapes)
    return make_schedule([(0, 3, "plan-1", a), (3, 5, "plan-2", b), (5, None, "plan-3", c)], shapes, world_size=2)


def test_momentum_correction_matches_an_independent_reimplementation():
    shapes = w.shapes()
    steps = 7
    doc = momentum_doc(shapes)
    res = w.run_ddp(w.task_capture, 2, steps, doc)
    local = [r["local"] for r in res]
    sent, state = reimplement(doc, shapes, local, steps)
    plain_sent, _ = reimplement(doc, shapes, local, steps, use_momentum=False)
    differs = 0
    for t in range(steps):
        for name in shapes:
            want = (sent[0][t][name] + sent[1][t][name]) / np.float32(2)
            plain = (plain_sent[0][t][name] + plain_sent[1][t][name]) / np.float32(2)
            differs += not np.array_equal(want, plain)
            for rank, r in enumerate(res):
                got = r["synced"][t][name].numpy()
                assert np.array_equal(got, want), (rank, t, name, np.abs(got - want).max())
    assert differs >= 10, differs  # momentum correction really changes what is sent
    for rank, r in enumerate(res):
        e, u = state[rank]
        assert set(r["err"]) == set(e) and set(r["vel"]) == set(u), (rank, sorted(r["vel"]), sorted(u))
        assert set(u) == {"conv.weight", "conv.bias", "fc1.weight", "fc1.bias", "norm.weight", "norm.bias",
                          "fc2.weight"}
        for name in e:
            assert np.array_equal(r["err"][name].numpy(), e[name]), (rank, name)
        for name in u:
            assert np.array_equal(r["vel"][name].numpy(), u[name]), (rank, name)
            assert np.any(u[name] != 0), name  # velocity survives masking outside the sent indices
    for t in range(steps):
        for r in res:
            assert r["bytes"][t] == expected_bytes(doc, shapes, t), t
    for n in shapes:
        assert torch.equal(res[0]["params"][n], res[1]["params"][n]), n


def test_momentum_zero_keeps_no_velocity_and_is_plain_error_feedback():
    """momentum 0 / warmup 0 is the hook's plain top-k: no velocity kept, results equal the plain
    error-feedback reimplementation bit for bit."""
    shapes = w.shapes()
    steps = 3
    doc = make_schedule([(0, None, "uniform", {n: {"method": "topk", "params": {"density": 0.05, "momentum": 0,
                                                                                 "warmup_steps": 0}}
                                              for n in shapes})], shapes, world_size=2)
    res = w.run_ddp(w.task_capture, 2, steps, doc)
    sent, _ = reimplement(doc, shapes, [r["local"] for r in res], steps)
    for r in res:
        assert r["vel"] == {}
        for t in range(steps):
            for name in shapes:
                want = (sent[0][t][name] + sent[1][t][name]) / np.float32(2)
                assert np.array_equal(r["synced"][t][name].numpy(), want), (t, name)
