"""Multi-process DDP workers shared by the test_py_* tests (2 processes, gloo, file rendezvous).

`run_ddp(task, world, *args)` spawns `world` processes that run `task(rank, world, *args)` inside an
initialised gloo process group and returns the per-rank results (anything torch.save can store).
"""
from __future__ import annotations

import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TinyNet(nn.Module):
    """Conv (3-D weight), two linears, a LayerNorm: every matrix-view case of the contract."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3)
        self.fc1 = nn.Linear(112, 64)
        self.norm = nn.LayerNorm(64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        h = torch.relu(self.conv(x)).flatten(1)
        return self.fc2(torch.relu(self.norm(self.fc1(h))))


def batch(rank: int, step: int):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(16, 4, 16, generator=g), torch.randint(0, 10, (16,), generator=g)


def shapes() -> dict:
    return {n: tuple(p.shape) for n, p in TinyNet().named_parameters()}


def _entry(rank, world, tmp, task, args):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=world)
    try:
        out = task(rank, world, *args)
        torch.save(out, os.path.join(tmp, f"result{rank}.pt"))
    finally:
        dist.destroy_process_group()


def run_ddp(task, world: int = 2, *args):
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_entry, args=(world, tmp, task, args), nprocs=world, join=True)
        return [torch.load(os.path.join(tmp, f"result{r}.pt")) for r in range(world)]


FIRST_BUCKET_BYTES = 4096  # small caps so that TinyNet (32 KB of gradients) spans several buckets
BUCKET_CAP_MB = 0.02


def train(rank, steps, attach=None, bucket_cap_mb=BUCKET_CAP_MB, lr=0.1, first_bucket_bytes=FIRST_BUCKET_BYTES):
    """SGD on TinyNet under DDP; `attach(ddp)` registers a hook and returns it (or None)."""
    dist._DEFAULT_FIRST_BUCKET_BYTES = first_bucket_bytes
    torch.manual_seed(0)
    model = TinyNet()
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb)
    hook = attach(ddp) if attach else None
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for step in range(steps):
        x, y = batch(rank, step)
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    return params, hook


def task_none_vs_plain(rank, world, steps, schedule_doc):
    from lgreco import Schedule, ScheduleHook

    plain, _ = train(rank, steps)
    hooked, hook = train(rank, steps, lambda d: ScheduleHook(d, Schedule(schedule_doc)).register(d))
    return {"plain": plain, "hooked": hooked, "bytes": hook.bytes_sent_per_step,
            "buckets": hook.bucket_names}


def task_powersgd_vs_torch(rank, world, steps, r, start, schedule_doc):
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps

    from lgreco import Schedule, ScheduleHook

    def torch_hook(d):
        state = ps.PowerSGDState(process_group=None, matrix_approximation_rank=r,
                                 start_powerSGD_iter=start, random_seed=0)
        d.register_comm_hook(state, ps.powerSGD_hook)

    # One bucket: torch 1.13's powerSGD_hook waits on a collective inside a gloo callback, which
    # deadlocks when two buckets are in flight.
    one = dict(first_bucket_bytes=1 << 20, bucket_cap_mb=25)
    ref, _ = train(rank, steps, torch_hook, **one)
    ours, hook = train(rank, steps, lambda d: ScheduleHook(d, Schedule(schedule_doc), q_init="torch").register(d),
                       **one)
    plain, _ = train(rank, steps, **one)
    return {"torch": ref, "ours": ours, "plain": plain, "bytes": hook.bytes_sent_per_step}


def task_bytes(rank, world, steps, docs):
    from lgreco import Schedule, ScheduleHook

    out = []
    for doc in docs:
        params, hook = train(rank, steps, lambda d: ScheduleHook(d, Schedule(doc)).register(d))
        out.append({"params": params, "bytes": hook.bytes_sent_per_step, "log": hook.log})
    return out


def task_record(rank, world, path, per_rank, steps=4):
    """Records every other step of TinyNet under DDP (several buckets) with a ScheduleHook attached."""
    from lgreco import Schedule, ScheduleHook, TraceRecorder, make_schedule

    dist._DEFAULT_FIRST_BUCKET_BYTES = FIRST_BUCKET_BYTES
    torch.manual_seed(0)
    model = TinyNet()
    ddp = DDP(model, bucket_cap_mb=BUCKET_CAP_MB)
    sh = {n: tuple(p.shape) for n, p in model.named_parameters()}
    doc = make_schedule([(0, None, "uniform", {n: {"method": "none"} for n in sh})], sh, world_size=world)
    hook = ScheduleHook(ddp, Schedule(doc)).register(ddp)
    rec = TraceRecorder(ddp, path, every=2, burst=1, dtype="float32", hook=hook, per_rank=per_rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        rec.begin_step(step)
        x, y = batch(rank, step)
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        rec.end_step(loss=loss.item())
        opt.step()
    rec.close()
    observed = rec.buckets()
    rec.hook = None  # same recorder, now forced onto DDP's rule
    rule = rec.buckets()
    return {"observed": observed, "rule": rule, "names": [n for n, _ in rec.params],
            "hook_buckets": hook.bucket_names}


def task_one_step(rank, world, docs, lr=0.1):
    """One SGD step without a hook and with each schedule: p1 = p0 − lr·(synchronised gradient)."""
    from lgreco import Schedule, ScheduleHook

    plain, _ = train(rank, 1, lr=lr)
    hooked = [train(rank, 1, lambda d, doc=doc: ScheduleHook(d, Schedule(doc)).register(d), lr=lr)[0] for doc in docs]
    return {"plain": plain, "hooked": hooked}


def task_capture(rank, world, steps, schedule_doc, lr=0.1, start_step=0):
    """SGD on TinyNet under DDP with a ScheduleHook, recording per step the local gradient of every
    parameter as it enters the hook and the synchronised gradient DDP leaves in `.grad`, plus the
    hook's final per-layer state (residual, DGC velocity) and bytes."""
    from lgreco import Schedule, ScheduleHook

    dist._DEFAULT_FIRST_BUCKET_BYTES = FIRST_BUCKET_BYTES
    torch.manual_seed(0)
    model = TinyNet()
    ddp = DDP(model, bucket_cap_mb=BUCKET_CAP_MB)
    hook = ScheduleHook(ddp, Schedule(schedule_doc), start_step=start_step)
    name_of = {id(p): n for n, p in model.named_parameters()}
    local = [dict() for _ in range(steps)]
    cur = [0]

    def capture(state, bucket):
        for p, g in zip(bucket.parameters(), bucket.gradients()):
            local[cur[0]][name_of[id(p)]] = g.detach().clone().view(-1)
        return state.run_async(bucket)

    ddp.register_comm_hook(hook, capture)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    synced = []
    for step in range(steps):
        cur[0] = step
        x, y = batch(rank, step)
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        synced.append({n: p.grad.detach().clone().view(-1) for n, p in model.named_parameters()})
        opt.step()
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    return {"local": local, "synced": synced, "params": params, "bytes": hook.bytes_sent_per_step,
            "predicted": {s: hook.predicted_bytes_per_step(s) for s in hook.bytes_sent_per_step},
            "err": {n: t.clone() for n, t in hook._err.items()}, "vel": {n: t.clone() for n, t in hook._vel.items()}}


