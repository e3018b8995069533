"""The asynchronous ScheduleHook (2 processes, gloo, real DDP over several buckets).

Claims:
- for every method of the registry (and a two-phase schedule mixing them), running each bucket's
  rounds asynchronously — chained on the completion of the previous round — gives bit-identical
  parameters, residuals, DGC velocities and PowerSGD warm-start Qs to running them synchronously
  inside the hook, and sends the same bytes; also when every collective completes after a random
  delay (rounds and buckets completing out of issue order), and with buckets taking turns on two
  process groups (lanes=2);
- the hook does not wait for its collectives: with the transport holding every completion back
  until the last bucket of the step has reached the hook, every bucket reaches the hook (backward
  goes on computing later buckets) while none of the step's collectives has completed — a property
  of the control flow, not a timing. (The speed-up this buys under a slow network is measured in
  bench/python/async_overlap.py and docs/performance.md, not asserted here.)
"""
import torch

import py_ddp_workers as w
from lgreco import make_schedule
from lgreco.methods import REGISTRY

STEPS = 4

# Every method with the parameters that change its arithmetic or its rounds.
SETTINGS = [
    {"method": "none"},
    {"method": "fp16"}, {"method": "bf16"},
    {"method": "powersgd", "params": {"rank": 2}},
    {"method": "powersgd", "params": {"rank": 3, "power_iterations": 2}},
    {"method": "powersgd", "params": {"rank": 1, "orthogonalization": "qr", "warm_start": False}},
    {"method": "topk", "params": {"density": 0.1, "encoding": "pairs"}},
    {"method": "topk", "params": {"density": 0.3, "encoding": "bitmap"}},
    {"method": "topk", "params": {"density": 0.05, "encoding": "delta", "selection": "dgc"}},
    {"method": "topk", "params": {"density": 0.02, "momentum": 0.9, "warmup_steps": 2}},
    {"method": "randomk", "params": {"density": 0.1, "scaled": True}},
    {"method": "qsgd", "params": {"bits": 4}},
    {"method": "qsgd", "params": {"levels": 3, "encoding": "elias", "bucket_size": 64}},
    {"method": "maxmin", "params": {"bits": 2, "rounding": "stochastic", "bucket_size": 64}},
    {"method": "sign", "params": {"bucket_size": 128}},
    {"method": "terngrad"},
    {"method": "nuqsgd", "params": {"levels": 3, "bucket_size": 256}},
]


def _docs():
    shapes = w.shapes()
    names = list(shapes)
    docs = [make_schedule([(0, 1, "warmup", {n: {"method": "none"} for n in names}),
                           (1, None, "uniform", {n: s for n in names})], shapes, world_size=2) for s in SETTINGS]
    # Two phases mixing methods per parameter; at step 2 layers move between them and to "none"
    # (residuals are sent and dropped; buckets fall back to the plain path).
    a = {names[i]: SETTINGS[3 + i % (len(SETTINGS) - 3)] for i in range(len(names))}
    b = {names[i]: SETTINGS[(5 * i + 1) % len(SETTINGS)] for i in range(len(names))}
    docs.append(make_schedule([(0, 2, "uniform", a), (2, 3, "plan-0", b),
                               (3, None, "plan-1", {n: {"method": "none"} for n in names})], shapes, world_size=2))
    return docs


def _equal(a, b):
    return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)


def test_async_rounds_are_bit_identical_to_sync_for_every_method():
    docs = _docs()
    assert {s["method"] for s in SETTINGS} == {m["name"] for m in REGISTRY["methods"]}
    results = w.run_ddp(w.task_async_vs_sync, 2, STEPS, docs)
    for rank, per_doc in enumerate(results):
        for k, runs in enumerate(per_doc):
            label = f"rank {rank}, schedule {k} ({SETTINGS[k] if k < len(SETTINGS) else 'mixed'})"
            sync = runs["sync"]
            for mode in ("async", "jitter", "lanes"):
                got = runs[mode]
                assert _equal(got["params"], sync["params"]), (label, mode)
                assert got["bytes"] == sync["bytes"], (label, mode)
                for key in ("err", "vel", "q"):
                    assert _equal(got["state"][key], sync["state"][key]), (label, mode, key)
            # Training really moved the parameters, and both ranks agree.
            assert _equal(sync["params"], results[0][k]["sync"]["params"]), label


def test_every_bucket_reaches_the_hook_while_the_first_collective_is_in_flight():
    shapes = w.shapes()
    doc = make_schedule([(0, None, "uniform", {n: {"method": "powersgd", "params": {"rank": 2}} if len(s) > 1
                                              else {"method": "none"} for n, s in shapes.items()})], shapes,
                        world_size=2)
    for res in w.run_ddp(w.task_gate, 2, 3, doc):
        assert len(res["steps"]) == 3
        # DDP rebuilds its buckets after the first step (torch 1.13: one bucket, then two).
        assert max(st["buckets"] for st in res["steps"]) >= 2, res["steps"]
        for st in res["steps"]:
            assert st["completed_at_last_hook"] == 0 and st["done_at_last_hook"] == 0, st
        assert _equal(res["params"], res["ref"])



def test_a_script_that_ends_right_after_its_last_step_exits_cleanly(tmp_path):
    """The last bucket's future completes inside a completion callback on gloo's thread, so backward,
    and the script, may end while that thread is still leaving the callback or gloo still holds the
    step's tensors. Two ranks (so that completions arrive on gloo's threads) run two steps and exit;
    every callback-side set_result is followed by a pause (the thread leaves Python's lock, as torch's
    own code does), which makes that window near certain. Without the hook's care at exit (see
    lgreco.hook._InFlight) a rank aborts ("terminate called without an active exception", -6) after
    a run that finished: 10 runs of this test in 10 did before it."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    shapes = w.shapes()
    sched = tmp_path / "s.json"
    sched.write_text(json.dumps(make_schedule(
        [(0, None, "uniform", {n: {"method": "powersgd", "params": {"rank": 2}} for n in shapes})], shapes)))
    code = f"""
import sys, threading, time
sys.path.insert(0, {str(repo / 'tests' / 'python')!r})
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from lgreco import Schedule, ScheduleHook
import py_ddp_workers as w

original = torch.futures.Future.set_result
def late_set_result(self, value):
    original(self, value)
    if threading.current_thread() is not threading.main_thread():
        time.sleep(0.3)
torch.futures.Future.set_result = late_set_result

rank = int(sys.argv[1])
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://{tmp_path}/rdv", rank=rank, world_size=2)
ddp = DDP(w.TinyNet(), bucket_cap_mb=0.001)
hook = ScheduleHook(ddp, Schedule.load({str(sched)!r})).register(ddp)
for step in range(2):
    x, y = w.batch(rank, step)
    torch.nn.functional.cross_entropy(ddp(x), y).backward()
print("STEPS", sorted(hook.bytes_sent_per_step))
"""
    env = dict(os.environ, PYTHONPATH=str(repo / "python"))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(r)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    for r, p in enumerate(procs):
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, (r, p.returncode, err[-3000:])
        assert "STEPS [0, 1]" in out
