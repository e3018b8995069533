"""A trace written with h5py alone, following docs/trace-format.md, is accepted by the C++ tools,
and `lgreco trace info` reports the values numpy computes from the same data."""
import datetime
import json

import h5py
import numpy as np
import pytest

TENSORS = [  # name, shape, kind, bucket, backward_order
    ("emb.weight", (50, 8), "embedding", 1, 4),
    ("fc.weight", (16, 8), "weight", 1, 3),
    ("fc.bias", (16,), "bias", 0, 2),
    ("norm.weight", (16,), "norm", 0, 1),
    ("head.weight", (3, 4, 5), "weight", 0, 0),
]
STEPS = [100, 101, 102, 500, 501]


def to_bf16(a):
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def write_trace(path, dtype, grads, layer_dtypes=None):
    """The writer of docs/trace-format.md (per-layer dtype may differ from the root dtype)."""
    with h5py.File(path, "w") as f:
        f.attrs.update(format="lgreco-trace", version=1, model="tiny-h5py", world_size=8, dtype=dtype,
                       producer="test_trace_h5py.py",
                       created=datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"))
        f["steps"] = np.asarray(STEPS, dtype=np.int64)
        for i, (name, shape, kind, bucket, order) in enumerate(TENSORS):
            ldtype = layer_dtypes[i] if layer_dtypes else dtype
            g = f.create_group(f"layers/{i:06d}")
            numel = int(np.prod(shape))
            g.attrs.update(name=name, shape=np.asarray(shape, dtype=np.int64), numel=numel, kind=kind,
                           bucket=bucket, backward_order=order, dtype=ldtype)
            data = grads[i].reshape(len(STEPS), numel)
            if ldtype == "float16":
                data = data.astype(np.float16)
            elif ldtype == "bfloat16":
                data = to_bf16(data)
            chunk = (1, min(numel, (4 << 20) // data.itemsize))
            d = g.create_dataset("grad", data=data, chunks=chunk, shuffle=True, compression="gzip",
                                 compression_opts=1, maxshape=(None, numel))
            if ldtype == "bfloat16":
                d.attrs["dtype"] = "bfloat16"
            g["compute_time_s"] = np.full(len(STEPS), 1e-3 * (i + 1))
        f["loss"] = np.linspace(3.0, 2.0, len(STEPS))


def random_grads(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((len(STEPS), *shape)).astype(np.float32) * 1e-2 for _, shape, *_ in TENSORS]


def decoded(grads, dtypes):
    out = []
    for g, d in zip(grads, dtypes):
        flat = g.reshape(len(STEPS), -1)
        if d == "float16":
            flat = flat.astype(np.float16).astype(np.float32)
        elif d == "bfloat16":
            flat = from_bf16(to_bf16(flat))
        out.append(flat.astype(np.float64))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "mixed"])
def test_h5py_trace_is_accepted_and_described(lgreco, tmp_path, dtype):
    path = tmp_path / "h5py.h5"
    grads = random_grads()
    dtypes = ["float32", "float16", "bfloat16", "float16", "float32"] if dtype == "mixed" else [dtype] * len(TENSORS)
    write_trace(path, "float16" if dtype == "mixed" else dtype, grads, dtypes)

    v = lgreco("trace", "validate", path)
    assert v.returncode == 0, v.stderr
    assert "valid (5 layers, 5 steps in 2 bursts" in v.stdout

    info = json.loads(lgreco("trace", "info", path, "--format", "json", check=True).stdout)
    assert info["schema_version"] == 1 and info["kind"] == "lgreco-trace-info" and "provenance" in info
    assert info["model"] == "tiny-h5py" and info["world_size"] == 8 and info["version"] == 1
    assert info["steps"] == STEPS
    assert [(b["first_step"], b["length"]) for b in info["bursts"]] == [(100, 3), (500, 2)]
    assert info["parameters"] == sum(int(np.prod(s)) for _, s, *_ in TENSORS)
    assert info["has_loss"] is True and info["has_lr"] is False
    values = decoded(grads, dtypes)
    for i, (layer, (name, shape, kind, bucket, order)) in enumerate(zip(info["layers"], TENSORS)):
        assert (layer["name"], tuple(layer["shape"]), layer["kind"], layer["bucket"], layer["backward_order"]) == (
            name, shape, kind, bucket, order)
        assert layer["numel"] == int(np.prod(shape))
        assert layer["dtype"] == dtypes[i]
        assert layer["has_compute_time"] is True
        norms = np.linalg.norm(values[i], axis=1)
        assert layer["l2_norm_mean"] == pytest.approx(norms.mean(), rel=1e-9)
        assert layer["l2_norm_max"] == pytest.approx(norms.max(), rel=1e-9)
        assert layer["max_abs"] == pytest.approx(np.abs(values[i]).max(), rel=1e-9)
        assert layer["nan_count"] == 0 and layer["inf_count"] == 0


def test_fixed_length_string_attributes_are_accepted(lgreco, tmp_path):
    path = tmp_path / "fixed.h5"
    write_trace(path, "float32", random_grads())
    with h5py.File(path, "a") as f:
        del f.attrs["model"]
        f.attrs.create("model", np.bytes_("fixed-len"), dtype="S20")
    info = json.loads(lgreco("trace", "info", path, "--format", "json", check=True).stdout)
    assert info["model"] == "fixed-len"


def test_nan_and_inf_are_counted(lgreco, tmp_path):
    path = tmp_path / "nan.h5"
    grads = random_grads()
    grads[1][2, 0, :3] = np.nan
    grads[1][4, 1, 0] = np.inf
    write_trace(path, "float16", grads)
    v = lgreco("trace", "validate", path)
    assert v.returncode == 1
    assert v.stderr.strip() == f"lgreco: error: trace {path}: layer 'fc.weight' (/layers/000001/grad): 3 NaN and 1 Inf values"
    assert "fc.weight" in v.stdout and "nan          3" in v.stdout
    doc = json.loads(lgreco("trace", "validate", path, "--format", "json").stdout)
    assert doc["valid"] is False
    assert [(l["nan_count"], l["inf_count"]) for l in doc["layers"]] == [(0, 0), (3, 1), (0, 0), (0, 0), (0, 0)]


def test_core_layout_only_is_read_with_derived_fields(lgreco, tmp_path):
    """A third-party trace with only the core layout (no dtype, numel, producer, created) is read:
    dtype from the datasets' type, numel from shape, defaults for the rest, and `trace info` says so
    on one line."""
    from bad_inputs import LAYERS, STEPS, write_trace as write_core
    from lgreco import read_trace

    path = tmp_path / "core.h5"
    write_core(path, core_only=True, dtype="float16")
    assert lgreco("trace", "validate", path).returncode == 0
    info = json.loads(lgreco("trace", "info", path, "--format", "json", check=True).stdout)
    assert info["dtype"] == "float16" and info["producer"] == "unknown" and info["created"] == ""
    assert [l["numel"] for l in info["layers"]] == [int(np.prod(s)) for _, s, *_ in LAYERS]
    assert all(l["dtype"] == "float16" for l in info["layers"])
    assert len(info["derived"]) == 5  # producer, created, root dtype, layers' numel, layers' dtype
    text = lgreco("trace", "info", path, check=True).stdout
    derived = [line for line in text.splitlines() if line.strip().startswith("derived")]
    assert len(derived) == 1 and "numel" in derived[0] and "dtype" in derived[0] and "producer" in derived[0]
    # The Python reader derives the same.
    t = read_trace(path)
    assert [l["numel"] for l in t["layers"]] == [l["numel"] for l in info["layers"]]
    assert t["layers"][0]["grad"].shape == (len(STEPS), 40)


def test_full_trace_derives_nothing(lgreco, tmp_path):
    from bad_inputs import write_trace as write_full

    path = tmp_path / "full.h5"
    write_full(path)
    info = json.loads(lgreco("trace", "info", path, "--format", "json", check=True).stdout)
    assert info["derived"] == []
    assert "derived" not in lgreco("trace", "info", path, check=True).stdout