class JitterComm:
    """The hook's transport with every collective's completion delivered after a random delay
    (0–`max_ms` ms, seeded): later rounds and buckets complete out of issue order."""

    def __init__(self, seed: int, max_ms: float = 4.0):
        import random

        from lgreco.hook import TorchComm

        self.inner = TorchComm()
        self.rng = random.Random(seed)
        self.max_s = max_ms / 1000.0

    def world_size(self):
        return self.inner.world_size()

    def rank(self):
        return self.inner.rank()

    def backend(self):
        return self.inner.backend()

    def _later(self, fut):
        import threading

        out = torch.futures.Future()
        delay = self.rng.uniform(0.0, self.max_s)

        def deliver(f):
            def fire():
                try:
                    out.set_result(f.value())
                except Exception as e:  # noqa: BLE001 - handed on to the waiting chain
                    out.set_exception(e)
            threading.Timer(delay, fire).start()
        fut.add_done_callback(deliver)
        return out

    def allreduce(self, t):
        return self._later(self.inner.allreduce(t))

    def allgather(self, outs, t):
        return self._later(self.inner.allgather(outs, t))

    def broadcast(self, t, src=0):
        return self._later(self.inner.broadcast(t, src))


class GateComm:
    """The hook's transport with completions held back until `open()`: while closed, no collective
    the hook issued is seen as complete."""

    def __init__(self):
        import threading

        from lgreco.hook import TorchComm

        self.inner = TorchComm()
        self.lock = threading.Lock()
        self.closed = True
        self.held = []
        self.completed = 0

    def world_size(self):
        return self.inner.world_size()

    def rank(self):
        return self.inner.rank()

    def backend(self):
        return self.inner.backend()

    def close(self):
        with self.lock:
            self.closed = True

    def open(self):
        with self.lock:
            self.closed = False
            held, self.held = self.held, []
        for out, f in held:
            self._deliver(out, f)

    def _deliver(self, out, f):
        with self.lock:
            self.completed += 1
        try:
            out.set_result(f.value())
        except Exception as e:  # noqa: BLE001
            out.set_exception(e)

    def _gate(self, fut):
        out = torch.futures.Future()

        def arrived(f):
            with self.lock:
                if self.closed:
                    self.held.append((out, f))
                    return
            self._deliver(out, f)
        fut.add_done_callback(arrived)
        return out

    def allreduce(self, t):
        return self._gate(self.inner.allreduce(t))

    def allgather(self, outs, t):
        return self._gate(self.inner.allgather(outs, t))

    def broadcast(self, t, src=0):
        return self._gate(self.inner.broadcast(t, src))


