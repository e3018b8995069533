#!/usr/bin/python3
"""Accuracy study over seeds: the char-LM of examples/charlm.py (2-process DDP, gloo, CPU) trained with
five arms per seed, the same steps, data order and initialisation within a seed:

  uncompressed      DDP's allreduce (through an all-"none" ScheduleHook, bit-identical to it);
  uniform           PowerSGD rank R on every layer it compresses, after W uncompressed steps; this
                    run also records rank 0's gradients after the warm-up (TraceRecorder, which
                    changes nothing in the training) for the offline arm;
  adaptive-error    OnlineHook: the same warm-up, a uniform window, then a re-plan every P steps by the
                    reference DP at error budget alpha = 1 (the uniform plan's error on the window,
                    measured as the OnlineHook measures: on the window's mean gradient A, power mode);
  adaptive-offline  the offline loop at alpha = 1: `lgreco plan --trace` on the uniform run's trace
                    (the OnlineHook's windows: P steps each after W, plan k from window k applied from
                    its end; error mode trajectory: the per-step error each setting delivers), then a
                    run with that schedule;
  adaptive-bytes    OnlineHook with the dual engine: the least error within the uniform arm's wire
                    bytes per step (charlm.py --bytes-budget uniform).

    /usr/bin/python3 examples/seeds_study.py --seeds 0,1,2,3,4 --work study-out \\
        --json docs/accuracy-study-runs.json --plot docs/accuracy-study.png --table study-out/table.md

Runs whose metrics already exist in --work with the same configuration are not run again (--fresh
runs everything). Writes the per-run summary (JSON), a plot (loss against steps and against
cumulative bytes) and a Markdown table (mean, std and min-max over seeds per arm, and per-seed paired
differences against the uniform arm). Not part of `make test`: it takes about 20-30 minutes on 2 CPU
cores with the defaults.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHARLM = ROOT / "examples" / "charlm.py"
ARMS = ("uncompressed", "uniform", "adaptive-error", "adaptive-offline", "adaptive-bytes")
LABELS = {"uncompressed": "uncompressed", "uniform": "uniform PowerSGD",
          "adaptive-error": "adaptive online, equal error on A (α = 1)",
          "adaptive-offline": "adaptive offline, equal per-step error (α = 1)",
          "adaptive-bytes": "adaptive online, equal bytes (dual)"}


class StudyError(Exception):
    pass


def arm_args(arm: str, a, seed: int, work: pathlib.Path) -> list:
    common = ["--steps", a.steps, "--seed", seed, "--d-model", a.d_model, "--layers", a.layers, "--force"]
    online = ["--warmup", a.warmup, "--period", a.period, "--acc-steps", a.acc_steps, "--rank", a.rank,
              "--online", work / f"{arm}-s{seed}"]
    extra = {"uncompressed": [],
             "uniform": ["--uniform-rank", a.rank, "--warmup", a.warmup, "--record", trace_path(work, seed),
                         "--record-start", a.warmup, "--every", a.steps,
                         "--burst", a.period * ((a.steps - a.warmup) // a.period)],
             "adaptive-error": online + ["--alpha", 1],
             "adaptive-offline": ["--schedule", work / f"adaptive-offline-s{seed}.schedule.json"],
             "adaptive-bytes": online + ["--bytes-budget", "uniform"]}[arm]
    return [str(x) for x in common + extra]


def trace_path(work: pathlib.Path, seed: int) -> pathlib.Path:
    return work / f"uniform-s{seed}.h5"


def plan_args(a, seed: int, work: pathlib.Path) -> list:
    """The offline loop on the uniform run's trace: the OnlineHook's timeline and budget, the
    product's default (trajectory) error mode."""
    return [str(x) for x in ("plan", "--trace", trace_path(work, seed), "--family", "powersgd", "--default",
                             f"rank={a.rank}", "--warmup-steps", a.warmup, "--period", a.period, "--acc-steps",
                             a.acc_steps, "--alpha", 1, "--seed", seed, "-o",
                             work / f"adaptive-offline-s{seed}.schedule.json", "--force")]


