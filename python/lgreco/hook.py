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
QSGD Elias, DGC's sampled selection) are padded to their wire plan's fixed size.

Asynchronous by default, as DDP's own allreduce and torch's powerSGD_hook are: the hook returns a
future at once, and a bucket's rounds are chained on the completion of the previous one (round 1:
every collective of the bucket that needs nothing else — dense, fp16, bf16, random-k, PowerSGD P,
the allgather of payloads; then PowerSGD: orthogonalise P, Q = Mᵀ·P, allreduce Q; a further P and Q
per extra power iteration; decoding and error feedback when a round's collectives complete), so
backward keeps computing later buckets while an earlier bucket's collectives are in flight. Every
rank must issue the same collectives in the same order (gloo matches them by sequence), so a bucket
issues its rounds only while it holds the turn: buckets take turns in the order DDP hands them to
the hook, and a bucket passes the turn on once it has issued its last collective (with lanes=k,
bucket i takes turns on process group i mod k, one turn order per group). A bucket's
arithmetic is written once (a generator of rounds): `asynchronous=False` runs the same rounds inside
the hook call, waiting for each, with bit-identical results. `bytes_sent_per_step[step]` is the number of bytes this
rank handed to collectives as its own contribution during that step; it must equal
predicted_bytes_per_step(step) (Σ of the wire plans at that step; the phase's predicted bytes except
during a DGC warm-up) — a difference raises, it would be a defect.
Random draws: random-k indices use torch.Generator seeded by (seed, step, layer); stochastic
rounding by (seed, step, layer, rank); PowerSGD's first Q by Philox normal_at(seed, stream_of(step,
layer), i·r + j), or, with q_init="torch", exactly as torch's powerSGD_hook seeds it.
"""

import atexit
import ctypes
import json
import threading
import time
import weakref
from collections import defaultdict, deque
from typing import Any, Callable, Dict, List, Optional, Sequence

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


class TorchComm:
    """The hook's transport: asynchronous collectives on a torch.distributed process group, each
    returning a torch Future. Benchmarks and tests wrap it (e.g. to add a network delay)."""

    def __init__(self, group=None):
        self.group = group

    def world_size(self) -> int:
        return dist.get_world_size(self.group)

    def rank(self) -> int:
        return dist.get_rank(self.group)

    def backend(self) -> str:
        return dist.get_backend(self.group)

    def allreduce(self, t: torch.Tensor) -> torch.futures.Future:
        """Sum over ranks, in place."""
        return dist.all_reduce(t, group=self.group, async_op=True).get_future()

    def allgather(self, outs: List[torch.Tensor], t: torch.Tensor) -> torch.futures.Future:
        """Every rank's `t` into outs[rank]."""
        return dist.all_gather(outs, t, group=self.group, async_op=True).get_future()

    def broadcast(self, t: torch.Tensor, src: int = 0) -> torch.futures.Future:
        """Rank `src`'s `t` into every rank's `t`."""
        return dist.broadcast(t, src=src, group=self.group, async_op=True).get_future()


def _lanes(comm, lanes: int, group) -> List[TorchComm]:
    if comm is not None:
        out = list(comm) if isinstance(comm, (list, tuple)) else [comm]
        if not out:
            raise ScheduleError("ScheduleHook: comm is an empty list (give one transport per lane)")
        return out
    if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1:
        raise ScheduleError(f"ScheduleHook: lanes = {lanes!r}, expected an integer >= 1")
    if lanes == 1:
        return [TorchComm(group)]
    if group is not None:
        raise ScheduleError("ScheduleHook: lanes > 1 is only available on the default process group "
                            "(pass comm=[TorchComm(g) for g in your groups] otherwise)")
    # Lane 0 is the default group itself; the others are new groups of the same ranks (created here, so
    # every rank must construct the hook: it does, DDP needs it on every rank).
    ranks = list(range(dist.get_world_size()))
    return [TorchComm(None)] + [TorchComm(dist.new_group(ranks)) for _ in range(lanes - 1)]


