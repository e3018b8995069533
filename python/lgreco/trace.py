"""TraceRecorder: records local (pre-allreduce) gradients of a PyTorch model into a trace file
(format v1, docs/trace-format.md), in bursts of consecutive steps; plus a small reader.

Usage:
    rec = TraceRecorder(model, "run.h5", every=100, burst=10, dtype="float16", hook=schedule_hook)
    for step in range(steps):
        rec.begin_step(step)            # installs gradient hooks only when `step` is recorded
        loss = ...; loss.backward()
        rec.end_step(loss=loss.item(), lr=lr)
        opt.step()
    rec.close()                         # writes attributes, renames the temporary file into place

Step s is recorded iff s ≥ start and (s − start) mod every < burst. Outside bursts begin_step is
one comparison and no hook is installed. The gradient of a parameter is taken from a tensor hook,
i.e. before DDP's allreduce (the local gradient). backward_order is the order in which these hooks
fire; compute_time_s of a layer is the wall time between its hook and the previous one (the
first: since the gradient of the model output arrived), minus time spent inside the ScheduleHook
in between (its collectives run synchronously on the backward thread). Buckets come from the
ScheduleHook (what DDP's reducer built) when one is given and has run, else from DDP's rule:
tensors in backward order, a bucket closes when it reaches 1 MiB (bucket 0) / bucket_cap (25 MiB).
With torch.distributed initialised only rank 0 writes, unless per_rank=True (one file per rank;
"{rank}" in the path is replaced, else ".rank<r>" is inserted before the suffix).
"""
from __future__ import annotations

import datetime
import math
import os
import pathlib
import time
from typing import Any, Dict, List, Optional

import h5py
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

STORAGE = ("float32", "float16", "bfloat16")
CHUNK_BYTES = 4 << 20
FIRST_BUCKET_BYTES = 1 << 20
BUCKET_BYTES = 25 << 20


class TraceError(ValueError):
    """A trace file is unreadable or breaks docs/trace-format.md; one line naming the file and the dataset."""


_NORMS = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm, nn.modules.instancenorm._InstanceNorm)


