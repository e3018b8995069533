"""A schedule written by `lgreco plan --tables` loads into the ScheduleHook (schema + structure),
and its predicted bytes per phase equal the wire-byte contract computed from the model's shapes."""
import json

import pytest

import py_ddp_workers as w
from conftest import lgreco_bin
from lgreco import Schedule, ScheduleHook
from test_py_hook import contract_bytes


def test_lgreco_plan_schedule_drives_the_hook(tmp_path, lgreco):
    try:
        lgreco_bin()
    except RuntimeError as e:
        pytest.skip(str(e))
    if lgreco("plan", "--help").returncode != 0 or "--tables" not in lgreco("plan", "--help").stdout:
        pytest.skip("this lgreco binary has no `plan --tables`")
    shapes = w.shapes()
    names = list(shapes)
    layers = []
    for i, n in enumerate(names):
        sh = shapes[n]
        numel = 1
        for d in sh:
            numel *= d
        cands = []
        for k in range(2, 9):  # errors fall with the rank, as a real spectrum's tail does
            b = contract_bytes("powersgd", {"rank": k}, sh)
            if b < 4 * numel:
                cands.append({"method": "powersgd", "params": {"rank": k}, "error": 1.0 / k / (i + 1),
                              "bytes": b, "collective": "allreduce"})
        default = next((j for j, c in enumerate(cands) if c["params"]["rank"] == 4), None)
        if default is None:
            cands, default = [{"method": "none", "params": {}, "error": 0.0, "bytes": 4 * numel,
                               "collective": "allreduce"}], 0
        layers.append({"name": n, "shape": list(sh), "numel": numel, "kind": "weight" if len(sh) > 1 else "bias",
                       "bucket": 0, "backward_order": len(names) - 1 - i, "default": default, "candidates": cands})
    tables = {"schema_version": 1, "kind": "lgreco-tables", "model": "tinynet", "world_size": 2,
              "error_mode": "exact", "acc_steps": 10,
              "windows": [{"start_step": 10, "end_step": 20, "layers": layers}], "provenance": {}}
    (tmp_path / "tables.json").write_text(json.dumps(tables))
    p = lgreco("plan", "--tables", tmp_path / "tables.json", "-o", tmp_path / "s.json")
    assert p.returncode == 0, p.stderr
    sched = Schedule.load(tmp_path / "s.json")
    hook = ScheduleHook(w.TinyNet(), sched)  # raises if any phase's prediction disagrees
    assert len(sched.phases) >= 2
    for ph in sched.phases:
        want = sum(contract_bytes(m.name, dict(m.params), shapes[n]) for n, m in ph.layers.items())
        assert ph.predicted_bytes_per_step == want == ph.bytes_per_step(), ph.label
