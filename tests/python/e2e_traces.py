"""Small trace files written with h5py exactly as docs/trace-format.md (format v1) specifies, for the
end-to-end tests: a tiny model whose gradients are low rank plus noise, and layers with chosen
singular values."""
import numpy as np
import h5py


def write_trace(path, layers, steps, grads, model="tiny", world_size=1, compute_time_s=None):
    """layers: list of dicts name, shape, kind, bucket, backward_order; grads[l]: array [T, numel]."""
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "lgreco-trace"
        f.attrs["version"] = np.int64(1)
        f.attrs["model"] = model
        f.attrs["world_size"] = np.int64(world_size)
        f.attrs["dtype"] = "float32"
        f.attrs["producer"] = "tests/python/e2e_traces.py"
        f.attrs["created"] = "2026-12-02T00:00:00Z"
        f.create_dataset("steps", data=np.asarray(steps, dtype=np.int64))
        g = f.create_group("layers")
        for i, (spec, data) in enumerate(zip(layers, grads)):
            numel = int(np.prod(spec["shape"]))
            lg = g.create_group(f"{i:06d}")
            lg.attrs["name"] = spec["name"]
            lg.attrs["shape"] = np.asarray(spec["shape"], dtype=np.int64)
            lg.attrs["numel"] = np.int64(numel)
            lg.attrs["kind"] = spec.get("kind", "weight")
            lg.attrs["bucket"] = np.int64(spec.get("bucket", 0))
            lg.attrs["backward_order"] = np.int64(spec.get("backward_order", len(layers) - 1 - i))
            lg.attrs["dtype"] = "float32"
            arr = np.asarray(data, dtype=np.float32).reshape(len(steps), numel)
            lg.create_dataset("grad", data=arr, chunks=(1, numel), shuffle=True, compression="gzip", compression_opts=1)
            if compute_time_s is not None:
                lg.create_dataset("compute_time_s", data=np.full(len(steps), compute_time_s[i], dtype=np.float64))


TINY_LAYERS = [
    {"name": "conv1.weight", "shape": [64, 16, 3, 3], "kind": "weight", "bucket": 1},
    {"name": "conv1.bias", "shape": [64], "kind": "bias", "bucket": 1},
    {"name": "block.weight", "shape": [128, 64, 3, 3], "kind": "weight", "bucket": 1},
    {"name": "block.norm", "shape": [128], "kind": "norm", "bucket": 1},
    {"name": "proj.weight", "shape": [256, 128], "kind": "weight", "bucket": 0},
    {"name": "fc.weight", "shape": [100, 256], "kind": "weight", "bucket": 0},
    {"name": "fc.bias", "shape": [100], "kind": "bias", "bucket": 0},
]


def tiny_model_trace(path, bursts=2, burst_length=12, seed=0):
    """A tiny CNN-like model: each matrix gradient = low rank (decaying spectrum, factors drifting
    slowly step to step) + noise; biases/norms small dense vectors. Compute times ~ numel."""
    rng = np.random.default_rng(seed)
    steps = [100 + b * 1000 + s for b in range(bursts) for s in range(burst_length)]  # recorded after a warm-up
    grads = []
    for spec in TINY_LAYERS:
        shape = spec["shape"]
        n, m = shape[0], int(np.prod(shape[1:]))
        rows = []
        if m == 1:
            base = rng.standard_normal(n)
            for _ in steps:
                rows.append(1e-3 * (base + 0.3 * rng.standard_normal(n)))
        else:
            r = 12
            sigma = (np.arange(r) + 1.0) ** -1.2
            u = rng.standard_normal((n, r))
            v = rng.standard_normal((m, r))
            for _ in steps:
                u = 0.9 * u + np.sqrt(1 - 0.81) * rng.standard_normal((n, r))
                v = 0.9 * v + np.sqrt(1 - 0.81) * rng.standard_normal((m, r))
                g = (u * sigma) @ v.T / np.sqrt(n * m) + 0.05 * rng.standard_normal((n, m)) / np.sqrt(n * m)
                rows.append(1e-3 * g.reshape(-1))
        grads.append(np.stack(rows))
    compute = [2e-7 * np.prod(s["shape"]) for s in TINY_LAYERS]
    write_trace(path, TINY_LAYERS, steps, grads, compute_time_s=compute)
    return steps