def to_storage(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 → storage dtype, round to nearest even (bfloat16: upper 16 bits, NaN → 0x7FC0)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if dtype == "float32":
        return x
    if dtype == "float16":
        return x.astype(np.float16)
    u = x.view(np.uint32).astype(np.uint64)
    out = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    out[np.isnan(x)] = 0x7FC0
    return out


def from_storage(a: np.ndarray, dtype: str) -> np.ndarray:
    """Storage dtype → float32 (exact)."""
    if dtype == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


def layer_kinds(model: nn.Module) -> Dict[str, str]:
    """weight | bias | norm | embedding for every parameter name, from the owning module's type."""
    kinds = {}
    for mname, mod in model.named_modules():
        for pname, p in mod.named_parameters(recurse=False):
            full = f"{mname}.{pname}" if mname else pname
            low = full.lower()
            if isinstance(mod, (nn.Embedding, nn.EmbeddingBag)) or any(
                    k in low for k in ("pos_emb", "position", "cls_token", "embed")):
                kinds[full] = "embedding"
            elif isinstance(mod, _NORMS) or "norm" in type(mod).__name__.lower():
                kinds[full] = "norm"
            elif p.dim() >= 2:
                kinds[full] = "weight"
            else:
                kinds[full] = "bias"
    return kinds


def ddp_buckets(sizes_bytes: List[int], first_cap: int = FIRST_BUCKET_BYTES, cap: int = BUCKET_BYTES) -> List[int]:
    """Bucket index of each tensor given in backward order (DDP's rebuilt assignment rule)."""
    out, b, filled = [], 0, 0
    for s in sizes_bytes:
        out.append(b)
        filled += s
        if filled >= (first_cap if b == 0 else cap):
            b, filled = b + 1, 0
    return out


class TraceRecorder:
    """Records bursts of local gradients into a trace file; see the module docstring."""

    def __init__(self, model: nn.Module, path: str | os.PathLike, *, every: int = 100, burst: int = 10,
                 start: int = 0, dtype: str = "float16", model_name: str = "model", hook: Any = None,
                 overwrite: bool = False, per_rank: bool = False, producer: Optional[str] = None):
        if dtype not in STORAGE:
            raise ValueError(f"TraceRecorder: dtype = {dtype!r}, expected one of {STORAGE}")
        if every < 1 or burst < 1 or burst > every or start < 0:
            raise ValueError(f"TraceRecorder: every = {every}, burst = {burst}, start = {start}: "
                             "expected 1 ≤ burst ≤ every and start ≥ 0")
        self.ddp = model if isinstance(model, nn.parallel.DistributedDataParallel) else None
        self.inner = self.ddp.module if self.ddp is not None else model
        self.every, self.burst, self.start, self.dtype = every, burst, start, dtype
        self.model_name, self.hook, self.overwrite = model_name, hook, overwrite
        self.producer = producer or f"lgreco.TraceRecorder (python, torch {torch.__version__})"
        on = dist.is_available() and dist.is_initialized()
        self.rank = dist.get_rank() if on else 0
        self.world_size = dist.get_world_size() if on else 1
        self.enabled = per_rank or self.rank == 0
        p = str(path)
        if per_rank and on:
            p = p.replace("{rank}", str(self.rank)) if "{rank}" in p else str(
                pathlib.Path(p).with_suffix(f".rank{self.rank}{pathlib.Path(p).suffix}"))
        self.path = pathlib.Path(p)
        if self.enabled and self.path.exists() and not overwrite:
            raise FileExistsError(f"trace {self.path}: file exists (pass overwrite=True to replace it)")
        self.params = [(n, q) for n, q in self.inner.named_parameters() if q.requires_grad]
        self.kinds = layer_kinds(self.inner)
        self._file: Optional[h5py.File] = None
        self._tmp: Optional[pathlib.Path] = None
        self._handles: List[Any] = []
        self._grads: Dict[int, torch.Tensor] = {}
        self._events: List[tuple] = []
        self._bw_start: Optional[tuple] = None
        self._step: Optional[int] = None
        self.recorded_steps: List[int] = []
        self.backward_order: Optional[List[int]] = None

    # ------------------------------------------------------------------ step protocol
    def is_recorded(self, step: int) -> bool:
        return step >= self.start and (step - self.start) % self.every < self.burst

    def begin_step(self, step: int) -> bool:
        """Call before the forward pass; returns whether this step is recorded."""
        if not self.enabled or not self.is_recorded(step):
            self._step = None
            return False
        if self.recorded_steps and step <= self.recorded_steps[-1]:
            raise ValueError(f"TraceRecorder: step {step} after step {self.recorded_steps[-1]}: "
                             "recorded steps must increase")
        self._step = step
        self._grads.clear()
        self._events.clear()
        self._bw_start = None
        for i, (_, q) in enumerate(self.params):
            self._handles.append(q.register_hook(self._grad_hook(i)))
        self._handles.append(self.inner.register_forward_hook(self._forward_hook))
        return True

    def end_step(self, loss: Optional[float] = None, lr: Optional[float] = None) -> None:
        """Call after backward (before or after optimizer.step()); writes the step if recorded."""
        if self._step is None:
            return
        for h in self._handles:
            h.remove()
        self._handles.clear()
        if self._file is None:
            self._open()
        order = [i for i, _, _ in self._events]
        if self.backward_order is None:
            missing = [i for i in range(len(self.params)) if i not in order]
            self.backward_order = order + missing
        times = np.zeros(len(self.params))
        prev = self._bw_start or (self._events[0][1:] if self._events else (0.0, 0.0))
        for i, t, busy in self._events:
            times[i] = max(0.0, (t - busy) - (prev[0] - prev[1]))
            prev = (t, busy)
        f = self._file
        T = len(self.recorded_steps) + 1
        for i, (name, q) in enumerate(self.params):
            g = self._grads.get(i)
            row = (g.reshape(-1).numpy() if g is not None else np.zeros(q.numel(), np.float32))
            ds = f[f"layers/{i:06d}/grad"]
            ds.resize(T, axis=0)
            ds[T - 1] = to_storage(row, self.dtype)
            ct = f[f"layers/{i:06d}/compute_time_s"]
            ct.resize(T, axis=0)
            ct[T - 1] = times[i]
        for key, val in (("steps", self._step), ("loss", loss), ("lr", lr)):
            d = f[key]
            d.resize(T, axis=0)
            d[T - 1] = np.nan if val is None else val
        self.recorded_steps.append(self._step)
        self._step = None

    # ------------------------------------------------------------------ hooks
    def _busy(self) -> float:
        return float(getattr(self.hook, "busy_s", 0.0))

    def _grad_hook(self, i: int):
        def fn(grad: torch.Tensor):
            self._grads[i] = grad.detach().to(torch.float32, copy=True).cpu()
            self._events.append((i, time.perf_counter(), self._busy()))
        return fn

    def _forward_hook(self, module, inputs, output):
        out = output
        while isinstance(out, (tuple, list)) and out:
            out = out[0]
        if isinstance(out, dict):
            out = next(iter(out.values()), None)
        if isinstance(out, torch.Tensor) and out.requires_grad:
            def mark(g):
                if self._bw_start is None:
                    self._bw_start = (time.perf_counter(), self._busy())
            out.register_hook(mark)

    # ------------------------------------------------------------------ file
    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        f = h5py.File(self._tmp, "w")
        self._file = f
        st = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}[self.dtype]
        item = np.dtype(st).itemsize
        for key in ("steps", "loss", "lr"):
            f.create_dataset(key, shape=(0,), maxshape=(None,), chunks=(1024,),
                             dtype=np.int64 if key == "steps" else np.float64)
        for i, (name, q) in enumerate(self.params):
            g = f.create_group(f"layers/{i:06d}")
            n = q.numel()
            ds = g.create_dataset("grad", shape=(0, n), maxshape=(None, n), dtype=st,
                                  chunks=(1, min(n, CHUNK_BYTES // item)), shuffle=True,
                                  compression="gzip", compression_opts=1)
            if self.dtype == "bfloat16":
                ds.attrs["dtype"] = "bfloat16"
            g.create_dataset("compute_time_s", shape=(0,), maxshape=(None,), chunks=(1024,), dtype=np.float64)

    def buckets(self) -> List[int]:
        """Bucket of each parameter (model order): from the hook's observed buckets, else DDP's rule."""
        names = [n for n, _ in self.params]
        observed = getattr(self.hook, "bucket_names", None) or {}
        if observed:
            where = {n: b for b, ns in observed.items() for n in ns}
            if all(n in where for n in names):
                return [where[n] for n in names]
        order = self.backward_order or list(range(len(self.params)))[::-1]
        cap = self.ddp.bucket_bytes_cap if self.ddp is not None else BUCKET_BYTES
        first = getattr(dist, "_DEFAULT_FIRST_BUCKET_BYTES", FIRST_BUCKET_BYTES)
        b = ddp_buckets([4 * self.params[i][1].numel() for i in order], first, cap)
        out = [0] * len(self.params)
        for pos, i in enumerate(order):
            out[i] = b[pos]
        return out

    def close(self) -> Optional[pathlib.Path]:
        """Writes the attributes and renames the file into place; returns its path (None if disabled)."""
        for h in self._handles:
            h.remove()
        self._handles.clear()
        if not self.enabled:
            return None
        if self._file is None:
            self._open()
        f = self._file
        try:
            f.attrs.update(format="lgreco-trace", version=1, model=self.model_name,
                           world_size=self.world_size, dtype=self.dtype, producer=self.producer,
                           created=datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"))
            order = self.backward_order or list(range(len(self.params)))[::-1]
            pos = {i: k for k, i in enumerate(order)}
            for i, (bucket, (name, q)) in enumerate(zip(self.buckets(), self.params)):
                shape = list(q.shape) or [1]
                f[f"layers/{i:06d}"].attrs.update(
                    name=name, shape=np.asarray(shape, dtype=np.int64), numel=int(math.prod(shape)),
                    kind=self.kinds.get(name, "weight"), bucket=int(bucket), backward_order=pos[i],
                    dtype=self.dtype)
            f.close()
            self._file = None
            if self.path.exists() and not self.overwrite:
                raise FileExistsError(f"trace {self.path}: file exists (pass overwrite=True to replace it)")
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        return self.path

    def abort(self) -> None:
        """Drops the temporary file; nothing is written at the destination."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._tmp is not None and self._tmp.exists():
            self._tmp.unlink()

    def __enter__(self) -> "TraceRecorder":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def _dtype_of(dt: np.dtype) -> str:
    """Storage dtype of a grad dataset's numpy type (uint16 holds bfloat16)."""
    names = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16", np.dtype(np.uint16): "bfloat16"}
    if np.dtype(dt).newbyteorder("=") not in names:
        raise ValueError(f"grad dataset of type {dt}: expected float32, float16 or uint16 (bfloat16)")
    return names[np.dtype(dt).newbyteorder("=")]


def read_trace(path: str | os.PathLike) -> Dict[str, Any]:
    """Small reader: attrs, steps, and per layer name/shape/kind/bucket/backward_order/numel/dtype/grad
    (float32); numel and dtype are derived when the file does not hold them. With the native module
    the structure is checked first by the C++ reader (the checks and words of `lgreco trace info`);
    any problem is a TraceError of one line naming the file and the dataset."""
    from . import native

    native.check_file("trace", path, TraceError)
    where = f"trace {os.fspath(path)}"
    at = "/"
    try:
        with h5py.File(path, "r") as f:
            out = {"attrs": dict(f.attrs), "steps": f["steps"][:], "layers": []}
            for key in ("loss", "lr"):
                if key in f:
                    at = f"/{key}"
                    out[key] = f[key][:]
            for gname in sorted(f["layers"]):
                at = f"/layers/{gname}"
                g = f["layers"][gname]
                a = dict(g.attrs)
                layer = {k: a[k] for k in ("name", "kind", "bucket", "backward_order")}
                layer["shape"] = tuple(int(x) for x in a["shape"])
                # numel and dtype may be absent (docs/trace-format.md, "Required and derivable"):
                # the product of shape and the storage the dataset's type stands for.
                layer["numel"] = int(a["numel"]) if "numel" in a else math.prod(layer["shape"])
                layer["dtype"] = a["dtype"] if "dtype" in a else _dtype_of(g["grad"].dtype)
                at = f"/layers/{gname}/grad"
                layer["grad"] = from_storage(g["grad"][:], layer["dtype"])
                if "compute_time_s" in g:
                    at = f"/layers/{gname}/compute_time_s"
                    layer["compute_time_s"] = g["compute_time_s"][:]
                out["layers"].append(layer)
            return out
    except (OSError, KeyError, ValueError, TypeError, IndexError) as e:
        if isinstance(e, FileNotFoundError):
            raise TraceError(f"{where}: no such file") from None
        why = " ".join(str(e).split()) or type(e).__name__
        raise TraceError(f"{where}: {at}: cannot read ({why})") from None
