"""Makers of bad input files for tests/python/test_bad_input.py. Each maker is a function of the
case folder that writes the case's inputs there; everything is generated (nothing large is
committed: a "3 GiB" file is sparse, a "100,000 levels" JSON is 200 kB)."""
import json
import os
import pathlib
import shutil

import h5py
import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
DEEP = 100_000  # JSON nesting of the deep cases (the limit is 512)
SIGNATURE = b"\x89HDF\r\n\x1a\n"

# ---- generic files -------------------------------------------------------------------------------


def text(name, content):
    """A file `name` holding `content` (str or bytes)."""
    def make(d):
        data = content.encode() if isinstance(content, str) else content
        (d / name).write_bytes(data)
    return make


def deep_json(name, depth=DEEP):
    return text(name, "[" * depth + "]" * depth)


def sparse(name, size=3 << 30):
    """A file of `size` bytes that takes no disk space."""
    def make(d):
        with open(d / name, "wb") as f:
            f.truncate(size)
    return make


def copy_of(base_name, name=None):
    """A copy of one of the session's valid base files (see `Base`)."""
    def make(d, base):
        shutil.copy(base[base_name], d / (name or base_name))
    make.needs_base = True
    return make


def json_edit(base_name, edit, name=None):
    """A base JSON document changed by `edit(doc)`, written with Python's json (which also writes
    integers beyond int64 exactly)."""
    def make(d, base):
        doc = json.loads(base[base_name].read_text())
        edit(doc)
        (d / (name or base_name)).write_text(json.dumps(doc))
    make.needs_base = True
    return make


def h5_edit(base_name, edit, name=None):
    """A copy of a base HDF5 file changed in place by `edit(h5py.File)`."""
    def make(d, base):
        path = d / (name or base_name)
        shutil.copy(base[base_name], path)
        with h5py.File(path, "r+") as f:
            edit(f)
    make.needs_base = True
    return make


def cut(base_name, keep=0.5, name=None):
    """A base file truncated to the first `keep` fraction of its bytes (an interrupted copy)."""
    def make(d, base):
        data = base[base_name].read_bytes()
        (d / (name or base_name)).write_bytes(data[: int(len(data) * keep)])
    make.needs_base = True
    return make


def noise(name, size=50_000, signature=False, seed=1):
    """`size` random bytes; with `signature`, behind the 8-byte HDF5 signature (a corrupt HDF5 file)."""
    def make(d):
        data = np.random.default_rng(seed).bytes(size)
        (d / name).write_bytes(SIGNATURE + data[len(SIGNATURE):] if signature else data)
    return make


def text_edit(base_name, edit, name=None):
    """A base text file changed by `edit(str) -> str`."""
    def make(d, base):
        (d / (name or base_name)).write_text(edit(base[base_name].read_text()))
    make.needs_base = True
    return make


def both(*makers):
    def make(d, base):
        for m in makers:
            m(d, base) if getattr(m, "needs_base", False) else m(d)
    make.needs_base = True
    return make


# ---- valid base files (written once per session) --------------------------------------------------

LAYERS = [  # name, shape, kind, bucket, backward_order
    ("emb.weight", (10, 4), "embedding", 1, 3),
    ("fc.weight", (6, 4), "weight", 1, 2),
    ("fc.bias", (6,), "bias", 0, 1),
    ("head.weight", (2, 3, 2), "weight", 0, 0),
]
STEPS = [10, 11, 12]


def write_trace(path, core_only=False, dtype="float32"):
    """A valid trace; `core_only`: only the core layout a third-party writer needs (root format,
    version, model, world_size, /steps; per layer name, shape, kind, bucket, backward_order, grad)."""
    rng = np.random.default_rng(0)
    storage = {"float32": np.float32, "float16": np.float16}[dtype]
    with h5py.File(path, "w") as f:
        f.attrs.update(format="lgreco-trace", version=1, model="tiny", world_size=4)
        if not core_only:
            f.attrs.update(dtype=dtype, producer="bad_inputs.py", created="2026-12-03T00:00:00Z")
        f["steps"] = np.asarray(STEPS, dtype=np.int64)
        for i, (name, shape, kind, bucket, order) in enumerate(LAYERS):
            g = f.create_group(f"layers/{i:06d}")
            numel = int(np.prod(shape))
            g.attrs.update(name=name, shape=np.asarray(shape, dtype=np.int64), kind=kind, bucket=bucket,
                           backward_order=order)
            if not core_only:
                g.attrs.update(numel=numel, dtype=dtype)
            g["grad"] = (rng.standard_normal((len(STEPS), numel)) * 1e-2).astype(storage)
            if not core_only:
                g["compute_time_s"] = np.full(len(STEPS), 1e-4)