def reusable(arm: str, a, seed: int, work: pathlib.Path) -> bool:
    metrics = work / f"{arm}-s{seed}.json"
    if a.fresh or not metrics.exists():
        return False
    if json.loads(metrics.read_text()).get("study_args") != arm_args(arm, a, seed, work):
        return False
    if arm == "uniform":  # the offline arm still needs its trace
        return reusable("adaptive-offline", a, seed, work) or trace_path(work, seed).exists()
    return True


def plan_offline(a, seed: int, work: pathlib.Path) -> None:
    trace = trace_path(work, seed)
    if not trace.exists():
        raise StudyError(f"adaptive-offline, seed {seed}: the uniform run's trace {trace} is missing")
    proc = subprocess.run([a.lgreco, *plan_args(a, seed, work)], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise StudyError(f"adaptive-offline, seed {seed}: lgreco plan exited {proc.returncode}: {tail}")
    (work / f"adaptive-offline-s{seed}.plan.txt").write_text(proc.stdout)


def run_arm(arm: str, a, seed: int, work: pathlib.Path, py: str) -> dict:
    metrics = work / f"{arm}-s{seed}.json"
    args = arm_args(arm, a, seed, work)
    if reusable(arm, a, seed, work):
        return json.loads(metrics.read_text())
    t0 = time.perf_counter()
    if arm == "adaptive-offline":
        plan_offline(a, seed, work)
    proc = subprocess.run([py, str(CHARLM), *args, "--metrics", str(metrics)], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise StudyError(f"{arm}, seed {seed}: charlm.py exited {proc.returncode}: {tail}")
    m = json.loads(metrics.read_text())
    m["study_args"] = args
    m["run_wall_s"] = time.perf_counter() - t0
    metrics.write_text(json.dumps(m))
    return m


def segments(values):
    """[[first_step, value], ...] at every change (bytes per step are constant within a phase)."""
    out = []
    for i, v in enumerate(values):
        if not out or out[-1][1] != v:
            out.append([i, v])
    return out


def expand(segs, n):
    out = []
    for k, (start, v) in enumerate(segs):
        end = segs[k + 1][0] if k + 1 < len(segs) else n
        out.extend([v] * (end - start))
    return out


def summarise(runs: dict, a) -> dict:
    doc = {"kind": "lgreco-accuracy-study", "config": {
        "steps": a.steps, "warmup": a.warmup, "period": a.period, "acc_steps": a.acc_steps, "rank": a.rank,
        "d_model": a.d_model, "layers": a.layers, "world_size": 2, "seeds": a.seed_list,
        "command": " ".join(["/usr/bin/python3", "examples/seeds_study.py", *sys.argv[1:]])}, "runs": []}
    for (arm, seed), m in sorted(runs.items(), key=lambda kv: (ARMS.index(kv[0][0]), kv[0][1])):
        doc["runs"].append({
            "arm": arm, "seed": seed, "train_loss_last20": m["train_loss_last20"], "eval_loss": m["eval_loss"],
            "bytes_total": m["bytes_total"], "params": m["params"], "wall_s": round(m["wall_s"], 1),
            "plan": m.get("plan"), "losses": [round(x, 4) for x in m["losses"]],
            "bytes_per_step": segments(m["bytes_per_step"])})
    return doc


def stats(xs):
    return {"mean": statistics.fmean(xs), "std": statistics.stdev(xs) if len(xs) > 1 else 0.0,
            "min": min(xs), "max": max(xs)}


def table(doc: dict) -> str:
    by = {arm: [r for r in doc["runs"] if r["arm"] == arm] for arm in ARMS}
    n = len(doc["config"]["seeds"])
    lines = ["| arm | final train loss (last 20 steps) | held-out loss | total MB sent per rank |",
             "|---|---|---|---|"]
    for arm in ARMS:
        cells = []
        for key, scale, fmt in (("train_loss_last20", 1, "{:.4f}"), ("eval_loss", 1, "{:.4f}"),
                                ("bytes_total", 1e-6, "{:.2f}")):
            s = stats([r[key] * scale for r in by[arm]])
            cells.append(f"{fmt.format(s['mean'])} ± {fmt.format(s['std'])} "
                         f"({fmt.format(s['min'])} – {fmt.format(s['max'])})")
        lines.append(f"| {LABELS[arm]} | " + " | ".join(cells) + " |")
    lines += ["", f"Mean ± std (min – max) over {n} seeds. Paired differences against uniform PowerSGD "
                  "(same seed: same initialisation, data order and warm-up); t = mean / (std / √n), "
                  f"{n - 1} degrees of freedom:", "",
              "| arm − uniform | train loss | t | held-out loss | t | total MB | seeds with lower train / "
              "held-out loss |",
              "|---|---|---|---|---|---|---|"]
    uni = {r["seed"]: r for r in by["uniform"]}
    for arm in ("adaptive-error", "adaptive-offline", "adaptive-bytes", "uncompressed"):
        d = {key: [r[key] - uni[r["seed"]][key] for r in by[arm]] for key in ("train_loss_last20", "eval_loss",
                                                                                "bytes_total")}
        cells = []
        for key in ("train_loss_last20", "eval_loss"):
            s = stats(d[key])
            t = s["mean"] / (s["std"] / len(d[key]) ** 0.5) if s["std"] > 0 else float("inf")
            cells.append(f"{s['mean']:+.4f} ± {s['std']:.4f} ({s['min']:+.4f} – {s['max']:+.4f}) | {t:+.1f}")
        s = stats([x * 1e-6 for x in d["bytes_total"]])
        cells.append(f"{s['mean']:+.2f} ({s['min']:+.2f} – {s['max']:+.2f})")
        lower = [sum(1 for x in d[key] if x < 0) for key in ("train_loss_last20", "eval_loss")]
        lines.append(f"| {LABELS[arm]} | " + " | ".join(cells) + f" | {lower[0]} / {lower[1]} of {n} |")
    return "\n".join(lines) + "\n"


def smooth(xs, w):
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= w:
            acc -= xs[i - w]
        out.append(acc / min(i + 1, w))
    return out


def plot(doc: dict, path: pathlib.Path) -> None:
    """Three panels: training loss against steps (mean over seeds, min-max band); the paired
    difference to the uniform arm of the same seed (mean, min-max band); loss against the cumulative
    bytes sent. Losses are rank 0's batch losses, 20-step moving means."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    steps = doc["config"]["steps"]
    first = min(steps - 1, doc["config"]["warmup"])  # before it every arm runs the same steps
    fig, (ax, dx, bx) = plt.subplots(1, 3, figsize=(13.5, 4.3), dpi=85)
    colours = {"uncompressed": "black", "uniform": "tab:blue", "adaptive-error": "tab:orange",
               "adaptive-offline": "tab:red", "adaptive-bytes": "tab:green"}
    curves = {(r["arm"], r["seed"]): smooth(r["losses"], 20) for r in doc["runs"]}
    seeds = doc["config"]["seeds"]
    x = list(range(first + 1, steps + 1))

    def band(g, arm, ys_per_seed):
        mean = [statistics.fmean(ys[i] for ys in ys_per_seed) for i in range(first, steps)]
        lo = [min(ys[i] for ys in ys_per_seed) for i in range(first, steps)]
        hi = [max(ys[i] for ys in ys_per_seed) for i in range(first, steps)]
        g.plot(x, mean, color=colours[arm], lw=1.2, label=LABELS[arm])
        g.fill_between(x, lo, hi, color=colours[arm], alpha=0.12, lw=0)
        return mean

    for arm in ARMS:
        mean = band(ax, arm, [curves[(arm, sd)] for sd in seeds])
        if arm != "uniform":
            band(dx, arm, [[a - b for a, b in zip(curves[(arm, sd)], curves[("uniform", sd)])] for sd in seeds])
        cum = [0.0] * steps
        for sd in seeds:
            run = next(r for r in doc["runs"] if r["arm"] == arm and r["seed"] == sd)
            acc = 0.0
            for i, b in enumerate(expand(run["bytes_per_step"], steps)):
                acc += b
                cum[i] += acc / len(seeds) / 1e6
        bx.plot(cum[first:], mean, color=colours[arm], lw=1.2, label=LABELS[arm])
    dx.axhline(0, color=colours["uniform"], lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (rank 0, 20-step moving mean)")
    ax.set_title(f"mean over {len(seeds)} seeds, band: min–max", fontsize=9)
    dx.set_xlabel("step")
    dx.set_ylabel("loss − uniform PowerSGD's (same seed)")
    dx.set_title("paired difference to uniform: mean, band min–max", fontsize=9)
    bx.set_xlabel("cumulative MB sent per rank")
    bx.set_xscale("log")
    ticks = [t for t in (5, 10, 20, 40, 80, 160, 320) if t <= bx.get_xlim()[1]]
    bx.set_xticks(ticks, [str(t) for t in ticks])
    bx.set_title("mean loss against the bytes sent", fontsize=9)
    for g in (ax, dx, bx):
        g.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle(f"char-LM ({doc['runs'][0]['params']:,} parameters), 2-process DDP, {steps} steps "
                 f"(from step {first + 1}: the arms differ after the {first}-step warm-up)", fontsize=10)
    fig.tight_layout()
    fd, tmp = tempfile.mkstemp(prefix=".study-", suffix=".png", dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, format="png")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    finally:
        plt.close(fig)


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2,3,4", help="comma list of seeds (default 0,1,2,3,4)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--period", type=int, default=50)
    ap.add_argument("--acc-steps", type=int, default=10)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=48)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--work", default="study-out", help="metrics and OnlineHook outputs of every run")
    ap.add_argument("--json", help="write the per-run summary here")
    ap.add_argument("--plot", help="write the plot (PNG) here")
    ap.add_argument("--table", help="write the Markdown table here (it is printed too)")
    ap.add_argument("--fresh", action="store_true", help="run again runs whose metrics exist")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--lgreco", default=str(ROOT / "build" / "tools" / "lgreco"), help="the lgreco binary")
    ap.add_argument("--keep-traces", action="store_true", help="keep the uniform runs' traces (about 60 MB each)")
    a = ap.parse_args(argv)
    try:
        a.seed_list = [int(s) for s in a.seeds.split(",")]
    except ValueError:
        ap.error(f"--seeds {a.seeds}: expected a comma list of integers")
    if len(set(a.seed_list)) < 2 or min(a.seed_list) < 0:
        ap.error(f"--seeds {a.seeds}: expected at least two distinct seeds >= 0")
    for key in ("steps", "period", "acc_steps", "rank", "d_model", "layers"):
        if getattr(a, key) < 1:
            ap.error(f"--{key.replace('_', '-')} {getattr(a, key)}: expected an integer >= 1")
    if not os.access(a.lgreco, os.X_OK):
        ap.error(f"--lgreco {a.lgreco}: not an executable (build it: make build)")
    if a.warmup < 0 or a.warmup + a.period >= a.steps:
        ap.error(f"--warmup {a.warmup} + --period {a.period} must be below --steps {a.steps} (at least one re-plan)")
    return a


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    work = pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    runs, t0 = {}, time.perf_counter()
    try:
        for seed in a.seed_list:
            for arm in ARMS:
                m = run_arm(arm, a, seed, work, a.python)
                runs[(arm, seed)] = m
                if arm == "adaptive-offline" and not a.keep_traces:
                    trace_path(work, seed).unlink(missing_ok=True)
                print(f"seed {seed} {arm:<15} train {m['train_loss_last20']:.4f}  eval {m['eval_loss']:.4f}  "
                      f"{m['bytes_total'] / 1e6:8.2f} MB  ({m.get('run_wall_s', 0):.0f} s)   "
                      f"[{time.perf_counter() - t0:.0f} s]", flush=True)
    except StudyError as e:
        print(f"seeds_study: error: {e}", file=sys.stderr)
        return 1
    doc = summarise(runs, a)
    text = table(doc)
    print(text)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    if a.table:
        pathlib.Path(a.table).write_text(text)
    if a.plot:
        plot(doc, pathlib.Path(a.plot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
