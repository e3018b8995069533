"""Overlap of the ScheduleHook's collectives with backward: step time of the synchronous hook (every
round inside the hook call) and of the asynchronous one (rounds chained on completions), with an
artificial network delay injected into the process group's transport.

    /usr/bin/python3 bench/python/async_overlap.py [--delay-ms 0,20] [--steps 30] [--json out.json]

Job: 2-process gloo DDP on CPU, an MLP of 8 Linear(512, 512) layers (+ ReLU; 2.1 M parameters),
batch 32 per rank, SGD; DDP buckets capped at 1 MiB (first bucket 256 KiB), so backward hands the
hook 9 buckets one after the other. The delay: every collective the hook issues completes `delay`
seconds after gloo completed it (a timer, so no thread is blocked meanwhile) — a slow network's
latency added per collective. Methods: none (all-reduce), PowerSGD rank 4 (P and Q rounds),
top-k 1 % (allgather), QSGD 4 bits (allgather). Each configuration first checks its result: the
asynchronous run's parameters equal the synchronous run's bit for bit, and the bytes equal the
schedule's prediction. Three hooks: synchronous, asynchronous (one lane: buckets take turns on the
default group) and asynchronous with two lanes (lanes=2: even and odd buckets take turns on two
groups, so a bucket's P can go out while the previous bucket's Q is pending). The three jobs train
side by side in the same processes, their steps interleaved (the order rotating), so that the shared
machine's load drifts over all alike. Reported: median step time (forward + backward + optimizer) over the steps
after 5 warm-up steps, the hook's collectives per step, and the share of the injected delay an
asynchronous hook hides: the median of the paired step-time differences to the synchronous hook,
divided by (collectives per step × delay).
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
from lgreco import Schedule, ScheduleHook, TorchComm, make_schedule  # noqa: E402

LAYERS, WIDTH, BATCH = 8, 512, 32
METHODS = {"none": {"method": "none"}, "powersgd-r4": {"method": "powersgd", "params": {"rank": 4}},
           "topk-1%": {"method": "topk", "params": {"density": 0.01}}, "qsgd-4bit": {"method": "qsgd", "params": {"bits": 4}}}


class DelayedComm(TorchComm):
    """Every collective completes `delay_s` after gloo completed it; counts the collectives."""

    def __init__(self, delay_s, group=None):
        super().__init__(group)
        self.delay_s = delay_s
        self.count = 0

    def _later(self, fut):
        self.count += 1
        if self.delay_s <= 0:
            return fut
        out = torch.futures.Future()

        def arrived(f):
            def fire():
                try:
                    out.set_result(f.value())
                except Exception as e:  # noqa: BLE001 - handed to the waiting chain
                    out.set_exception(e)
            threading.Timer(self.delay_s, fire).start()
        fut.add_done_callback(arrived)
        return out

    def allreduce(self, t):
        return self._later(super().allreduce(t))

    def allgather(self, outs, t):
        return self._later(super().allgather(outs, t))


def model():
    torch.manual_seed(0)
    mods = []
    for _ in range(LAYERS):
        mods += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    return nn.Sequential(*mods)


def setup(rank, method, mode, delay_s):
    net = model()
    ddp = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=1)
    shapes = {n: tuple(p.shape) for n, p in net.named_parameters()}
    doc = make_schedule([(0, None, "uniform", {n: METHODS[method] for n in shapes})], shapes, world_size=2)
    # "async-2": two lanes, the second on a new group of the same ranks (as lanes=2 builds them).
    comms = [DelayedComm(delay_s)] + ([DelayedComm(delay_s, dist.new_group([0, 1]))] if mode == "async-2" else [])
    hook = ScheduleHook(ddp, Schedule(doc), asynchronous=mode != "sync", comm=comms).register(ddp)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    return {"net": net, "ddp": ddp, "hook": hook, "comms": comms, "opt": opt, "times": []}


def step(run, x, y):
    dist.barrier()
    t0 = time.perf_counter()
    loss = nn.functional.mse_loss(run["ddp"](x), y)
    run["opt"].zero_grad()
    loss.backward()
    run["opt"].step()
    run["times"].append(time.perf_counter() - t0)


def worker(rank, world, tmp, args, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{tmp}/rdv", rank=rank, world_size=world)
    dist._DEFAULT_FIRST_BUCKET_BYTES = 256 << 10
    g = torch.Generator().manual_seed(rank)
    x, y = torch.randn(BATCH, WIDTH, generator=g), torch.randn(BATCH, WIDTH, generator=g)
    rows = []
    for delay_ms in args.delays:
        for method in args.methods:
            # Both hooks train side by side, steps interleaved (the order alternating), so that the
            # shared machine's load drifts equally over both.
            modes = ("sync", "async", "async-2")
            runs = {m: setup(rank, method, m, delay_ms / 1000.0) for m in modes}
            for i in range(args.steps):
                for m in modes[i % 3:] + modes[:i % 3]:
                    step(runs[m], x, y)
            sync = runs["sync"]
            row = {"method": method, "delay_ms": delay_ms,
                   "collectives_per_step": sum(c.count for c in sync["comms"]) / args.steps,
                   "sync_ms": statistics.median(sync["times"][5:]) * 1e3}
            for m in modes[1:]:
                r = runs[m]
                row[f"{m}_identical"] = all(torch.equal(a, b) for a, b in zip(sync["net"].parameters(), r["net"].parameters()))
                row[f"{m}_ms"] = statistics.median(r["times"][5:]) * 1e3
                row[f"{m}_saved_ms"] = statistics.median([a - b for a, b in zip(sync["times"][5:], r["times"][5:])]) * 1e3
            row["bytes_ok"] = all(r["hook"].bytes_sent_per_step[s] == r["hook"].predicted_bytes_per_step(s)
                                  for r in runs.values() for s in range(args.steps))
            rows.append(row)
    if rank == 0:
        pathlib.Path(out).write_text(json.dumps(rows))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--delay-ms", default="0,20")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--json")
    a = ap.parse_args()
    a.delays = [float(d) for d in a.delay_ms.split(",")]
    a.methods = a.methods.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        mp.spawn(worker, args=(2, tmp, a, out), nprocs=2, join=True)
        rows = json.loads(pathlib.Path(out).read_text())
    for r in rows:
        injected = r["collectives_per_step"] * r["delay_ms"]
        for m in ("async", "async-2"):
            r[f"{m}_hidden_share"] = r[f"{m}_saved_ms"] / injected if injected > 0 else None
        if not (r["async_identical"] and r["async-2_identical"] and r["bytes_ok"]):
            raise SystemExit(f"{r['method']} at {r['delay_ms']} ms: asynchronous result differs or bytes off: {r}")
    print(f"{'method':<13}{'delay':>6}{'coll':>5}{'sync ms':>9}{'async ms':>9}{'hidden':>8}{'2 lanes ms':>11}{'hidden':>8}")

    def pct(v):
        return "" if v is None else f"{100 * v:.0f} %"

    for r in rows:
        print(f"{r['method']:<13}{r['delay_ms']:>6.0f}{r['collectives_per_step']:>5.0f}{r['sync_ms']:>9.1f}"
              f"{r['async_ms']:>9.1f}{pct(r['async_hidden_share']):>8}{r['async-2_ms']:>11.1f}"
              f"{pct(r['async-2_hidden_share']):>8}")
    if a.json:
        ctx = {"git_sha": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                         text=True).stdout.strip(), "torch": torch.__version__,
               "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "argv": sys.argv}
        pathlib.Path(a.json).write_text(json.dumps({"context": ctx, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