def topology_doc(hosts=1, gpus=2):
    """A small valid topology: per host `gpus` GPUs on an NVSwitch and a NIC; hosts joined by a switch."""
    nodes, links = [], []
    if hosts > 1:
        nodes.append({"id": "fabric", "kind": "net_switch"})
    for h in range(hosts):
        nodes.append({"id": f"h{h}.nvs", "kind": "nvswitch", "host": h})
        nodes.append({"id": f"h{h}.nic", "kind": "nic", "host": h})
        links.append({"a": f"h{h}.nic", "b": f"h{h}.nvs", "class": "pcie", "bandwidth_GBps": 24})
        if hosts > 1:
            links.append({"a": f"h{h}.nic", "b": "fabric", "class": "net", "bandwidth_GBps": 12.5, "latency_us": 1})
        for g in range(gpus):
            nodes.append({"id": f"h{h}.gpu{g}", "kind": "gpu", "host": h})
            links.append({"a": f"h{h}.gpu{g}", "b": f"h{h}.nvs", "class": "nvlink", "bandwidth_GBps": 240})
    return {"schema_version": 1, "kind": "lgreco-topology", "name": "small", "gpu": "A100", "nodes": nodes,
            "links": links}


def nccl_log(ranks=16, collective="all_reduce_perf", extra_header=""):
    """nccl-tests standard output with a few rows (times made up but plausible)."""
    rows = []
    for k in range(10, 24, 2):
        size = 1 << k
        t = 20 + size / 5e3
        rows.append(f"{size:>12} {size // 4:>12} float sum -1 {t:8.2f} {size / t / 1e3:6.2f} {size / t / 1e3:6.2f}  0"
                    f" {t:8.2f} {size / t / 1e3:6.2f} {size / t / 1e3:6.2f}  0")
    return (f"# nThread 1 nGpus {ranks} minBytes 1024 maxBytes 8388608 step: 4(factor) warmup iters: 5 iters: 20\n"
            f"# {collective}\n{extra_header}"
            "#       size    count   type  redop root   time  algbw  busbw #wrong   time  algbw  busbw #wrong\n"
            + "\n".join(rows) + "\n")


def layers_doc():
    """A small valid `simulate --layers` file."""
    return {"batch_per_gpu": 8, "tensors": [{"name": "fc1.weight", "shape": [64, 32]}, {"name": "fc1.bias", "shape": [64]},
                                            {"name": "emb.weight", "shape": [100, 16], "uses_per_sample": 4}]}


class Base(dict):
    """The session's valid files by name: trace.h5, core.h5, tables.json, tables.h5, schedule.json,
    topology.json, sweep.log; trace_schedule.json (planned from trace.h5, so that replay runs it),
    fit.json (calibrated on sweep.log), layers.json, profile.json (the shipped A100 estimate)."""

    def __init__(self, folder, lgreco, make_tables, write_tables_h5):
        super().__init__()
        folder.mkdir(parents=True, exist_ok=True)
        self["trace.h5"] = folder / "trace.h5"
        write_trace(self["trace.h5"])
        self["core.h5"] = folder / "core.h5"
        write_trace(self["core.h5"], core_only=True)
        self["tables.json"] = folder / "tables.json"
        doc = make_tables(windows=1)
        self["tables.json"].write_text(json.dumps(doc))
        self["tables.h5"] = folder / "tables.h5"
        write_tables_h5(doc, self["tables.h5"])
        self["schedule.json"] = folder / "schedule.json"
        lgreco("plan", "--tables", self["tables.json"], "--bandwidth", "10Gbps", "-o", self["schedule.json"], check=True)
        self["topology.json"] = folder / "topology.json"
        self["topology.json"].write_text(json.dumps(topology_doc()))
        self["sweep.log"] = folder / "sweep.log"
        self["sweep.log"].write_text(nccl_log())
        self["trace_schedule.json"] = folder / "trace_schedule.json"
        lgreco("plan", "--trace", self["trace.h5"], "--topology", "2x8xA100-1x25G", "--period", "3", "--acc-steps", "3",
               "--warmup-steps", "0", "-o", self["trace_schedule.json"], check=True)
        self["fit.json"] = folder / "fit.json"
        lgreco("net", "calibrate", self["sweep.log"], "--topology", "2x8xA100-1x25G", "-o", self["fit.json"], check=True)
        self["layers.json"] = folder / "layers.json"
        self["layers.json"].write_text(json.dumps(layers_doc()))
        self["profile.json"] = folder / "profile.json"
        shutil.copy(REPO / "kernels" / "profiles" / "a100.json", self["profile.json"])


def tmp_files(folder):
    """Temporary files of atomic outputs left anywhere below `folder`."""
    return [os.path.join(r, n) for r, _, names in os.walk(folder) for n in names if ".tmp." in n]