class _Op:
    """One collective of a round: what it sends and under which byte kind it is counted."""

    __slots__ = ("kind", "tensor", "label", "outs")

    def __init__(self, kind: str, tensor: torch.Tensor, label: str, outs: Optional[List[torch.Tensor]] = None):
        self.kind, self.tensor, self.label, self.outs = kind, tensor, label, outs


class _StepRecord:
    """What one training step sent, filled by the buckets' chains (on any thread, under the lock)."""

    def __init__(self, step: int):
        self.step = step
        self.counts: Dict[str, int] = defaultdict(int)
        self.pending = 0          # chains started and not finished
        self.closed = False       # the last bucket of the step has been handed to the hook
        self.finished = False
        self.hook_s = 0.0         # time inside the hook call (the thread running backward)
        self.chain_s = 0.0        # time computing in the buckets' rounds (any thread)
        self.held: list = []      # every tensor given to a collective (see _InFlight)


class _InFlight:
    """What interpreter exit must wait for, or keep, so that a run that finished exits with 0.

    A bucket's rounds resume in a completion callback on the transport's thread (gloo's), and the
    bucket's future completes inside it: DDP's backward, and then the script, may go on and reach
    interpreter exit while that thread is still leaving the callback, or while gloo's finished work
    still holds the tensors the hook gave it. A thread that needs the GIL during finalisation (to
    leave the callback, or to free a tensor whose Python object the work kept alive) is ended by
    pthread_exit, whose unwinding through torch's noexcept code aborts the process ("terminate called
    without an active exception", exit -6). So (1) a callback counts from its first call until torch
    drops it (its __del__, under the GIL), and exit waits for the count to reach zero; (2) every hook
    keeps the tensors of its latest step's collectives (dropped when the next step starts, when gloo
    has long released them), and at exit those are kept for good: their Python objects then outlive
    gloo's references, and gloo's last release frees nothing; (3) the release that brings the count
    to zero runs inside torch's frames on the transport's thread, which may still need the GIL after
    it (to drop the future's Python wrapper, as far as we can tell): exit then pauses briefly with the
    GIL released. Without the pause a rank of tests/python/test_py_async_hook.py's exit test aborted
    once in 27 runs here (in one of 3 full-suite runs, none of 24 runs alone); this narrows the window
    to a thread descheduled for longer than the pause, it does not close it."""

    def __init__(self):
        self._cond = threading.Condition()
        self._n = 0
        self.hooks: "weakref.WeakSet[ScheduleHook]" = weakref.WeakSet()
        self._kept: list = []
        self._used = False

    def enter(self) -> None:
        with self._cond:
            self._n += 1
            self._used = True

    def leave(self) -> None:
        with self._cond:
            self._n -= 1
            if self._n == 0:
                self._cond.notify_all()

    def at_exit(self, timeout_s: float = 30.0, grace_s: float = 0.1) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._n == 0, timeout=timeout_s)
            used = self._used
        if used:
            time.sleep(grace_s)  # (3): the last releasing thread leaves torch's frames
        for hook in list(self.hooks):
            self._kept.append(hook._held)
        # One reference Python never returns: finalisation clears this module, not the list.
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(self._kept))


_IN_FLIGHT = _InFlight()
atexit.register(_IN_FLIGHT.at_exit)


class _Callback:
    """A done-callback for torch, counted in _IN_FLIGHT from its call until torch releases it."""

    __slots__ = ("_fn", "_entered")

    def __init__(self, fn: Callable[[torch.futures.Future], None]):
        self._fn = fn
        self._entered = False

    def __call__(self, fut: torch.futures.Future) -> None:
        if not self._entered:
            self._entered = True
            _IN_FLIGHT.enter()
        self._fn(fut)

    def __del__(self):
        if self._entered:
            _IN_FLIGHT.leave()