def _state(hook):
    return {"err": {n: t.clone() for n, t in hook._err.items()}, "vel": {n: t.clone() for n, t in hook._vel.items()},
            "q": {n: t.clone() for n, t in hook._q.items()}}


def task_async_vs_sync(rank, world, steps, docs):
    """Per schedule: training with the hook's rounds run synchronously, asynchronously, asynchronously
    with collectives completing out of order (JitterComm), and asynchronously on two lanes."""
    from lgreco import Schedule, ScheduleHook

    out = []
    for k, doc in enumerate(docs):
        runs = {}
        for mode in ("sync", "async", "jitter", "lanes"):
            def attach(d, mode=mode):
                comm = JitterComm(seed=1000 * k + rank) if mode == "jitter" else None
                return ScheduleHook(d, Schedule(doc), asynchronous=mode != "sync", comm=comm,
                                    lanes=2 if mode == "lanes" else 1).register(d)
            params, hook = train(rank, steps, attach)
            runs[mode] = {"params": params, "bytes": hook.bytes_sent_per_step, "state": _state(hook)}
        out.append(runs)
    return out


def task_gate(rank, world, steps, schedule_doc):
    """Asynchronous hook behind a GateComm that releases the step's collectives only once the last
    bucket has reached the hook: records, per step, how many buckets reached the hook and how many
    collectives had completed meanwhile (none can have: the gate is closed)."""
    from lgreco import Schedule, ScheduleHook

    gate = GateComm()
    seen = []

    def attach(d):
        hook = ScheduleHook(d, Schedule(schedule_doc), comm=gate)

        def fn(state, bucket):
            if not seen or seen[-1]["closed"]:
                gate.close()
                seen.append({"buckets": 0, "completed_before": gate.completed, "closed": False, "futures": []})
            fut = state.run_async(bucket)
            cur = seen[-1]
            cur["buckets"] += 1
            cur["futures"].append(fut)
            if bucket.is_last():
                cur["done_at_last_hook"] = sum(f.done() for f in cur["futures"])
                cur["completed_at_last_hook"] = gate.completed - cur["completed_before"]
                cur["closed"] = True
                gate.open()
            return fut

        d.register_comm_hook(hook, fn)
        return hook

    params, hook = train(rank, steps, attach)
    ref, _ = train(rank, steps, lambda d: ScheduleHook(d, Schedule(schedule_doc), asynchronous=False).register(d))
    return {"steps": [{k: v for k, v in s.items() if k != "futures"} for s in seen], "params": params, "ref": ref,
            "bytes": hook.bytes_sent_per_step}


def task_online(rank, world, steps, configs, out_root):
    """TinyNet under DDP with an OnlineHook per configuration (rank 0 writes to out_root/<k>):
    what every rank applied and sent."""
    import pathlib

    from lgreco import OnlineHook

    out = []
    for k, cfg in enumerate(configs):
        folder = pathlib.Path(out_root) / str(k)

        def attach(d, cfg=cfg, folder=folder):
            return OnlineHook(d, out_dir=folder if rank == 0 else None, model_name="tinynet", **cfg).register(d)

        params, hook = train(rank, steps, attach)
        out.append({"decisions": hook.decisions, "bytes": hook.bytes_sent_per_step,
                    "control": hook.control_bytes_per_step, "replans": hook.replans, "params": params})
    return out
