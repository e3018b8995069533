"""A PowerSGD schedule (per-layer ranks, or uniform) from a recorded trace, planned in Python through
lgreco's native module: the candidate sets, their measurement and the reference DP are the C++ ones
(`lgreco plan` runs the same code; `lgreco plan --trace` also replays error feedback window by window).

    /usr/bin/python3 examples/plan_from_trace.py --trace T.h5 --rank 4 --warmup 30 -o schedule.json [--uniform]

What it does: A = the mean of the last `--acc` recorded gradients of the trace's last burst (raw
local gradients: the trace holds no residual), every PowerSGD rank of the family's candidate set
measured on A (`--error-mode exact`: from singular values; `power`: 5 seeded subspace iterations),
one window planned by the reference DP at α (`--alpha`), and a schedule written that runs [0, warmup)
uncompressed and the plan (or, with --uniform, rank r everywhere) from then on. `--tables-out`
also writes the window's candidate tables (`lgreco plan --tables` plans them to the same settings).
"""
import argparse
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from lgreco import make_schedule, native, read_trace  # noqa: E402
from lgreco.online import candidate_sets, measure_layer, table_layer, tables_header  # noqa: E402


def last_burst(steps):
    start = len(steps) - 1
    while start > 0 and steps[start - 1] == steps[start] - 1:
        start -= 1
    return start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--acc", type=int, default=10)
    ap.add_argument("--error-mode", default="exact", choices=["exact", "power"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--uniform", action="store_true")
    ap.add_argument("--tables-out")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    out = pathlib.Path(a.output)
    if out.exists() and not a.force:
        sys.exit(f"plan_from_trace: error: {out} exists (use --force)")
    try:
        native.require("examples/plan_from_trace.py")
    except native.NativeUnavailable as e:
        sys.exit(f"plan_from_trace: error: {e}")
    tr = read_trace(a.trace)
    steps = np.asarray(tr["steps"])
    lo = max(last_burst(steps), len(steps) - a.acc)
    shapes = {layer["name"]: layer["shape"] for layer in tr["layers"]}
    sets = candidate_sets(shapes, "powersgd", {"rank": a.rank})
    layers = []
    for i, layer in enumerate(tr["layers"]):
        acc = layer["grad"][lo:].astype(np.float32)
        m = acc.sum(axis=0, dtype=np.float32) * (np.float32(1) / np.float32(len(acc)))
        cands = measure_layer(m, layer["name"], layer["shape"], sets[layer["name"]], a.error_mode, a.seed, 5, i,
                              int(steps[-1]))
        layers.append(table_layer(layer["name"], layer["shape"], layer["kind"], layer["bucket"], layer["backward_order"],
                                  sets[layer["name"]], cands))
    model, world = str(tr["attrs"].get("model", "")), int(tr["attrs"].get("world_size", 1))
    tables = {**tables_header(model, world, a.error_mode, len(steps) - lo, "examples/plan_from_trace.py"),
              "windows": [{"start_step": int(steps[lo]), "end_step": int(steps[-1]) + 1, "layers": layers}]}
    options = {"engine": "reference", "budget": {"kind": "alpha", "value": a.alpha}}
    plan = native.plan_window(tables, 0, options)
    chosen = {l["name"]: {"method": l["method"], "params": l["params"]} for l in plan["layers"]}
    uniform = {n: s["candidates"][s["default_index"]] for n, s in sets.items()}
    phases = [(0, a.warmup, "warmup", {n: {"method": "none"} for n in shapes})] if a.warmup > 0 else []
    phases.append((a.warmup, None, "uniform" if a.uniform else "plan-0", uniform if a.uniform else chosen))
    buckets = {}
    for layer in sorted(tr["layers"], key=lambda l: l["backward_order"]):
        buckets.setdefault(int(layer["bucket"]), []).append(layer["name"])
    doc = make_schedule(phases, shapes, model=model, world_size=world, family="powersgd",
                        engine="uniform" if a.uniform else "reference", seed=a.seed,
                        buckets=[buckets[b] for b in sorted(buckets)],
                        phase_errors=[None] * (len(phases) - 1) + [plan["uniform_error" if a.uniform else "total_error"]],
                        uniform_bytes_per_step=int(plan["uniform_bytes"]), uniform_total_error=plan["uniform_error"],
                        config={**native.plan_options(options), "rank": a.rank, "acc": a.acc, "warmup": a.warmup,
                                "error_mode": a.error_mode, "planner": "lgreco._native (examples/plan_from_trace.py)"})
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(out)
    if a.tables_out:
        pathlib.Path(a.tables_out).write_text(json.dumps(tables, indent=1))
    p = doc["predicted"]
    print(f"{out}: bytes/step {p['bytes_per_step']} (uniform {p['uniform_bytes_per_step']}, "
          f"uncompressed {p['uncompressed_bytes_per_step']}), error {p['total_error']:.4g} "
          f"(uniform {p['uniform_total_error']:.4g}), plan status {plan['status']}")


if __name__ == "__main__":
    main()