class _Sequencer:
    """Gives buckets the turn to issue collectives one after the other, in the order they were
    submitted, so that every rank issues the same collectives in the same order."""

    def __init__(self):
        self._lock = threading.Lock()
        self._queue: deque = deque()
        self._busy = False

    def submit(self, chain: "_Chain") -> None:
        with self._lock:
            if self._busy:
                self._queue.append(chain)
                return
            self._busy = True
        chain.start()

    def release(self) -> None:
        with self._lock:
            if not self._queue:
                self._busy = False
                return
            nxt = self._queue.popleft()
        nxt.start()


class _Chain:
    """Drives one bucket's generator of rounds: issues a round's collectives, then resumes the
    generator when they complete (asynchronous: from the completion callback; synchronous: after
    waiting). The generator's return value (the bucket buffer) becomes the future's result."""

    def __init__(self, hook: "ScheduleHook", gen, rec: _StepRecord, comm: "TorchComm", sequencer: Optional[_Sequencer]):
        self.hook, self.gen, self.rec, self.comm, self.sequencer = hook, gen, rec, comm, sequencer
        self.future: torch.futures.Future = torch.futures.Future()
        self._released = sequencer is None

    def _release(self) -> None:
        if not self._released:
            self._released = True
            self.sequencer.release()

    def start(self) -> None:
        self._advance()

    def _fail(self, e: BaseException) -> None:
        self._release()
        if not self.hook.asynchronous:
            raise e
        self.future.set_exception(e)

    def _advance(self) -> None:
        hook = self.hook
        while True:
            t0 = time.perf_counter()
            try:
                ops, last = next(self.gen)
            except StopIteration as stop:
                hook._add_chain_time(self.rec, time.perf_counter() - t0)
                self._release()
                try:
                    hook._chain_done(self.rec)
                except BaseException as e:  # noqa: BLE001 - the step's byte check: a defect, delivered to DDP
                    self._fail(e)
                    return
                self.future.set_result(stop.value)
                return
            except BaseException as e:  # noqa: BLE001 - anything the bucket's arithmetic raised
                hook._add_chain_time(self.rec, time.perf_counter() - t0)
                self._fail(e)
                return
            hook._add_chain_time(self.rec, time.perf_counter() - t0)
            try:
                futs = [hook._issue(op, self.rec, self.comm) for op in ops]
            except BaseException as e:  # noqa: BLE001
                self._fail(e)
                return
            if last:
                self._release()
            if hook.asynchronous:
                torch.futures.collect_all(futs).add_done_callback(_Callback(self._resume))
                return
            for f in futs:
                f.wait()

    def _resume(self, fut: torch.futures.Future) -> None:
        try:
            for f in fut.value():
                f.value()  # raises the collective's error, if any
        except BaseException as e:  # noqa: BLE001
            self._fail(e)
            return
        self._advance()


