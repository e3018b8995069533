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
