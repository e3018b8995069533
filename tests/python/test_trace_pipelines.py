"""Traces stored with other HDF5 filter pipelines or chunk shapes than the writer's (all allowed by
docs/trace-format.md): `lgreco plan --trace` with 2 threads reads them (raw-chunk decoding where the
reader decodes the pipeline itself — deflate only, no filters — and the ordinary locked H5Dread for
the rest — chunks two rows high, fletcher32) and gets exactly the tables of the standard layout."""
import datetime
import json

import h5py
import numpy as np
import pytest

TENSORS = [  # name, shape, kind, bucket, backward_order
    ("emb.weight", (64, 16), "embedding", 1, 3),
    ("fc.weight", (32, 16), "weight", 1, 2),
    ("fc.bias", (32,), "bias", 0, 1),
    ("head.weight", (8, 32), "weight", 0, 0),
]
STEPS = list(range(100, 124))

# name -> h5py create_dataset keyword arguments (chunks: rows per chunk)
PIPELINES = {
    "standard": dict(rows=1, shuffle=True, compression="gzip", compression_opts=1),
    "deflate-only": dict(rows=1, shuffle=False, compression="gzip", compression_opts=4),
    "no-filters": dict(rows=1, shuffle=False, compression=None),
    "two-rows-per-chunk": dict(rows=2, shuffle=False, compression="gzip", compression_opts=1),
    "fletcher32": dict(rows=1, shuffle=True, compression="gzip", compression_opts=1, fletcher32=True),
}


def write_trace(path, dtype, pipeline, seed=0):
    rng = np.random.default_rng(seed)
    opts = dict(PIPELINES[pipeline])
    rows = opts.pop("rows")
    with h5py.File(path, "w") as f:
        f.attrs.update(format="lgreco-trace", version=1, model="tiny-pipelines", world_size=8, dtype=dtype,
                       producer="test_trace_pipelines.py",
                       created=datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"))
        f["steps"] = np.asarray(STEPS, dtype=np.int64)
        for i, (name, shape, kind, bucket, order) in enumerate(TENSORS):
            g = f.create_group(f"layers/{i:06d}")
            numel = int(np.prod(shape))
            g.attrs.update(name=name, shape=np.asarray(shape, dtype=np.int64), numel=numel, kind=kind,
                           bucket=bucket, backward_order=order, dtype=dtype)
            data = (rng.standard_normal((len(STEPS), numel)) * 1e-2).astype(np.float32)
            if dtype == "float16":
                data = data.astype(np.float16)
            chunk = (rows, min(numel, (4 << 20) // data.itemsize))
            g.create_dataset("grad", data=data, chunks=chunk, maxshape=(None, numel), **opts)


def plan_tables(lgreco, trace, out_dir):
    sched, tables = out_dir / f"{trace.stem}.json", out_dir / f"{trace.stem}-tables.json"
    lgreco("plan", "--trace", trace, "--family", "powersgd", "--default", "rank=2", "-o", sched,
           "--tables-out", tables, "--threads", "2", check=True)
    return json.loads(tables.read_text())


def strip_inputs(doc):
    """The tables minus what names or identifies the input file."""
    if isinstance(doc, dict):
        return {k: strip_inputs(v) for k, v in doc.items() if k not in ("trace", "input", "inputs", "provenance",
                                                                           "created", "path", "sha256", "hash")}
    if isinstance(doc, list):
        return [strip_inputs(v) for v in doc]
    return doc


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_other_pipelines_replay_identically(lgreco, tmp_path, dtype):
    ref = None
    for name in PIPELINES:
        trace = tmp_path / f"{name}.h5"
        write_trace(trace, dtype, name)
        assert lgreco("trace", "validate", trace).returncode == 0
        tables = strip_inputs(plan_tables(lgreco, trace, tmp_path))
        if ref is None:
            ref = tables
        else:
            assert tables == ref, name
