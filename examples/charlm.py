"""A small character-level transformer language model trained with DDP (gloo, CPU processes) on
the licence texts every Debian system ships in /usr/share/common-licenses (package base-files).

    /usr/bin/python3 examples/charlm.py --steps 300 --metrics out/base.json [--record out/trace.h5]
    /usr/bin/python3 examples/charlm.py --steps 300 --schedule schedule.json --metrics out/run.json
    /usr/bin/python3 examples/charlm.py --steps 300 --uniform-rank 4 --warmup 30 --metrics out/uniform.json
    /usr/bin/python3 examples/charlm.py --steps 300 --online out/online --warmup 30 --period 50 --metrics out/online.json
    /usr/bin/python3 examples/charlm.py --steps 300 --online out/dual --warmup 30 --bytes-budget uniform --metrics out/dual.json

Every run attaches lgreco's ScheduleHook (an all-"none" schedule when no schedule is given, which is
bit-identical to DDP's own allreduce), so the bytes each rank sends are counted: --schedule applies a
schedule file; --uniform-rank R runs PowerSGD rank R on every layer the family compresses after
--warmup uncompressed steps; --online DIR runs lgreco's OnlineHook (warm-up, a uniform window, then a
re-plan every --period steps from the last --acc-steps error-feedback-corrected gradients, written
to DIR) at error budget --alpha x the uniform plan's error, or, with --bytes-budget B, the least error
within B wire bytes per step (the dual engine; B = 'uniform': uniform PowerSGD --rank's bytes). Rank 0
writes the metrics JSON: mean training loss of the last 20 steps, held-out loss, bytes per step; with
--online every rank also writes DIR/rank<r>.json (bytes per step, decisions applied).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from lgreco import OnlineHook, Schedule, ScheduleHook, TraceRecorder, make_schedule  # noqa: E402
from lgreco.online import candidate_sets, uniform_schedule  # noqa: E402

CORPUS_DIR = pathlib.Path("/usr/share/common-licenses")


def load_corpus(directory: pathlib.Path = CORPUS_DIR) -> str:
    """All regular files (symlinks resolved once), sorted by name, concatenated."""
    seen, parts = set(), []
    for p in sorted(directory.iterdir()):
        real = p.resolve()
        if real.is_file() and real not in seen:
            seen.add(real)
            parts.append(real.read_text(encoding="utf-8", errors="replace"))
    if not parts:
        raise RuntimeError(f"no text found in {directory}")
    return "\n".join(parts)


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, self.heads, D // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D // self.heads)
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, D))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class CharLM(nn.Module):
    def __init__(self, vocab: int, d: int = 48, layers: int = 2, heads: int = 4, ctx: int = 32):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Parameter(torch.zeros(ctx, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.tok_emb(idx) + self.pos_emb[: idx.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


def batches(data: torch.Tensor, seed: int, rank: int, step: int, batch: int, ctx: int):
    g = torch.Generator().manual_seed(seed * 1_000_003 + step * 101 + rank)
    starts = torch.randint(0, data.numel() - ctx - 1, (batch,), generator=g)
    x = torch.stack([data[s: s + ctx] for s in starts.tolist()])
    y = torch.stack([data[s + 1: s + ctx + 1] for s in starts.tolist()])
    return x, y


def uniform_bytes_per_step(shapes, rank: int, warmup: int) -> int:
    """Wire bytes per step of uniform PowerSGD rank `rank` (the uniform phase of the schedule the
    registry builds: the layers PowerSGD compresses at that rank, the others dense)."""
    doc = uniform_schedule(shapes, candidate_sets(shapes, "powersgd", {"rank": rank}), warmup)
    return int(doc["phases"][-1]["predicted"]["bytes_per_step"])


def worker(rank: int, world: int, args, rendezvous: str):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=world)
    text = load_corpus()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in text], dtype=torch.long)
    split = int(0.9 * data.numel())
    train, held = data[:split], data[split:]
    torch.manual_seed(args.seed)
    model = CharLM(len(chars), d=args.d_model, layers=args.layers, ctx=args.ctx)
    ddp = nn.parallel.DistributedDataParallel(model)
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
    sync = {"asynchronous": not args.sync_hook, "lanes": args.lanes}
    if args.online:
        if args.bytes_budget is not None:
            budget = {"kind": "bytes", "value": uniform_bytes_per_step(shapes, args.rank, args.warmup)
                      if args.bytes_budget == "uniform" else float(args.bytes_budget)}
        else:
            budget = {"kind": "alpha", "value": args.alpha}
        plan = {"engine": args.engine, "budget": budget}
        hook = OnlineHook(ddp, family="powersgd", defaults={"rank": args.rank}, warmup_steps=args.warmup,
                          period=args.period, acc_steps=args.acc_steps, error_mode=args.error_mode, plan=plan,
                          seed=args.seed, out_dir=args.online if rank == 0 else None, overwrite=args.force,
                          model_name="charlm", **sync).register(ddp)
    else:
        if args.schedule:
            schedule = Schedule.load(args.schedule)
        elif args.uniform_rank is not None:
            sets = candidate_sets(shapes, "powersgd", {"rank": args.uniform_rank})
            schedule = Schedule(uniform_schedule(shapes, sets, args.warmup, seed=args.seed, model="charlm",
                                                 world_size=world, family="powersgd"))
        else:
            schedule = Schedule(make_schedule([(0, None, "uniform", {n: {"method": "none"} for n in shapes})],
                                              shapes, model="charlm", world_size=world))
        hook = ScheduleHook(ddp, schedule, **sync).register(ddp)
    rec = None
    if args.record:
        rec = TraceRecorder(ddp, args.record, every=args.every, burst=args.burst, start=args.record_start,
                            dtype=args.dtype, model_name="charlm", hook=hook, overwrite=args.force)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    losses = []
    t0 = time.perf_counter()
    for step in range(args.steps):
        lr = args.lr * min(1.0, (step + 1) / 20)
        for gr in opt.param_groups:
            gr["lr"] = lr
        if rec:
            rec.begin_step(step)
        x, y = batches(train, args.seed, rank, step, args.batch, args.ctx)
        loss = F.cross_entropy(ddp(x).reshape(-1, len(chars)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if rec:
            rec.end_step(loss=loss.item(), lr=lr)
        opt.step()
        losses.append(loss.item())
        if rank == 0 and args.log_every and ((step + 1) % args.log_every == 0 or step + 1 == args.steps):
            print(f"charlm: step {step + 1}/{args.steps}  loss {loss.item():.3f}  "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
    wall = time.perf_counter() - t0
    if rec:
        rec.close()
    model.eval()
    with torch.no_grad():
        ev = [F.cross_entropy(model(x).reshape(-1, len(chars)), y.reshape(-1)).item()
              for x, y in (batches(held, 12345, 0, i, 32, args.ctx) for i in range(8))]
    if args.online:
        pathlib.Path(args.online).mkdir(parents=True, exist_ok=True)
        (pathlib.Path(args.online) / f"rank{rank}.json").write_text(json.dumps(
            {"rank": rank, "bytes_sent_per_step": {str(s): b for s, b in sorted(hook.bytes_sent_per_step.items())},
             "control_bytes_per_step": {str(s): b for s, b in sorted(hook.control_bytes_per_step.items())},
             "decisions": hook.decisions, "replans": hook.replans}, indent=1))
    if rank == 0 and args.metrics:
        bytes_steps = [hook.bytes_sent_per_step[s] for s in sorted(hook.bytes_sent_per_step)]
        out = {"steps": args.steps, "world_size": world, "schedule": args.schedule,
               "train_loss_last20": sum(losses[-20:]) / len(losses[-20:]), "eval_loss": sum(ev) / len(ev),
               "bytes_total": sum(bytes_steps), "bytes_per_step_mean": sum(bytes_steps) / len(bytes_steps),
               "bytes_last_step": bytes_steps[-1],
               "predicted_bytes_last_step": hook.predicted_bytes_per_step(args.steps - 1),
               "control_bytes_total": sum(getattr(hook, "control_bytes_per_step", {}).values()),
               "wall_s": wall, "hook_s": hook.busy_s, "params": sum(p.numel() for p in model.parameters()),
               "model": {"d_model": args.d_model, "layers": args.layers, "ctx": args.ctx, "batch": args.batch},
               "plan": plan if args.online else None,
               "losses": losses, "bytes_per_step": bytes_steps}
        pathlib.Path(args.metrics).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(args.metrics).write_text(json.dumps(out, indent=1))
    dist.destroy_process_group()


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--schedule")
    ap.add_argument("--record", help="write a trace of local gradients here")
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--burst", type=int, default=10)
    ap.add_argument("--record-start", type=int, default=0)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--metrics", help="rank 0 writes a metrics JSON here")
    ap.add_argument("--log-every", type=int, default=0, metavar="N", help="rank 0 prints the loss every N steps")
    ap.add_argument("--force", action="store_true", help="overwrite an existing trace or --online output")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=32)
    ap.add_argument("--d-model", type=int, default=48)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--uniform-rank", type=int, help="PowerSGD rank R on every compressible layer after --warmup")
    ap.add_argument("--online", metavar="DIR", help="re-plan online (OnlineHook); decisions written to DIR")
    ap.add_argument("--warmup", type=int, default=0, help="uncompressed steps (--uniform-rank, --online)")
    ap.add_argument("--period", type=int, default=50, help="--online: steps per window")
    ap.add_argument("--acc-steps", type=int, default=10, help="--online: steps averaged into the measurement")
    ap.add_argument("--rank", type=int, default=4, help="--online: the uniform default PowerSGD rank")
    ap.add_argument("--alpha", type=float, default=1.0, help="--online: error budget, x the uniform error")
    ap.add_argument("--engine", help="--online: reference | exact | time | dual (default: reference; dual with "
                    "--bytes-budget)")
    ap.add_argument("--bytes-budget", metavar="B|uniform",
                    help="--online: plan the least error within B wire bytes per step (dual engine); 'uniform': "
                         "the bytes per step of uniform PowerSGD at --rank")
    ap.add_argument("--error-mode", default="power", choices=["power", "exact"], help="--online")
    ap.add_argument("--sync-hook", action="store_true", help="run the hook's rounds synchronously")
    ap.add_argument("--lanes", type=int, default=1, help="process groups the hook's buckets take turns on")
    return ap.parse_args(argv)


def check(args) -> None:
    """Option combinations the job cannot run; exits with a one-line error."""
    def fail(msg):
        sys.exit(f"charlm: error: {msg}")
    if args.bytes_budget is not None:
        if not args.online:
            fail("--bytes-budget needs --online")
        if args.engine not in (None, "dual"):
            fail(f"--bytes-budget plans with the dual engine, not --engine {args.engine}")
        args.engine = "dual"
        if args.bytes_budget != "uniform":
            try:
                ok = float(args.bytes_budget) > 0
            except ValueError:
                ok = False
            if not ok:
                fail(f"--bytes-budget {args.bytes_budget}: expected a number of bytes > 0 or 'uniform'")
    elif args.engine == "dual":
        fail("--engine dual needs --bytes-budget")
    args.engine = args.engine or "reference"
    if args.log_every < 0:
        fail(f"--log-every {args.log_every}: expected an integer >= 0")
    for key in ("steps", "d_model", "layers", "batch", "ctx", "world_size"):
        if getattr(args, key) < 1:
            fail(f"--{key.replace('_', '-')} {getattr(args, key)}: expected an integer >= 1")
    if args.d_model % 4:
        fail(f"--d-model {args.d_model}: expected a multiple of 4 (the model has 4 attention heads)")


def main(argv=None):
    args = parse(argv)
    check(args)
    if args.record and pathlib.Path(args.record).exists() and not args.force:
        sys.exit(f"charlm: error: trace {args.record} exists (use --force to overwrite)")
    if args.online and (pathlib.Path(args.online) / "schedule.json").exists() and not args.force:
        sys.exit(f"charlm: error: {args.online}/schedule.json exists (use --force to overwrite)")
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(args.world_size, args, os.path.join(tmp, "rendezvous")),
                 nprocs=args.world_size, join=True)


if __name__ == "__main__":
    main()
