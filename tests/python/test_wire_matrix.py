"""One truth for bytes, for every method and setting the registry knows: the bytes a schedule from
`lgreco plan --trace` predicts per step == the bytes `lgreco replay --schedule --phase scheduled`
counts from the kernels == the bytes the PyTorch hook sends in a 2-process DDP job, step by step
(DGC warm-up stages included), and the Python package's view of the registry equals the C++ one.
"""
import json
import re

import numpy as np
import pytest

import py_ddp_workers as w
from e2e_traces import write_trace
from lgreco import Schedule, native, parse_method
from lgreco.methods import REGISTRY, ScheduleError

STEPS = 6  # recorded steps 0..5: windows [0,2) [2,4) [4,6) → phases uniform, plan-0, plan-1, plan-2
HOOK_STEPS = 8

SETTINGS = [
    ("powersgd", "rank=2"), ("powersgd", "rank=2,power_iterations=2"), ("powersgd", "rank=1,orthogonalization=qr"),
    ("topk", "density=0.1"), ("topk", "density=0.1,encoding=pairs"), ("topk", "density=0.3,encoding=bitmap"),
    ("topk", "density=0.05,encoding=delta"), ("topk", "density=0.02,warmup_steps=2,momentum=0.9"),
    ("topk", "density=0.05,selection=dgc"), ("topk", "density=0.05,selection=dgc,encoding=delta,warmup_steps=3"),
    ("randomk", "density=0.1"), ("randomk", "density=0.1,scaled=true"),
    ("qsgd", "bits=4"), ("qsgd", "levels=3,encoding=elias,bucket_size=64"), ("qsgd", "bits=3,norm=max"),
    ("maxmin", "bits=4,rounding=nearest"), ("maxmin", "bits=2,rounding=stochastic,bucket_size=64"),
    ("sign", "bucket_size=128"), ("terngrad", ""), ("nuqsgd", "levels=3,bucket_size=256"),
    ("fp16", ""), ("bf16", ""), ("mixed", "rank=2,bits=4"), ("all", "rank=2,bits=4,density=0.1"),
]


@pytest.fixture(scope="module")
def tiny_trace(tmp_path_factory):
    """A trace of TinyNet's parameters (the model of the DDP job), random gradients."""
    path = tmp_path_factory.mktemp("matrix") / "tiny.h5"
    rng = np.random.default_rng(0)
    shapes = w.shapes()
    layers, grads = [], []
    for i, (name, shape) in enumerate(shapes.items()):
        layers.append({"name": name, "shape": list(shape), "kind": "weight" if len(shape) > 1 else "bias",
                       "bucket": 0, "backward_order": len(shapes) - 1 - i})
        grads.append(rng.standard_normal((STEPS, int(np.prod(shape)))).astype(np.float32))
    write_trace(path, layers, list(range(STEPS)), grads, model="tinynet", world_size=2)
    return path


