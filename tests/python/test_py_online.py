"""Online re-planning in the training job (OnlineHook) and the C++ planner behind it (the native
module).

Claims:
- the native module plans exactly as `lgreco plan --tables` does, for every engine, and reads back
  the configuration the CLI records; OnlinePlanner, fed the windows one by one, ends with the same
  schedule;
- the online measurement is replay's: on a window whose matrix A is one recorded gradient, the
  candidate sets and errors of `lgreco plan --trace --tables-out` equal the native ones, bit for bit,
  in power and exact mode;
- the char-LM example trained online with 2-process gloo DDP: every re-plan's tables, planned
  offline with `lgreco plan --tables --engine reference`, give exactly the settings the job applied
  (per window and over the whole run), both ranks applied the same, and the bytes each rank sent
  equal the written schedule's predictions step by step;
- the other engines (exact, dual with a byte budget, time on a ring and on a topology) re-plan online
  and reproduce offline the same way (TinyNet);
- without the native module, OnlineHook says how to build it for this interpreter, and offline
  schedules still apply.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import py_ddp_workers as w
from conftest import REPO
from e2e_traces import write_trace
from lgreco import Schedule, native

pytestmark = pytest.mark.skipif(not native.available(), reason="the native module is not built for this Python")

PY = "/usr/bin/python3"


def tiny_tables(windows=3, seed=0):
    """Tables of TinyNet's parameters: PowerSGD ranks 1..4 (default 2), random errors falling with
    the rank; bytes left out (the reader takes the registry's)."""
    rng = np.random.default_rng(seed)
    shapes = w.shapes()
    wins = []
    for k in range(windows):
        layers = []
        for i, (name, shape) in enumerate(shapes.items()):
            cs = native.family_candidates("powersgd", {"rank": 2}, shape)
            errs = np.sort(rng.uniform(0.1, 5.0, len(cs["candidates"])))[::-1]
            cands = [{**c, "error": float(0.0 if c["method"] == "none" else e)} for c, e in zip(cs["candidates"], errs)]
            layers.append({"name": name, "shape": list(shape), "numel": int(np.prod(shape)),
                           "kind": "weight" if len(shape) > 1 else "bias", "bucket": i // 3,
                           "backward_order": len(shapes) - i, "default": cs["default_index"], "candidates": cands})
        wins.append({"start_step": 10 + 5 * k, "end_step": 15 + 5 * k, "layers": layers})
    return {"schema_version": 1, "kind": "lgreco-tables", "model": "tinynet", "world_size": 2, "error_mode": "power",
            "acc_steps": 2, "windows": wins}


ENGINES = [  # (plan options, the same as `lgreco plan` flags)
    ({"engine": "reference"}, ["--engine", "reference"]),
    ({"engine": "reference", "budget": {"kind": "alpha", "value": 0.8}, "reference_buckets": 500},
     ["--alpha", "0.8", "--buckets", "500"]),
    ({"engine": "exact", "exclude": "fc2"}, ["--engine", "exact", "--exclude", "fc2"]),
    ({"engine": "dual", "budget": {"kind": "bytes", "value": 2500}}, ["--engine", "dual", "--bytes-budget", "2500"]),
    ({"engine": "time", "network": {"model": "ring", "bandwidth_Gbps": 1, "latency_us": 5}},
     ["--engine", "time", "--bandwidth", "1Gbps", "--latency", "5us"]),
    ({"engine": "time", "network": {"model": "nccl", "topology": "1x8xA100-1x25G"}},
     ["--engine", "time", "--topology", "1x8xA100-1x25G"]),
]


def _phases(doc):
    return [(p["label"], p["start_step"], p["end_step"], p["layers"], p["predicted"]["bytes_per_step"])
            for p in doc["phases"]]


@pytest.mark.parametrize("options,flags", ENGINES, ids=[" ".join(f) for _, f in ENGINES])
def test_native_planner_is_lgreco_plan(lgreco, tmp_path, options, flags):
    tables = tiny_tables()
    path = tmp_path / "t.json"
    path.write_text(json.dumps(tables))
    out = tmp_path / "s.json"
    lgreco("plan", "--tables", path, *flags, "--warmup-steps", "4", "--seed", "3", "--allow-infeasible", "-o", out,
           check=True)
    cli = json.loads(out.read_text())
    mine = native.plan_tables(tables, options, warmup_steps=4, seed=3)
    assert _phases(mine) == _phases(cli)
    assert mine["predicted"] == cli["predicted"]
    # The configuration the CLI recorded is plan options the module reads.
    assert _phases(native.plan_tables(tables, cli["config"], warmup_steps=4, seed=3)) == _phases(cli)
    # One window at a time: the same plans, the same schedule.
    planner = native.OnlinePlanner({k: v for k, v in tables.items() if k != "windows"}, options)
    for k, win in enumerate(tables["windows"]):
        plan = planner.add_window(win)
        assert plan == native.plan_window(tables, k, options)
        assert {l["name"]: {"method": l["method"], "params": l["params"]} for l in plan["layers"]} == \
            cli["phases"][k + 2]["layers"]
    assert _phases(planner.schedule(4, 3)) == _phases(cli)
    assert [win["start_step"] for win in planner.tables()["windows"]] == [win["start_step"] for win in tables["windows"]]


def test_planner_errors_name_the_field():
    tables = tiny_tables(1)
    with pytest.raises(ValueError, match=r"unknown key 'engin'"):
        native.plan_tables(tables, {"engin": "exact"})
    with pytest.raises(ValueError, match=r"budget\.kind"):
        native.OnlinePlanner({"model": "m", "world_size": 2, "error_mode": "power", "acc_steps": 1},
                             {"budget": {"kind": "gamma", "value": 1}})
    with pytest.raises(ValueError, match=r"time engine needs a network|needs a network"):
        native.OnlinePlanner({"model": "m", "world_size": 2, "error_mode": "power", "acc_steps": 1}, {"engine": "time"})
    planner = native.OnlinePlanner({"model": "m", "world_size": 2, "error_mode": "power", "acc_steps": 2}, {})
    bad = json.loads(json.dumps(tables["windows"][0]))
    bad["layers"][0]["candidates"][0]["error"] = -1.0
    with pytest.raises(ValueError, match=r"conv\.weight.*negative"):
        planner.add_window(bad)
    assert planner.windows == 0  # a refused window is not kept
    planner.add_window(tables["windows"][0])
    with pytest.raises(ValueError, match=r"before window 0 ends|ordered"):
        planner.add_window(tables["windows"][0])


def test_numpy_reference_dp_chooses_what_the_cpp_engine_chooses(charlm_online):
    """The timing baseline of bench/python/replan_overhead.py is the published DP's rules."""
    sys.path.insert(0, str(REPO / "bench" / "python"))
    import numpy_reference_dp as nref

    docs = [json.loads((charlm_online / "tables.json").read_text())]
    for seed in range(3):
        t = tiny_tables(seed=seed)
        planner = native.OnlinePlanner({k: v for k, v in t.items() if k != "windows"})
        for win in t["windows"]:
            planner.add_window(win)
        docs.append(planner.tables())  # with the registry's bytes
    for doc in docs:
        for k, win in enumerate(doc["windows"]):
            for alpha in (1.0, 0.7):
                plan = native.plan_window(doc, k, {"budget": {"kind": "alpha", "value": alpha}})
                want = {l["name"]: l["choice"] for l in plan["layers"] if l["role"] == "planned"}
                assert nref.plan_window(win, alpha) == (want if plan["status"] != "infeasible" else None), (k, alpha)


@pytest.mark.parametrize("mode", ["power", "exact"])
def test_online_measurement_is_replays(lgreco, tmp_path, mode):
    """Window 0 of a burst with acc_steps = 1 has A = the recorded gradient (the residual starts at
    zero), so replay's tables must equal the native measurement of that gradient."""
    rng = np.random.default_rng(1)
    shapes = w.shapes()
    layers, grads = [], []
    for i, (name, shape) in enumerate(shapes.items()):
        layers.append({"name": name, "shape": list(shape), "kind": "weight" if len(shape) > 1 else "bias",
                       "bucket": 0, "backward_order": len(shapes) - 1 - i})
        n = int(np.prod(shape))
        low = rng.standard_normal((3, 3)) @ rng.standard_normal((3, n))  # low rank plus noise
        grads.append((low + 0.1 * rng.standard_normal((3, n))).astype(np.float32))
    trace = tmp_path / "t.h5"
    write_trace(trace, layers, [7, 8, 9], grads, model="tinynet", world_size=2)
    tables = tmp_path / "tables.json"
    lgreco("plan", "--trace", trace, "--family", "powersgd", "--default", "rank=2", "--warmup-steps", "0", "--period",
           "1", "--acc-steps", "1", "--error-mode", mode, "--seed", "5", "--threads", "1", "--tables-out", tables,
           "-o", tmp_path / "s.json", check=True)
    win = json.loads(tables.read_text())["windows"][0]
    for i, (layer, g) in enumerate(zip(win["layers"], grads)):
        cs = native.family_candidates("powersgd", {"rank": 2}, layer["shape"])
        assert [{"method": c["method"], "params": c["params"]} for c in layer["candidates"]] == cs["candidates"]
        assert layer["default"] == cs["default_index"]
        got = native.measure_candidates(g[0], layer["shape"], cs["candidates"], mode, 5, 5, i, 7, layer["name"])
        assert [c["error"] for c in got] == [c["error"] for c in layer["candidates"]], layer["name"]
        assert [c["bytes"] for c in got] == [c["bytes"] for c in layer["candidates"]]


# ---------------------------------------------------------------------------------------------- the job
CHARLM = ["--d-model", "32", "--layers", "1", "--batch", "8"]
WARMUP, PERIOD, ACC, STEPS = 4, 6, 3, 28  # re-plans at steps 10, 16, 22 (windows 0, 1, 2)


@pytest.fixture(scope="module")
def charlm_online(tmp_path_factory):
    out = tmp_path_factory.mktemp("online")
    p = subprocess.run([PY, str(REPO / "examples" / "charlm.py"), *CHARLM, "--steps", str(STEPS), "--online",
                        str(out / "run"), "--warmup", str(WARMUP), "--period", str(PERIOD), "--acc-steps", str(ACC),
                        "--rank", "4", "--alpha", "1", "--engine", "reference", "--metrics", str(out / "metrics.json")],
                       env=dict(os.environ, PYTHONPATH=str(REPO / "python")), capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return out / "run"


def _settings(phase_doc):
    return phase_doc["layers"]


def test_charlm_online_decisions_are_reproduced_offline(lgreco, charlm_online, tmp_path):
    run = charlm_online
    ranks = [json.loads((run / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["decisions"] == ranks[1]["decisions"]
    decisions = ranks[0]["decisions"]
    assert [(d["window"], d["step"]) for d in decisions] == [(0, 10), (1, 16), (2, 22)]
    sched = json.loads((run / "schedule.json").read_text())
    assert [(p["label"], p["start_step"], p["end_step"]) for p in sched["phases"]] == [
        ("warmup", 0, 4), ("uniform", 4, 10), ("plan-0", 10, 16), ("plan-1", 16, 22), ("plan-2", 22, None)]
    for d, ph in zip(decisions, sched["phases"][2:]):
        assert d["layers"] == _settings(ph)
    # Each window's tables alone, planned offline, give the settings the job applied.
    for d in decisions:
        k = d["window"]
        plan_file = json.loads((run / "windows" / f"window-{k:04d}.plan.json").read_text())
        assert plan_file["applied_from_step"] == d["step"]
        out = tmp_path / f"w{k}.json"
        lgreco("plan", "--tables", run / "windows" / f"window-{k:04d}.tables.json", "--engine", "reference",
               "--allow-infeasible", "-o", out, check=True)
        assert _settings(json.loads(out.read_text())["phases"][-1]) == d["layers"], k
    # All windows together: the whole schedule, phase by phase, wire plans included.
    out = tmp_path / "all.json"
    lgreco("plan", "--tables", run / "tables.json", "--engine", "reference", "--warmup-steps", str(WARMUP), "--seed",
           "0", "--allow-infeasible", "-o", out, check=True)
    offline = json.loads(out.read_text())
    assert [(p["label"], p["start_step"], p["end_step"], p["layers"], p["wire"]) for p in offline["phases"]] == \
        [(p["label"], p["start_step"], p["end_step"], p["layers"], p["wire"]) for p in sched["phases"]]
    # The bytes every rank sent are the schedule's predictions, step by step.
    s = Schedule.load(run / "schedule.json")
    shapes = dict(s.parameters)
    for r in ranks:
        sent = {int(k): v for k, v in r["bytes_sent_per_step"].items()}
        assert sorted(sent) == list(range(STEPS))
        for step, b in sent.items():
            assert b == sum(int(s.wire_at(step, n, shp)["bytes"]) for n, shp in shapes.items()), step
        assert sorted(int(k) for k in r["control_bytes_per_step"]) == [10, 16, 22]
    # Compression happened and the plans differ from the uniform default somewhere.
    assert sent[STEPS - 1] < sent[0]
    assert any(d["layers"] != _settings(sched["phases"][1]) for d in decisions)


def test_online_engines_reproduce_offline(lgreco, tmp_path):
    configs = [dict(defaults={"rank": 2}, warmup_steps=2, period=3, acc_steps=2, error_mode=mode, plan=opts, seed=4)
               for mode, (opts, _) in zip(["exact", "power", "power", "exact"], [ENGINES[2], ENGINES[3], ENGINES[4],
                                                                                   ENGINES[5]])]
    results = w.run_ddp(w.task_online, 2, 11, configs, str(tmp_path))
    for k, (cfg, (_, flags)) in enumerate(zip(configs, [ENGINES[2], ENGINES[3], ENGINES[4], ENGINES[5]])):
        a, b = results[0][k], results[1][k]
        assert a["decisions"] == b["decisions"] and len(a["decisions"]) == 2, k
        folder = tmp_path / str(k)
        out = tmp_path / f"off{k}.json"
        lgreco("plan", "--tables", folder / "tables.json", *flags, "--warmup-steps", "2", "--seed", "4",
               "--allow-infeasible", "-o", out, check=True)
        offline = json.loads(out.read_text())
        online = json.loads((folder / "schedule.json").read_text())
        assert [(p["label"], p["layers"]) for p in offline["phases"]] == [(p["label"], p["layers"]) for p in online["phases"]]
        assert [d["layers"] for d in a["decisions"]] == [p["layers"] for p in online["phases"][2:]]
        assert online["engine"] == cfg["plan"]["engine"]
        s = Schedule.load(folder / "schedule.json")
        for res in (a, b):
            for step, sent in res["bytes"].items():
                assert sent == sum(int(s.wire_at(step, n, shp)["bytes"]) for n, shp in s.parameters), (k, step)


def test_online_without_native_module_says_how_to_build_it(tmp_path):
    shapes = w.shapes()
    from lgreco import make_schedule

    sched = tmp_path / "s.json"
    sched.write_text(json.dumps(make_schedule(
        [(0, 1, "warmup", {n: {"method": "none"} for n in shapes}),
         (1, None, "uniform", {n: {"method": "powersgd", "params": {"rank": 2}} for n in shapes})], shapes)))
    code = f"""
import sys
sys.modules["lgreco._native"] = None  # as if it were built for another Python
sys.path.insert(0, {str(REPO / 'tests' / 'python')!r})
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import lgreco
from lgreco import OnlineHook, Schedule, ScheduleHook, native
assert not native.available()
import py_ddp_workers as w
dist.init_process_group("gloo", init_method="file://{tmp_path}/rdv", rank=0, world_size=1)
ddp = DDP(w.TinyNet())
try:
    OnlineHook(ddp, period=3)
    raise SystemExit("OnlineHook built without the native module")
except native.NativeUnavailable as e:
    print("ERROR:", e)
hook = ScheduleHook(ddp, Schedule.load({str(sched)!r})).register(ddp)
for step in range(3):
    x, y = w.batch(0, step)
    torch.nn.functional.cross_entropy(ddp(x), y).backward()
print("SENT", [hook.bytes_sent_per_step[s] == hook.predicted_bytes_per_step(s) for s in range(3)])
"""
    p = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(REPO / "python")),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    err = next(line for line in p.stdout.splitlines() if line.startswith("ERROR:"))
    assert f"-DLGRECO_PYTHON_EXECUTABLE={sys.executable}" in err and "lgreco_native" in err
    assert "SENT [True, True, True]" in p.stdout


def test_online_hook_rejects_bad_options():
    from lgreco import OnlineHook, ScheduleError

    with pytest.raises(ValueError, match=r"engine"):
        OnlineHook(w.TinyNet(), plan={"engine": "greedy"})
    with pytest.raises(ScheduleError, match=r"error_mode"):
        OnlineHook(w.TinyNet(), error_mode="trajectory")
    with pytest.raises(ScheduleError, match=r"period"):
        OnlineHook(w.TinyNet(), period=0)
    with pytest.raises(ValueError, match=r"family"):
        OnlineHook(w.TinyNet(), family="zip")


def test_replanning_in_the_job_keeps_the_plans_nccl_environment(lgreco, tmp_path):
    """A plan made with --topology --nccl-env records the job's NCCL restrictions in its config; the
    native planner the training job re-plans with reads them back and predicts exactly what the CLI
    predicted, which differs from the unrestricted prediction (the restriction is not dropped)."""
    tables = tiny_tables()
    path = tmp_path / "t.json"
    path.write_text(json.dumps(tables))
    docs = {}
    for name, extra in {"free": [], "ring": ["--nccl-env", "NCCL_ALGO=Ring NCCL_PROTO=Simple"]}.items():
        out = tmp_path / f"{name}.json"
        lgreco("plan", "--tables", path, "--engine", "time", "--topology", "2x8xH100-8x400G", *extra, "--warmup-steps", "4",
               "--seed", "3", "-o", out, check=True)
        docs[name] = json.loads(out.read_text())
    ring = docs["ring"]
    assert ring["config"]["network"]["topology"]["nccl_env"] == "NCCL_ALGO=Ring NCCL_PROTO=Simple"
    assert docs["free"]["config"]["network"]["topology"]["nccl_env"] is None
    again = native.plan_tables(tables, ring["config"], warmup_steps=4, seed=3)
    assert again["predicted"] == ring["predicted"]
    assert ring["predicted"] != docs["free"]["predicted"]
    bad = json.loads(json.dumps(ring["config"]))
    bad["network"]["topology"]["nccl_env"] = "NCCL_ALGO=rign"
    with pytest.raises(ValueError, match=r"network\.topology\.nccl_env.*rign"):
        native.plan_tables(tables, bad)
