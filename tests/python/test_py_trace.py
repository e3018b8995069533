"""TraceRecorder writes trace format v1 (docs/trace-format.md): checked with h5py field by field,
and with `lgreco trace validate` when the binary has it."""
import math
import subprocess

import h5py
import numpy as np
import pytest
import torch
import torch.nn as nn

from lgreco import TraceRecorder, read_trace
from lgreco.trace import ddp_buckets, from_storage, to_storage


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.fc = nn.Linear(8, 16)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 5)

    def forward(self, idx):
        return self.head(torch.relu(self.norm(self.fc(self.emb(idx).mean(1)))))


def record(path, dtype, steps=12, every=5, burst=2, **kw):
    torch.manual_seed(0)
    model = Small()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = TraceRecorder(model, path, every=every, burst=burst, dtype=dtype, model_name="small", **kw)
    kept = {}
    for step in range(steps):
        on = rec.begin_step(step)
        g = torch.Generator().manual_seed(step)
        x, y = torch.randint(0, 20, (4, 3), generator=g), torch.randint(0, 5, (4,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        rec.end_step(loss=loss.item(), lr=0.1)
        if on:
            kept[step] = {n: p.grad.detach().clone().reshape(-1).numpy() for n, p in model.named_parameters()}
        opt.step()
    rec.close()
    return model, kept


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_trace_follows_format_v1(tmp_path, dtype):
    path = tmp_path / "t.h5"
    model, kept = record(path, dtype)
    steps = [0, 1, 5, 6, 10, 11]
    assert sorted(kept) == steps
    assert [p.name for p in tmp_path.iterdir()] == ["t.h5"]  # no temporary left behind
    params = list(model.named_parameters())
    with h5py.File(path, "r") as f:
        a = f.attrs
        assert a["format"] == "lgreco-trace" and int(a["version"]) == 1 and a["model"] == "small"
        assert int(a["world_size"]) == 1 and a["dtype"] == dtype and a["producer"] and a["created"].endswith("Z")
        assert f["steps"].dtype == np.int64 and f["steps"][:].tolist() == steps
        assert sorted(f["layers"]) == [f"{i:06d}" for i in range(len(params))]
        orders = []
        for i, (name, p) in enumerate(params):
            g = f[f"layers/{i:06d}"]
            assert g.attrs["name"] == name
            assert g.attrs["shape"].dtype == np.int64 and tuple(g.attrs["shape"]) == tuple(p.shape)
            assert int(g.attrs["numel"]) == p.numel() and g.attrs["dtype"] == dtype
            want_kind = {"emb.weight": "embedding", "fc.weight": "weight", "fc.bias": "bias", "norm.weight": "norm",
                         "norm.bias": "norm", "head.weight": "weight", "head.bias": "bias"}[name]
            assert g.attrs["kind"] == want_kind
            orders.append(int(g.attrs["backward_order"]))
            d = g["grad"]
            item = {"float32": 4, "float16": 2, "bfloat16": 2}[dtype]
            assert d.shape == (len(steps), p.numel()) and d.dtype.itemsize == item
            assert d.chunks == (1, min(p.numel(), (4 << 20) // item)) and d.maxshape == (None, p.numel())
            assert d.compression == "gzip" and d.shuffle
            if dtype == "bfloat16":
                assert d.dtype == np.uint16 and d.attrs["dtype"] == "bfloat16"
            for t, s in enumerate(steps):
                assert np.array_equal(d[t], to_storage(kept[s][name], dtype)), (name, s)
            ct = g["compute_time_s"][:]
            assert ct.shape == (len(steps),) and np.all(np.isfinite(ct)) and np.all(ct >= 0)
        assert sorted(orders) == list(range(len(params)))
        # feed-forward model: modules' gradients become ready in reverse order (within one module,
        # e.g. LayerNorm's weight and bias from one backward kernel, either order is legitimate)
        mods = [n.split(".")[0] for n, _ in params]
        by_order = [mods[i] for i in sorted(range(len(params)), key=lambda i: orders[i])]
        assert [m for k, m in enumerate(by_order) if k == 0 or by_order[k - 1] != m] == ["head", "norm", "fc", "emb"]
        assert np.all(f["lr"][:] == 0.1) and np.all(np.isfinite(f["loss"][:]))
    tr = read_trace(path)  # the reader decodes storage back to float32 exactly
    for i, (name, _) in enumerate(params):
        want = from_storage(to_storage(kept[steps[-1]][name], dtype), dtype)
        assert np.array_equal(tr["layers"][i]["grad"][-1], want), name


def test_bfloat16_rounding_is_nearest_even():
    x = np.array([1.0, 1.00390625, 1.005859375, -2.5, np.inf], dtype=np.float32)
    got = to_storage(x, "bfloat16")
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7 → even (1.0); 1 + 1.5·2^-8 rounds up
    assert got.tolist() == [0x3F80, 0x3F80, 0x3F81, 0xC020, 0x7F80]
    assert to_storage(np.array([np.nan], np.float32), "bfloat16").tolist() == [0x7FC0]


def test_refuses_to_overwrite_unless_told(tmp_path):
    path = tmp_path / "t.h5"
    record(path, "float16", steps=2)
    with pytest.raises(FileExistsError, match="exists"):
        TraceRecorder(Small(), path)
    record(path, "float32", steps=2, overwrite=True)
    with h5py.File(path, "r") as f:
        assert f.attrs["dtype"] == "float32"


def test_ddp_bucket_rule():
    MiB = 1 << 20
    # bucket 0 closes once it reaches 1 MiB, later buckets at 25 MiB
    assert ddp_buckets([MiB // 2, MiB // 2, 10 * MiB, 20 * MiB, 1]) == [0, 0, 1, 1, 2]
    assert ddp_buckets([4] * 3, first_cap=8, cap=8) == [0, 0, 1]


def test_outside_bursts_installs_no_hooks(tmp_path):
    model = Small()
    rec = TraceRecorder(model, tmp_path / "t.h5", every=10, burst=1)
    assert rec.begin_step(3) is False
    assert all(not p._backward_hooks for p in model.parameters()) and not model._forward_hooks
    assert rec.begin_step(10) is True
    assert all(len(p._backward_hooks) == 1 for p in model.parameters())
    rec.abort()


def test_lgreco_trace_validate_accepts_it(tmp_path, lgreco):
    from conftest import lgreco_bin

    try:
        lgreco_bin()
    except RuntimeError as e:
        pytest.skip(str(e))
    if lgreco("trace", "validate", "--help").returncode != 0:
        pytest.skip("this lgreco binary has no `trace validate` subcommand")
    for dtype in ("float32", "float16", "bfloat16"):
        path = tmp_path / f"t-{dtype}.h5"
        record(path, dtype)
        p = lgreco("trace", "validate", path)
        assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize("per_rank", [False, True])
def test_ddp_recording_rank0_or_per_rank(tmp_path, per_rank):
    import py_ddp_workers as w

    res = w.run_ddp(w.task_record, 2, str(tmp_path / "t.h5"), per_rank)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == (["t.rank0.h5", "t.rank1.h5"] if per_rank else ["t.h5"])
    # the buckets DDP's reducer built (seen by the hook) are exactly DDP's rule applied to the
    # observed backward order, and there are several of them
    for r in res:
        assert r["observed"] == r["rule"] and len(set(r["observed"])) >= 2, r
    grads = []
    for name in files:
        with h5py.File(tmp_path / name, "r") as f:
            assert int(f.attrs["world_size"]) == 2 and f["steps"][:].tolist() == [0, 2]
            assert [int(f["layers"][g].attrs["bucket"]) for g in sorted(f["layers"])] == res[0]["observed"]
            grads.append(f["layers/000002/grad"][:])
    if per_rank:  # local gradients: each rank saw different data
        assert not np.array_equal(grads[0], grads[1])
