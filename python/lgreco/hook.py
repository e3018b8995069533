"""ScheduleHook: a DDP communication hook that applies a per-parameter compression schedule.

Register with `hook.register(ddp_model)`. For every bucket the hook looks up, by parameter name,
the method and the wire plan (k, encoding, matrix view, code width: the schedule's, from the C++
registry) of the phase in force at the current step and issues, in this fixed order (identical on
every rank because it depends only on the schedule and the bucket's parameters):
  1. allreduce fp32  — "none" and PowerSGD-incompressible tensors (sum, then ÷ world)
  2. allreduce fp16  — "fp16" tensors (÷ world first, like torch's fp16 hook)
  3. bf16            — allreduce bf16; on gloo (no bf16 reductions) an allgather of the same 2N bytes
                       per rank, summed in rank order in fp32
  4. allreduce fp32  — random-k values (indices from a seed shared by all ranks)
  5. allreduce fp32  — PowerSGD P matrices (round 0)
  6. allreduce fp32  — PowerSGD Q matrices (round 1)
  7. allgather uint8 — the packed payloads of top-k / QSGD / max-min / sign / TernGrad / NUQSGD,
                       decoded on every rank and averaged
Error feedback is per parameter: acc = g + e; c = C(acc); e ← acc − c (for PowerSGD c is the
aggregated P·Qᵀ, as in torch's hook). Top-k with DGC momentum m ≠ 0 keeps a velocity u per parameter
(dgc.py): u ← m·u + g; acc = e + u; e ← acc − c; u ← 0 at the indices this rank sent; u is dropped
while the parameter's method is anything else. Top-k with a DGC warm-up uses k at the density of the
hook's step (the schedule's wire stages), the same on every rank. Data-dependent codes (top-k delta,
QSGD Elias, DGC's sampled selection) are padded to their wire plan's fixed size. The collectives run
synchronously inside the hook, except for buckets that are entirely "none" (no residual left), which
take torch's asynchronous allreduce path. `bytes_sent_per_step[step]` is the number of bytes this
rank handed to collectives as its own contribution during that step; it must equal
predicted_bytes_per_step(step) (Σ of the wire plans at that step; the phase's predicted bytes except
during a DGC warm-up) — a difference raises, it would be a defect.
Random draws: random-k indices use torch.Generator seeded by (seed, step, layer); stochastic
rounding by (seed, step, layer, rank); PowerSGD's first Q by Philox normal_at(seed, stream_of(step,
layer), i·r + j), or, with q_init="torch", exactly as torch's powerSGD_hook seeds it.
"""

import json
import time
from collections import defaultdict
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.distributed as dist

from . import compressors, dgc
from . import rng
from .methods import ALLGATHER_METHODS, ScheduleError
from .powersgd import orthogonalize, philox_q, resize_q
from .schedule import Schedule

_MASK63 = (1 << 63) - 1