def plan(lgreco, trace, family, default, out):
    args = ["plan", "--trace", trace, "--family", family, "--warmup-steps", "0", "--period", "2", "--acc-steps", "2",
            "--min-numel", "64", "--threads", "1", "-o", out]
    if default:
        args += ["--default", default]
    lgreco(*args, check=True)
    lgreco("schedule", "validate", out, check=True)
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def planned(tiny_trace, tmp_path_factory):
    from conftest import lgreco_bin
    import subprocess

    def lgreco(*args, check=False):
        p = subprocess.run([lgreco_bin(), *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"lgreco {' '.join(map(str, args))}: {p.stderr}")
        return p

    folder = tmp_path_factory.mktemp("schedules")
    out = []
    for i, (family, default) in enumerate(SETTINGS):
        s = folder / f"s{i}.json"
        doc = plan(lgreco, tiny_trace, family, default, s)
        rep = json.loads(lgreco("replay", "--trace", tiny_trace, "--schedule", s, "--phase", "scheduled", "--threads", "1",
                                "--format", "json", check=True).stdout)
        out.append({"family": family, "default": default, "doc": doc, "replay": rep["phases"][0]})
    return out


def predicted(schedule: Schedule, shapes, step):
    return sum(int(schedule.wire_at(step, n, s)["bytes"]) for n, s in shapes.items())


def test_predicted_bytes_equal_replayed_and_hook_bytes_for_every_setting(planned):
    shapes = w.shapes()
    docs = [p["doc"] for p in planned]
    results = w.run_ddp(w.task_bytes, 2, HOOK_STEPS, docs)
    methods_seen = set()
    for k, p in enumerate(planned):
        s = Schedule(p["doc"])
        label = f"{p['family']} {p['default']}"
        for ph in s.phases:
            methods_seen.update(m.name for m in ph.layers.values())
            # A phase's prediction is the sum of its parameters' steady-state wire plans.
            assert ph.predicted_bytes_per_step == ph.bytes_per_step(), (label, ph.label)
        # The kernels, replaying the schedule as scheduled, send what the schedule predicts per step.
        for st in p["replay"]["steps"]:
            assert st["bytes"] == st["predicted_bytes"] == predicted(s, shapes, st["step"]), (label, st)
        # The DDP hook, on both ranks, sends the same bytes per step (steps 0..7, past the trace too).
        for rank_result in results:
            sent = rank_result[k]["bytes"]
            assert sorted(sent) == list(range(HOOK_STEPS)), label
            for step in range(HOOK_STEPS):
                assert sent[step] == predicted(s, shapes, step), (label, step)
            for st in p["replay"]["steps"]:
                assert sent[st["step"]] == st["bytes"], (label, st)
    # Every method of the registry is exercised (as a family's candidate or default).
    assert methods_seen == {m["name"] for m in REGISTRY["methods"]}


def test_warmup_steps_really_change_the_bytes(planned):
    """The DGC warm-up case is not vacuous: its per-step bytes differ across stages."""
    warm = next(p for p in planned if "warmup_steps=2" in p["default"])
    assert len({st["bytes"] for st in warm["replay"]["steps"]}) > 1


def test_every_family_of_plan_help_is_in_the_matrix(lgreco):
    text = lgreco("plan", "--trace", "x", "--help", check=True).stdout
    listed = re.search(r"method family: ([^;]+?)(?:, mixed|;)", text.replace("\n", " "))
    assert listed, text
    families = {f.strip() for f in re.split(r",| or ", listed.group(1)) if f.strip()} | {"mixed", "all"}
    assert families <= {f for f, _ in SETTINGS}, families - {f for f, _ in SETTINGS}


def test_python_registry_is_the_cpp_registry(lgreco):
    """registry.json (what Python reads without the native module) and the native module's registry
    are both exactly `lgreco methods --format json`."""
    cli = json.loads(lgreco("methods", "--format", "json", check=True).stdout)
    assert REGISTRY == cli
    from lgreco.methods import _REGISTRY_FILE
    assert json.loads(_REGISTRY_FILE.read_text()) == cli
    if native.available():
        assert native.registry() == cli


def _cases():
    """Valid and invalid settings at every parameter's edges, from the registry itself."""
    out = []
    for m in REGISTRY["methods"]:
        out.append((m["name"], {}))
        for p in m["params"]:
            if p["type"] == "int":
                vals = [p["min"], p["max"], p["min"] - 1, p["max"] + 1, 2.0 * p["min"], 1.5, True, "3"]
            elif p["type"] == "real":
                vals = [p["min"], p["max"], (p["min"] + p["max"]) / 2, p["max"] * 2 + 1, p["min"] - 1, float("nan"), "x"]
            elif p["type"] == "bool":
                vals = [True, False, 1, "true"]
            else:
                vals = list(p["choices"]) + ["nope", 3]
            out += [(m["name"], {p["name"]: v}) for v in vals]
    out.append(("qsgd", {"bits": 4, "levels": 7}))
    out.append(("powersgd", {"rnak": 2}))
    return out


@pytest.mark.skipif(not native.available(), reason="the native module is not built for this Python")
def test_python_parse_agrees_with_the_cpp_parser_on_every_edge():
    for name, params in _cases():
        obj = {"method": name, "params": params}
        try:
            want = native.method_json(obj)
        except ValueError:
            want = None
        try:
            got = parse_method(obj).to_json()
        except ScheduleError:
            got = None
        assert (want is None) == (got is None), (obj, want, got)
        if want is not None:
            assert got == want, obj


def test_generated_registry_files_are_up_to_date():
    """python/lgreco/registry.json and the schemas' method enums are generated from the registry."""
    import subprocess
    import sys

    from conftest import REPO, lgreco_bin

    p = subprocess.run([sys.executable, str(REPO / "scripts" / "generate_registry_files.py"), lgreco_bin(), "--check"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