class ScheduleHook:
    """Applies a Schedule to a DDP model; see the module docstring for the exact protocol.

    `asynchronous` (default True): the hook returns futures and chains each bucket's rounds on the
    completion of the previous one (False: every round inside the hook call; the same results bit for
    bit). `lanes`: process groups the buckets take turns on (bucket i of a step on lane i mod lanes;
    lanes > 1 creates that many groups of the default group's ranks, so that bucket i + 1 can issue
    while bucket i's later rounds are pending). `comm`: the transport, one TorchComm or a list of
    them (one per lane; default TorchComm(process_group))."""

    def __init__(self, model: torch.nn.Module, schedule: Schedule | str, *, process_group=None,
                 start_step: int = 0, q_init: str = "philox", check_predicted: bool = True,
                 log_path: Optional[str] = None, asynchronous: bool = True,
                 comm: Optional[TorchComm | Sequence[TorchComm]] = None, lanes: int = 1):
        if isinstance(schedule, str):
            schedule = Schedule.load(schedule)
        if q_init not in ("philox", "torch"):
            raise ScheduleError(f"q_init = {q_init!r}, expected 'philox' or 'torch'")
        self.schedule = schedule
        self.group = process_group
        self.lanes = _lanes(comm, lanes, process_group)
        self.comm = self.lanes[0]
        self.asynchronous = bool(asynchronous)
        self.step = start_step
        self.q_init = q_init
        inner = _unwrap(model)
        self.names: List[str] = [n for n, _ in inner.named_parameters()]
        self.shapes: Dict[str, tuple] = {n: tuple(p.shape) for n, p in inner.named_parameters()}
        self.layer_index: Dict[str, int] = {n: i for i, n in enumerate(self.names)}
        self._name_by_id = {id(p): n for n, p in inner.named_parameters()}
        self._name_by_ptr = {p.data_ptr(): n for n, p in inner.named_parameters()}
        schedule.check_parameters(self.shapes)
        self.check_bytes = check_predicted
        self._check_predictions(schedule)
        self._err: Dict[str, torch.Tensor] = {}
        self._vel: Dict[str, torch.Tensor] = {}  # DGC velocity u of momentum top-k layers
        self._q: Dict[str, torch.Tensor] = {}
        self._torch_rng = np.random.RandomState(0)
        self._torch_rng_seeded = False
        self._torch_init_buckets: set = set()
        self.bytes_sent_per_step: Dict[int, int] = {}
        self.log: List[Dict[str, Any]] = []
        self.busy_s = 0.0  # total wall time inside the hook calls (the recorder subtracts it)
        self.bucket_names: Dict[int, List[str]] = {}  # bucket index → names, as DDP built them
        self._log_path = log_path
        self._lock = threading.Lock()
        self._sequencers = [_Sequencer() if self.asynchronous else None for _ in self.lanes]
        self._bucket_in_step = 0
        self._rec: Optional[_StepRecord] = None
        self._world_size: Optional[int] = None
        # Called with (step, name, acc) for every parameter of every bucket, where acc is the
        # error-feedback-corrected gradient about to be compressed (OnlineHook measures on it).
        self._observe: Optional[Callable[[int, str, torch.Tensor], None]] = None
        self._held: list = []
        _IN_FLIGHT.hooks.add(self)

    def _check_predictions(self, schedule: Schedule) -> None:
        mism = schedule.prediction_mismatches()
        if self.check_bytes and mism:
            i, pred, got = mism[0]
            raise ScheduleError(f"{schedule.source}: phases[{i}].predicted.bytes_per_step = {pred}, but its wire "
                                f"plans sum to {got}")

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
        if self._world_size is None:
            self._world_size = self.comm.world_size()
        return self._world_size

    def _rank(self) -> int:
        return self.comm.rank()

    def _issue(self, op: _Op, rec: _StepRecord, comm: TorchComm) -> torch.futures.Future:
        nbytes = op.tensor.numel() * op.tensor.element_size()
        with self._lock:
            rec.counts["allreduce_bytes" if op.kind == "allreduce" else "allgather_bytes"] += nbytes
            rec.counts[op.label] += nbytes
            rec.held.append((op.tensor, op.outs))
        if op.kind == "allreduce":
            return comm.allreduce(op.tensor)
        return comm.allgather(op.outs, op.tensor)

    def _allgather_op(self, t: torch.Tensor, label: str) -> _Op:
        return _Op("allgather", t, label, [torch.empty_like(t) for _ in range(self._world())])

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

    def _init_q(self, name: str, m: int, r: int, p: Dict[str, Any], step: int) -> torch.Tensor:
        return philox_q(p["seed"], step, self.layer_index[name], m, r)

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

    def _before_step(self, step: int) -> None:
        """Called on the thread running backward when the first bucket of `step` reaches the hook,
        before anything of that step is issued (every collective of the previous step has completed:
        DDP waited for them). OnlineHook re-plans here."""

    # ------------------------------------------------------------------ the hook
    def run_async(self, bucket) -> torch.futures.Future:
        """The DDP hook: returns a future of the bucket's averaged buffer (see the module docstring)."""
        t0 = time.perf_counter()
        if self._rec is None:
            self._before_step(self.step)
            self._rec = _StepRecord(self.step)
            self._held = self._rec.held  # the previous step's tensors go (see _InFlight)
        rec = self._rec
        step = self.step
        names = self._names_of(bucket)
        self.bucket_names[bucket.index()] = names
        buf = bucket.buffer()
        fast = all(self.schedule.method_at(step, n).name == "none" and n not in self._err and n not in self._vel
                   for n in names)
        if fast:
            gen = self._rounds_plain(step, buf, bucket.gradients() if self._observe is not None else [], names)
        else:
            if self.q_init == "torch":
                self._torch_compat_prepare(bucket.index(), names, step)
            gen = self._rounds(step, buf, list(bucket.gradients()), names)
        is_last = bucket.is_last()
        lane = self._bucket_in_step % len(self.lanes)
        self._bucket_in_step = 0 if is_last else self._bucket_in_step + 1
        sequencer = self._sequencers[lane]
        chain = _Chain(self, gen, rec, self.lanes[lane], sequencer)
        with self._lock:
            rec.pending += 1
        try:
            if sequencer is not None:
                sequencer.submit(chain)
            else:
                chain.start()
        finally:
            dt = time.perf_counter() - t0
            self.busy_s += dt
            with self._lock:
                rec.hook_s += dt
        if is_last:
            self._rec = None
            self.step += 1
            with self._lock:
                rec.closed = True
                finish = rec.pending == 0 and not rec.finished
                if finish:
                    rec.finished = True
            if finish:
                self._finish_step(rec)
        return chain.future

    def _torch_compat_prepare(self, bucket_index: int, names: List[str], step: int) -> None:
        items, seeds = [], []
        for name in names:
            m = self.schedule.method_at(step, name)
            if m.name != "powersgd":
                continue
            seeds.append(m.params["seed"])
            view = self._wire(step, name)["view"]
            if view["compressed"] and name not in self._q:
                items.append((name, (view["n"], view["m"], view["rank"])))
        if seeds:
            self._torch_compat_init(bucket_index, seeds[0], items)

    def _add_chain_time(self, rec: _StepRecord, dt: float) -> None:
        with self._lock:
            rec.chain_s += dt

    def _chain_done(self, rec: _StepRecord) -> None:
        with self._lock:
            rec.pending -= 1
            finish = rec.closed and rec.pending == 0 and not rec.finished
            if finish:
                rec.finished = True
        if finish:
            self._finish_step(rec)

    def _rounds_plain(self, step: int, buf: torch.Tensor, grads: List[torch.Tensor], names: List[str]):
        """A bucket of "none" parameters with no residual: averaged exactly as torch's allreduce_hook
        does (÷ world, then one allreduce)."""
        for name, g in zip(names, grads):
            self._observe(step, name, g.view(-1))
        buf.div_(self._world())
        yield [_Op("allreduce", buf, "dense_bytes")], True
        return buf

    def _rounds(self, step: int, buf: torch.Tensor, grads: List[torch.Tensor], names: List[str]):
        """The bucket's arithmetic as a generator of rounds: each `yield (ops, last)` hands the driver
        the collectives to issue together (and whether they are the bucket's last); the code after a
        yield runs once they have completed. Returns the bucket buffer."""
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
            if self._observe is not None:
                self._observe(step, name, flat)
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

        # Round 1: every collective that needs nothing but the local tensors, in a fixed order.
        ops: List[_Op] = []
        if dense:
            dense_cat = torch.cat(dense)
            ops.append(_Op("allreduce", dense_cat, "dense_bytes"))
        if half:
            half_flats = [f for _, f in half]
            acc = torch.cat(half_flats)
            half_c = acc.to(torch.float16)
            self._store_err(half, acc - half_c.to(torch.float32))
            half_c.div_(world)
            ops.append(_Op("allreduce", half_c, "fp16_bytes"))
        bf16_gather = False
        if bf16:
            bf16_flats = [f for _, f in bf16]
            bf16_acc = torch.cat(bf16_flats)
            bf16_c = bf16_acc.to(torch.bfloat16)
            self._store_err(bf16, bf16_acc - bf16_c.to(torch.float32))
            bf16_gather = self.comm.backend() == "gloo"
            if bf16_gather:
                bf16_op = self._allgather_op(bf16_c.view(torch.uint8), "bf16_bytes")
                ops.append(bf16_op)
            else:
                bf16_c.div_(world)
                ops.append(_Op("allreduce", bf16_c, "bf16_bytes"))
        if rk:
            rk_idxs, vals = [], []
            for name, flat, m in rk:
                n = flat.numel()
                g = torch.Generator().manual_seed(mix_seed(self.schedule.seed, step, self.layer_index[name], 2))
                idx = torch.randperm(n, generator=g)[: int(self._wire(step, name)["k"])]
                rk_idxs.append(idx)
                vals.append(flat[idx])
            rk_cat = torch.cat(vals)
            ops.append(_Op("allreduce", rk_cat, "randomk_bytes"))
        live = self._powersgd_start(psgd, step) if psgd else []
        rounds = max((x["p"]["power_iterations"] for x in live), default=0)
        if live:
            act, pcat = self._powersgd_p(live, 0)
            ops.append(_Op("allreduce", pcat, "powersgd_p_bytes"))
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
            ag_op = self._allgather_op(torch.cat(payloads), "allgather_payload_bytes")
            ops.append(ag_op)
        if not ops:
            return buf
        yield ops, rounds == 0

        # Round 1 has completed.
        if dense:
            dense_cat.div_(world)
            _scatter(dense_cat, dense)
        if half:
            _scatter(half_c.to(torch.float32), half_flats)
        if bf16:
            if bf16_gather:
                total = torch.zeros_like(bf16_acc)
                for part in bf16_op.outs:
                    total += part.view(torch.bfloat16).to(torch.float32)
                _scatter(total.div_(world), bf16_flats)
            else:
                _scatter(bf16_c.to(torch.float32), bf16_flats)
        if rk:
            rk_cat.div_(world)
            off = 0
            for (name, flat, _), idx in zip(rk, rk_idxs):
                e = flat.clone()
                e[idx] = 0.0
                self._err[name] = e
                flat.zero_()
                flat[idx] = rk_cat[off: off + idx.numel()]
                off += idx.numel()
        if ag:
            for (name, flat, m), dec in zip(ag, locals_):
                self._err[name] = flat - dec
            sums = [torch.zeros(f.numel()) for _, f, _ in ag]
            for part in ag_op.outs:  # rank order: identical sums on every rank
                off = 0
                for j, (name, flat, m) in enumerate(ag):
                    sums[j] += compressors.decode(m, wires[j], part[off: off + sizes[j]], flat.numel())
                    off += sizes[j]
            for (name, flat, m), s in zip(ag, sums):
                flat.copy_(s.div_(world))

        # PowerSGD: P of the first iteration has been summed; Q, then further iterations.
        for it in range(rounds):
            if it > 0:
                act, pcat = self._powersgd_p(live, it)
                yield [_Op("allreduce", pcat, "powersgd_p_bytes")], False
            qcat = self._powersgd_q(act, pcat)
            yield [_Op("allreduce", qcat, "powersgd_q_bytes")], it == rounds - 1
            qcat.div_(world)
            off = 0
            for x in act:
                x["q"] = qcat[off: off + x["qn"]].view(x["qshape"]).clone()
                off += x["qn"]
        for x in live:
            torch.bmm(x["pm"], x["q"].transpose(1, 2), out=x["mat"])
            self._err[x["name"]] = x["acc"] - x["flat"]
            self._q[x["name"]] = x["q"]
        return buf

    def _store_err(self, items, err: torch.Tensor) -> None:
        off = 0
        for name, flat in items:
            self._err[name] = err[off: off + flat.numel()].clone()
            off += flat.numel()

    # PowerSGD on the mean of the ranks' matrices M (acc = g + e), per layer: for each of the
    # layer's power_iterations: orthogonalise Q; P = allreduce(M·Q) (a sum); orthogonalise P;
    # Q = allreduce(Mᵀ·P) / world. Then M̂ = P·Qᵀ, e = acc − M̂, and Q warm-starts the next step.
    # Layers of one bucket share each round's two allreduces; a layer with fewer iterations drops out
    # of the later rounds, so the bytes are power_iterations × (P + Q).
    def _powersgd_start(self, items, step: int) -> List[Dict[str, Any]]:
        live = []
        for name, flat, n, m, r, p in items:
            acc = flat.clone()
            if r == 0:  # send nothing: everything stays in the residual
                self._err[name] = acc
                flat.zero_()
                continue
            q = self._q.get(name)
            if q is None or not p["warm_start"]:
                q = self._init_q(name, m, r, p, step)
            elif q.shape[2] != r:
                q = resize_q(q, r, p["seed"], step, self.layer_index[name])
            live.append({"name": name, "flat": flat, "acc": acc, "mat": flat.view(1, n, m), "q": q, "p": p,
                         "pm": None})
        return live

    def _powersgd_p(self, live, it: int):
        act = [x for x in live if x["p"]["power_iterations"] > it]
        pms = []
        for x in act:
            orthogonalize(x["q"], x["p"]["orthogonalization"])
            pms.append(torch.bmm(x["mat"], x["q"]))
        for x, pm in zip(act, pms):
            x["pshape"], x["pn"] = pm.shape, pm.numel()
        return act, torch.cat([pm.view(-1) for pm in pms])

    def _powersgd_q(self, act, pcat: torch.Tensor) -> torch.Tensor:
        off = 0
        qs = []
        for x in act:
            pm = pcat[off: off + x["pn"]].view(x["pshape"])
            off += x["pn"]
            orthogonalize(pm, x["p"]["orthogonalization"])
            x["pm"] = pm
            qn = torch.bmm(x["mat"].transpose(1, 2), pm)
            x["qshape"], x["qn"] = qn.shape, qn.numel()
            qs.append(qn)
        return torch.cat([q.view(-1) for q in qs])

    def _finish_step(self, rec: _StepRecord) -> None:
        out = {"step": rec.step, "bytes": rec.counts["allreduce_bytes"] + rec.counts["allgather_bytes"],
               "hook_time_s": rec.hook_s, "chain_time_s": rec.chain_s}
        out.update(rec.counts)
        ph = self.schedule.phase_at(rec.step)
        out["phase"] = ph.label if ph is not None else None
        self.bytes_sent_per_step[rec.step] = out["bytes"]
        self.log.append(out)
        if self._log_path is not None:
            with open(self._log_path, "a") as f:
                f.write(json.dumps(out) + "\n")
        if self.check_bytes:
            want = self.predicted_bytes_per_step(rec.step)
            if out["bytes"] != want:
                raise RuntimeError(f"ScheduleHook: step {rec.step} sent {out['bytes']} bytes, the schedule's wire "
                                   f"plans say {want} (a defect: please report it)")


def _scatter(src: torch.Tensor, dests: Sequence[torch.Tensor]) -> None:
    off = 0
    for d in dests:
        d.copy_(src[off: off + d.numel()])
        off += d.numel()


def _ddp_hook(state: ScheduleHook, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    return state.run_async(bucket)