def mix_seed(*words: int) -> int:
    """SplitMix64-style mixing of integers into one 63-bit torch seed."""
    h = 0x9E3779B97F4A7C15
    for w in words:
        h = (h ^ (int(w) & 0xFFFFFFFFFFFFFFFF)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
        h ^= h >> 31
        h = h * 0x94D049BB133111EB & 0xFFFFFFFFFFFFFFFF
        h ^= h >> 29
    return h & _MASK63


def _unwrap(model: torch.nn.Module) -> torch.nn.Module:
    return model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model


class ScheduleHook:
    """Applies a Schedule to a DDP model; see the module docstring for the exact protocol."""

    def __init__(self, model: torch.nn.Module, schedule: Schedule | str, *, process_group=None,
                 start_step: int = 0, q_init: str = "philox", check_predicted: bool = True,
                 log_path: Optional[str] = None):
        if isinstance(schedule, str):
            schedule = Schedule.load(schedule)
        if q_init not in ("philox", "torch"):
            raise ScheduleError(f"q_init = {q_init!r}, expected 'philox' or 'torch'")
        self.schedule = schedule
        self.group = process_group
        self.step = start_step
        self.q_init = q_init
        inner = _unwrap(model)
        self.names: List[str] = [n for n, _ in inner.named_parameters()]
        self.shapes: Dict[str, tuple] = {n: tuple(p.shape) for n, p in inner.named_parameters()}
        self.layer_index: Dict[str, int] = {n: i for i, n in enumerate(self.names)}
        self._name_by_id = {id(p): n for n, p in inner.named_parameters()}
        self._name_by_ptr = {p.data_ptr(): n for n, p in inner.named_parameters()}
        schedule.check_parameters(self.shapes)
        mism = schedule.prediction_mismatches()
        if check_predicted and mism:
            i, pred, got = mism[0]
            raise ScheduleError(f"{schedule.source}: phases[{i}].predicted.bytes_per_step = {pred}, but its wire "
                                f"plans sum to {got}")
        self._err: Dict[str, torch.Tensor] = {}
        self._vel: Dict[str, torch.Tensor] = {}  # DGC velocity u of momentum top-k layers
        self._q: Dict[str, torch.Tensor] = {}
        self._torch_rng = np.random.RandomState(0)
        self._torch_rng_seeded = False
        self._torch_init_buckets: set = set()
        self.bytes_sent_per_step: Dict[int, int] = {}
        self.check_bytes = check_predicted
        self.log: List[Dict[str, Any]] = []
        self.busy_s = 0.0  # total wall time spent inside the hook (the recorder subtracts it)
        self.bucket_names: Dict[int, List[str]] = {}  # bucket index → names, as DDP built them
        self._log_path = log_path
        self._cur = defaultdict(int)
        self._step_time = 0.0

    # ------------------------------------------------------------------ registration
    def register(self, ddp: torch.nn.parallel.DistributedDataParallel) -> "ScheduleHook":
        ddp.register_comm_hook(self, _ddp_hook)
        return self

    def predicted_bytes_per_step(self, step: int) -> int:
        """Σ of the wire plans in force at `step` (what the hook will send). Equals the phase's
        predicted.bytes_per_step (the steady state) except during a DGC warm-up, when top-k sends more."""
        return sum(int(self._wire(step, n)["bytes"]) for n in self.names)

    def _wire(self, step: int, name: str):
        return self.schedule.wire_at(step, name, self.shapes[name])

    # ------------------------------------------------------------------ helpers
    def _world(self) -> int:
        return dist.get_world_size(self.group)

    def _rank(self) -> int:
        return dist.get_rank(self.group)

    def _allreduce(self, t: torch.Tensor, kind: str) -> None:
        self._cur["allreduce_bytes"] += t.numel() * t.element_size()
        self._cur[kind] += t.numel() * t.element_size()
        dist.all_reduce(t, group=self.group)

    def _allgather(self, t: torch.Tensor, kind: str) -> List[torch.Tensor]:
        self._cur["allgather_bytes"] += t.numel() * t.element_size()
        self._cur[kind] += t.numel() * t.element_size()
        out = [torch.empty_like(t) for _ in range(self._world())]
        dist.all_gather(out, t, group=self.group)
        return out

    def _names_of(self, bucket) -> List[str]:
        names = []
        for p in bucket.parameters():
            n = self._name_by_id.get(id(p)) or self._name_by_ptr.get(p.data_ptr())
            if n is None:
                raise RuntimeError("ScheduleHook: a bucket holds a parameter that is not in the model")
            names.append(n)
        return names

    def _uniforms(self, step: int, name: str, n: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(mix_seed(self.schedule.seed, step, self.layer_index[name],
                                                   self._rank(), 1))
        return torch.rand(n, generator=g)

    def _init_q(self, name: str, m: int, r: int, p: Dict[str, Any]) -> torch.Tensor:
        return philox_q(p["seed"], self.step, self.layer_index[name], m, r)

    def _torch_compat_init(self, bucket_index: int, seed: int, items) -> None:
        """Draws first Qs as torch's powerSGD_hook does: one randint per bucket from
        RandomState(seed), then torch.randn per compressed tensor grouped by matrix shape."""
        if bucket_index in self._torch_init_buckets:
            return
        self._torch_init_buckets.add(bucket_index)
        if not self._torch_rng_seeded:
            self._torch_rng = np.random.RandomState(seed)
            self._torch_rng_seeded = True
        by_shape: Dict[tuple, list] = {}
        for name, (n, m, r) in items:
            by_shape.setdefault((n, m), []).append((name, m, r))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._torch_rng.randint(1_000_000_000))
            for group in by_shape.values():
                for name, m, r in group:
                    self._q[name] = torch.randn(1, m, r, dtype=torch.float32)

    # ------------------------------------------------------------------ the hook
    def run_async(self, bucket) -> torch.futures.Future:
        """Fast path: a bucket whose parameters are all "none" with no residual left is averaged
        exactly as torch's allreduce_hook does (÷ world, then an asynchronous allreduce), so DDP can
        overlap it with the rest of backward. Everything else runs synchronously in run()."""
        names = self._names_of(bucket)
        if any(self.schedule.method_at(self.step, n).name != "none" or n in self._err or n in self._vel
               for n in names):
            fut: torch.futures.Future = torch.futures.Future()
            fut.set_result(self.run(bucket, names))
            return fut
        t0 = time.perf_counter()
        self.bucket_names[bucket.index()] = names
        buf = bucket.buffer()
        buf.div_(self._world())
        self._cur["allreduce_bytes"] += buf.numel() * buf.element_size()
        self._cur["dense_bytes"] += buf.numel() * buf.element_size()
        fut = dist.all_reduce(buf, group=self.group, async_op=True).get_future()
        dt = time.perf_counter() - t0
        self.busy_s += dt
        self._step_time += dt
        if bucket.is_last():
            self._finish_step()
        return fut.then(lambda f: f.value()[0])

    def run(self, bucket, names: Optional[List[str]] = None) -> torch.Tensor:
        t0 = time.perf_counter()
        buf = bucket.buffer()
        grads = bucket.gradients()
        names = names if names is not None else self._names_of(bucket)
        self.bucket_names[bucket.index()] = names
        step = self.step
        world = self._world()
        dense, half, bf16, rk, psgd, ag = [], [], [], [], [], []
        for name, g in zip(names, grads):
            m = self.schedule.method_at(step, name)
            flat = g.view(-1)
            e = self._err.get(name)
            mom = dgc.momentum_factor(m)
            if mom != 0.0:  # DGC momentum correction: u ← m·u + g; acc = e + u, in the bucket
                u = self._vel.get(name)
                if u is None:
                    u = self._vel[name] = torch.zeros_like(flat)
                dgc.momentum_accumulate(flat, u, e, mom, flat)
            else:
                self._vel.pop(name, None)  # leaving momentum top-k drops the velocity
                if e is not None:
                    flat.add_(e)  # acc = g + e, in place in the bucket
            if m.name == "none":
                self._err.pop(name, None)
                dense.append(flat)
            elif m.name == "powersgd":
                view = self._wire(step, name)["view"]
                if view["compressed"]:
                    psgd.append((name, flat, view["n"], view["m"], view["rank"], m.params))
                else:
                    self._err.pop(name, None)
                    dense.append(flat)
            elif m.name == "fp16":
                half.append((name, flat))
            elif m.name == "bf16":
                bf16.append((name, flat))
            elif m.name == "randomk":
                rk.append((name, flat, m))
            elif m.name in ALLGATHER_METHODS:
                ag.append((name, flat, m))
            else:  # parse_method guarantees the table; keep the failure loud
                raise ScheduleError(f"method {m.name!r} not handled")

        if dense:
            cat = torch.cat(dense)
            self._allreduce(cat, "dense_bytes")
            cat.div_(world)
            _scatter(cat, dense)
        if half:
            flats = [f for _, f in half]
            acc = torch.cat(flats)
            c = acc.to(torch.float16)
            self._store_err(half, acc - c.to(torch.float32))
            c.div_(world)
            self._allreduce(c, "fp16_bytes")
            _scatter(c.to(torch.float32), flats)
        if bf16:
            flats = [f for _, f in bf16]
            acc = torch.cat(flats)
            c = acc.to(torch.bfloat16)
            self._store_err(bf16, acc - c.to(torch.float32))
            if dist.get_backend(self.group) == "gloo":
                parts = self._allgather(c.view(torch.uint8), "bf16_bytes")
                total = torch.zeros_like(acc)
                for part in parts:
                    total += part.view(torch.bfloat16).to(torch.float32)
                _scatter(total.div_(world), flats)
            else:
                c.div_(world)
                self._allreduce(c, "bf16_bytes")
                _scatter(c.to(torch.float32), flats)
        if rk:
            idxs, vals = [], []
            for name, flat, m in rk:
                n = flat.numel()
                g = torch.Generator().manual_seed(mix_seed(self.schedule.seed, step, self.layer_index[name], 2))
                idx = torch.randperm(n, generator=g)[: int(self._wire(step, name)["k"])]
                idxs.append(idx)
                vals.append(flat[idx])
            cat = torch.cat(vals)
            self._allreduce(cat, "randomk_bytes")
            cat.div_(world)
            off = 0
            for (name, flat, _), idx in zip(rk, idxs):
                e = flat.clone()
                e[idx] = 0.0
                self._err[name] = e
                flat.zero_()
                flat[idx] = cat[off: off + idx.numel()]
                off += idx.numel()
        if self.q_init == "torch":
            seeds = [m.params["seed"] for m in (self.schedule.method_at(step, n) for n in names)
                     if m.name == "powersgd"]
            if seeds:
                self._torch_compat_init(bucket.index(), seeds[0],
                                        [(nm, (n, mm, r)) for nm, _, n, mm, r, _ in psgd if nm not in self._q])
        if psgd:
            self._powersgd(psgd, world)
        if ag:
            payloads, locals_ = [], []
            wires = [self._wire(step, name) for name, _, _ in ag]
            for (name, flat, m), w in zip(ag, wires):
                stream = rng.stream_of(step, self.layer_index[name])
                if m.name == "topk":
                    pl, dec, idx = compressors.topk_encode(m, w, flat, self.schedule.seed, stream)
                    if name in self._vel:  # momentum top-k: mask the velocity at the sent indices
                        dgc.momentum_mask(idx, self._vel[name])
                else:
                    u = self._uniforms(step, name, flat.numel()) if compressors.needs_random(m, w) else None
                    pl, dec = compressors.encode(m, w, flat, u, self.schedule.seed, stream)
                if pl.numel() != int(w["allgather_bytes"]):
                    raise RuntimeError(f"ScheduleHook: {m.name} payload of '{name}' has {pl.numel()} bytes, its "
                                       f"wire plan {w['allgather_bytes']}")
                payloads.append(pl)
                locals_.append(dec)
            sizes = [p.numel() for p in payloads]
            parts = self._allgather(torch.cat(payloads), "allgather_payload_bytes")
            for (name, flat, m), dec in zip(ag, locals_):
                self._err[name] = flat - dec
            sums = [torch.zeros(f.numel()) for _, f, _ in ag]
            for part in parts:  # rank order: identical sums on every rank
                off = 0
                for j, (name, flat, m) in enumerate(ag):
                    sums[j] += compressors.decode(m, wires[j], part[off: off + sizes[j]], flat.numel())
                    off += sizes[j]
            for (name, flat, m), s in zip(ag, sums):
                flat.copy_(s.div_(world))

        dt = time.perf_counter() - t0
        self.busy_s += dt
        self._step_time += dt
        if bucket.is_last():
            self._finish_step()
        return buf

    def _store_err(self, items, err: torch.Tensor) -> None:
        off = 0
        for name, flat in items:
            self._err[name] = err[off: off + flat.numel()].clone()
            off += flat.numel()

    def _powersgd(self, items, world: int) -> None:
        """PowerSGD on the mean of the ranks' matrices M (acc = g + e), per layer:
        for each of the layer's power_iterations: orthogonalise Q; P = allreduce(M·Q) (a sum);
        orthogonalise P; Q = allreduce(Mᵀ·P) / world. Then M̂ = P·Qᵀ, e = acc − M̂, and Q warm-starts
        the next step. Layers of one bucket share each round's two allreduces; a layer with fewer
        iterations drops out of the later rounds, so the bytes are power_iterations × (P + Q)."""
        live = []
        for name, flat, n, m, r, p in items:
            acc = flat.clone()
            if r == 0:  # send nothing: everything stays in the residual
                self._err[name] = acc
                flat.zero_()
                continue
            q = self._q.get(name)
            if q is None or not p["warm_start"]:
                q = self._init_q(name, m, r, p)
            elif q.shape[2] != r:
                q = resize_q(q, r, p["seed"], self.step, self.layer_index[name])
            live.append({"name": name, "flat": flat, "acc": acc, "mat": flat.view(1, n, m), "q": q, "p": p,
                         "pm": None})
        if not live:
            return
        rounds = max(x["p"]["power_iterations"] for x in live)
        for it in range(rounds):
            act = [x for x in live if x["p"]["power_iterations"] > it]
            pms = []
            for x in act:
                orthogonalize(x["q"], x["p"]["orthogonalization"])
                pms.append(torch.bmm(x["mat"], x["q"]))
            pcat = torch.cat([pm.view(-1) for pm in pms])
            self._allreduce(pcat, "powersgd_p_bytes")
            off = 0
            qs = []
            for x, pm in zip(act, pms):
                pm = pcat[off: off + pm.numel()].view(pm.shape)
                off += pm.numel()
                orthogonalize(pm, x["p"]["orthogonalization"])
                x["pm"] = pm
                qs.append(torch.bmm(x["mat"].transpose(1, 2), pm))
            qcat = torch.cat([q.view(-1) for q in qs])
            self._allreduce(qcat, "powersgd_q_bytes")
            qcat.div_(world)
            off = 0
            for x, qn in zip(act, qs):
                x["q"] = qcat[off: off + qn.numel()].view(qn.shape).clone()
                off += qn.numel()
        for x in live:
            torch.bmm(x["pm"], x["q"].transpose(1, 2), out=x["mat"])
            self._err[x["name"]] = x["acc"] - x["flat"]
            self._q[x["name"]] = x["q"]

    def _finish_step(self) -> None:
        rec = {"step": self.step, "bytes": self._cur["allreduce_bytes"] + self._cur["allgather_bytes"],
               "hook_time_s": self._step_time}
        rec.update(self._cur)
        ph = self.schedule.phase_at(self.step)
        rec["phase"] = ph.label if ph is not None else None
        self.bytes_sent_per_step[self.step] = rec["bytes"]
        if self.check_bytes:
            want = self.predicted_bytes_per_step(self.step)
            if rec["bytes"] != want:
                raise RuntimeError(f"ScheduleHook: step {self.step} sent {rec['bytes']} bytes, the schedule's wire "
                                   f"plans say {want} (a defect: please report it)")
        self.log.append(rec)
        if self._log_path is not None:
            with open(self._log_path, "a") as f:
                f.write(json.dumps(rec) + "\n")
        self._cur = defaultdict(int)
        self._step_time = 0.0
        self.step += 1


def _scatter(src: torch.Tensor, dests: Sequence[torch.Tensor]) -> None:
    off = 0
    for d in dests:
        d.copy_(src[off: off + d.numel()])
        off += d.numel()


def _ddp_hook(state: ScheduleHook, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    return state.run_async(bucket)
