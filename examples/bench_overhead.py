"""Overheads of lgreco's PyTorch side on the char-LM job (examples/charlm.py), CPU.

    /usr/bin/python3 examples/bench_overhead.py [--steps 60] [--json out.json]

Wall times and process CPU times (all threads, gloo's included; less sensitive to a loaded
machine) are reported as medians.
1. TraceRecorder, one process: the cost of begin_step/end_step on a step outside a burst (timed
   directly over many calls), and the median training-step time with no recorder, with a recorder
   outside its bursts, and inside a burst (float16 trace written to a temporary file).
2. ScheduleHook, 2-process gloo DDP: median step time and the hook's own time per step for DDP's
   built-in allreduce, ScheduleHook with "none", ScheduleHook with uniform PowerSGD rank 4, and
   torch's powerSGD_hook rank 4. Each configuration checks its result (bytes = prediction, the
   trace holds the expected steps) before its figures are reported.
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))
import charlm  # noqa: E402
from lgreco import Schedule, ScheduleHook, TraceRecorder, make_schedule  # noqa: E402


def setup(seed=0):
    text = charlm.load_corpus()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in text], dtype=torch.long)
    torch.manual_seed(seed)
    return charlm.CharLM(len(chars)), data, len(chars)


def step_fn(model, fwd, data, vocab, opt):
    def run(step, rank=0):
        x, y = charlm.batches(data, 0, rank, step, 16, 32)
        loss = F.cross_entropy(fwd(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        return loss
    return run


def bench_recorder(steps):
    torch.set_num_threads(1)
    model, data, vocab = setup()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    run = step_fn(model, model, data, vocab, opt)
    with tempfile.TemporaryDirectory() as tmp:
        rec = TraceRecorder(model, os.path.join(tmp, "t.h5"), every=1 << 30, burst=steps, start=10 ** 9)
        n = 200_000
        t0 = time.perf_counter()
        for s in range(n):
            rec.begin_step(s)
            rec.end_step(loss=1.0, lr=0.1)
        call_ns = (time.perf_counter() - t0) / n * 1e9
        rec.abort()
        rec_in = TraceRecorder(model, os.path.join(tmp, "in.h5"), every=1 << 30, burst=1 << 20, dtype="float16")
        times = {"none": [], "outside": [], "inside": []}
        cpu = {"none": [], "outside": [], "inside": []}
        for s in range(steps):  # interleaved, so load changes hit all three alike
            for mode in ("none", "outside", "inside"):
                r = rec if mode == "outside" else rec_in if mode == "inside" else None
                t0, c0 = time.perf_counter(), time.process_time()
                if r:
                    r.begin_step(s)
                loss = run(s)
                if r:
                    r.end_step(loss=loss.item(), lr=0.01)
                times[mode].append(time.perf_counter() - t0)
                cpu[mode].append(time.process_time() - c0)
        path = rec_in.close()
        import h5py
        with h5py.File(path, "r") as f:
            assert f["steps"].shape == (steps,), "the recorder must hold every burst step"
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    cmed = {k: statistics.median(v) * 1e3 for k, v in cpu.items()}
    return {"outside_burst_call_ns": call_ns, "step_ms_median": med, "step_cpu_ms_median": cmed,
            "params": sum(p.numel() for p in model.parameters())}


def hook_worker(rank, world, steps, rendezvous, out):
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=world)
    res = {}
    for cfg in ("ddp", "hook-none", "hook-powersgd4", "torch-powersgd4"):
        model, data, vocab = setup()
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
        hook = None
        if cfg.startswith("hook"):
            m = {"method": "none"} if cfg == "hook-none" else {"method": "powersgd", "params": {"rank": 4}}
            doc = make_schedule([(0, 2, "warmup", {n: {"method": "none"} for n in shapes}),
                                 (2, None, "uniform", {n: m for n in shapes})], shapes, world_size=world)
            hook = ScheduleHook(ddp, Schedule(doc)).register(ddp)
        elif cfg == "torch-powersgd4":
            state = ps.PowerSGDState(process_group=None, matrix_approximation_rank=4, start_powerSGD_iter=2)
            ddp.register_comm_hook(state, ps.powerSGD_hook)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        run = step_fn(model, ddp, data, vocab, opt)
        times, cpu = [], []
        for s in range(steps):
            t0, c0 = time.perf_counter(), time.process_time()
            run(s, rank)
            opt.step()
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        entry = {"step_ms_median": statistics.median(times[5:]) * 1e3,
                 "step_cpu_ms_median": statistics.median(cpu[5:]) * 1e3}
        if hook:
            for s in range(steps):
                assert hook.bytes_sent_per_step[s] == hook.predicted_bytes_per_step(s), (cfg, s)
            entry["hook_ms_per_step_median"] = statistics.median(r["hook_time_s"] for r in hook.log[5:]) * 1e3
            entry["bytes_per_step"] = hook.bytes_sent_per_step[steps - 1]
        res[cfg] = entry
    if rank == 0:
        pathlib.Path(out).write_text(json.dumps(res))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--json")
    a = ap.parse_args()
    out = {"recorder": bench_recorder(a.steps)}
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(hook_worker, args=(2, a.steps, os.path.join(tmp, "rdv"), os.path.join(tmp, "h.json")), nprocs=2)
        out["hook_2proc_gloo"] = json.loads(pathlib.Path(tmp, "h.json").read_text())
    out["load_average"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
