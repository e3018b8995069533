"""Cost of one online re-plan (OnlineHook on rank 0), CPU: measuring every candidate on the window's
matrices A, then planning (the C++ reference DP, B = 10000) and building the schedule — beside the
DP of the published numpy implementation (numpy_reference_dp.py) on the same table.

    /usr/bin/python3 bench/python/replan_overhead.py [--models charlm,resnet50] [--repeat 3] [--json out.json]

Models:
- charlm: examples/charlm.py's default model (2 layers, d = 48; 66,518 parameters); A = the gradient
  of one batch of the licence corpus (a real gradient);
- resnet50: the parameter shapes of torchvision's ResNet-50 (161 tensors, 25.6 M parameters) from
  `lgreco trace synth --model resnet50 --steps 10` (synthetic low-rank-plus-noise gradients, the
  closest stand-in without ImageNet); A = the mean of the 10 steps (written once to
  --trace, default /tmp/lgreco-resnet50-bench.h5, then reused).
Family: PowerSGD, default rank 4, candidates ranks 2..8 (as L-GreCo's ResNet-50 run), error modes
power (5 seeded subspace iterations per rank) and exact (singular values, once per layer).
Before timing anything, the numpy DP's choice is checked equal to the C++ engine's.
Reported: medians over --repeat runs of wall seconds and of the calling thread's CPU seconds (one
thread: torch.set_num_threads(1); the native measurement and planner run on the calling thread).
"C++ plan" is OnlinePlanner.add_window: parsing and validating the window's JSON, the DP and the
plan's predictions; "schedule" builds the phased schedule document.
"""
import argparse
import json
import pathlib
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "examples"))
sys.path.insert(0, str(HERE))
import numpy_reference_dp as nref  # noqa: E402
from lgreco import native  # noqa: E402
from lgreco.online import candidate_sets, measure_layer, table_layer, tables_header  # noqa: E402


def charlm_matrices():
    import charlm
    import torch.nn.functional as F

    text = charlm.load_corpus()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in text], dtype=torch.long)
    torch.manual_seed(0)
    model = charlm.CharLM(len(chars))
    x, y = charlm.batches(data, 0, 0, 0, 16, 32)
    F.cross_entropy(model(x).reshape(-1, len(chars)), y.reshape(-1)).backward()
    return [(n, tuple(p.shape), p.grad.detach().reshape(-1).numpy().astype(np.float32)) for n, p in model.named_parameters()]


def resnet50_matrices(trace, lgreco):
    import h5py

    if not pathlib.Path(trace).exists():
        subprocess.run([lgreco, "trace", "synth", "--model", "resnet50", "--steps", "10", "--dtype", "float16", "-o", trace],
                       check=True, capture_output=True)
    out = []
    with h5py.File(trace, "r") as f:
        for g in sorted(f["layers"]):
            lg = f["layers"][g]
            a = lg["grad"][:].astype(np.float32)
            out.append((str(lg.attrs["name"]), tuple(int(d) for d in lg.attrs["shape"]),
                        a.sum(axis=0, dtype=np.float32) * np.float32(0.1)))
    return out


class Clock:
    """Wall and this thread's CPU seconds (the native code runs on the calling thread; CPU time is
    less sensitive to the shared machine's load)."""

    def __init__(self):
        self.t = {}
        self._w, self._c = time.perf_counter(), time.thread_time()

    def lap(self, name):
        w, c = time.perf_counter(), time.thread_time()
        self.t[name + "_s"], self.t[name + "_cpu_s"] = w - self._w, c - self._c
        self._w, self._c = w, c


def one_replan(mats, mode, seed=0):
    shapes = {n: s for n, s, _ in mats}
    sets = candidate_sets(shapes, "powersgd", {"rank": 4})
    clock = Clock()
    layers = []
    for i, (name, shape, a) in enumerate(mats):
        cands = measure_layer(a, name, shape, sets[name], mode, seed, 5, i, 999)
        layers.append(table_layer(name, shape, "weight" if len(shape) > 1 else "bias", 0, len(mats) - i, sets[name], cands))
    clock.lap("measure")
    window = {"start_step": 0, "end_step": 1000, "layers": layers}
    planner = native.OnlinePlanner(tables_header("bench", 8, mode, 10, "bench"), {"engine": "reference"})
    plan = planner.add_window(window)
    clock.lap("plan")
    planner.schedule(0, seed)
    clock.lap("schedule")
    return window, plan, clock.t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="charlm,resnet50")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trace", default="/tmp/lgreco-resnet50-bench.h5")
    ap.add_argument("--lgreco", default=str(REPO / "build" / "tools" / "lgreco"))
    ap.add_argument("--json")
    a = ap.parse_args()
    native.require("bench/python/replan_overhead.py")
    torch.set_num_threads(1)
    rows = []
    for model in a.models.split(","):
        mats = charlm_matrices() if model == "charlm" else resnet50_matrices(a.trace, a.lgreco)
        for mode in ("power", "exact"):
            runs = []
            for _ in range(a.repeat):
                window, plan, t = one_replan(mats, mode)
                want = {l["name"]: l["choice"] for l in plan["layers"] if l["role"] == "planned"}
                clock = Clock()
                got = nref.plan_window(window)
                clock.lap("numpy_dp")
                t.update(clock.t)
                if got != want:
                    raise SystemExit(f"{model}/{mode}: the numpy DP chose {got}, the C++ engine {want}")
                runs.append(t)
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            cands = sum(len(l["candidates"]) for l in window["layers"] if len(l["candidates"]) > 1)
            rows.append({"model": model, "error_mode": mode, "tensors": len(mats), "planned_layers": len(want),
                         "candidates": cands, "parameters": int(sum(m.size for _, _, m in mats)), **med,
                         "status": plan["status"], "bytes_vs_uniform": plan["total_bytes"] / plan["uniform_bytes"]})
    ctx = {"git_sha": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                     text=True).stdout.strip(), "python": sys.version.split()[0], "torch": torch.__version__,
           "numpy": np.__version__, "cpu": platform.processor() or platform.machine(), "argv": sys.argv}
    print("seconds, median: wall (this thread's CPU)")
    print(f"{'model':<9}{'mode':<7}{'layers':>7}{'cands':>6}{'measure':>17}{'C++ plan':>17}{'schedule':>17}"
          f"{'numpy DP':>17}{'bytes/uniform':>14}")

    def cell(r, k):
        return f"{r[k + '_s']:.4f} ({r[k + '_cpu_s']:.4f})"

    for r in rows:
        print(f"{r['model']:<9}{r['error_mode']:<7}{r['planned_layers']:>7}{r['candidates']:>6}{cell(r, 'measure'):>17}"
              f"{cell(r, 'plan'):>17}{cell(r, 'schedule'):>17}{cell(r, 'numpy_dp'):>17}{r['bytes_vs_uniform']:>14.3f}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"context": ctx, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
