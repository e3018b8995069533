"""`lgreco plan --tables`: schedules that validate against the schema, budgets honoured, degenerate
inputs answered clearly. Tables are generated here (PowerSGD ranks on a small MLP)."""
import json
import math
import pathlib
import random

import jsonschema
import pytest

from conftest import slowed_fit

REPO = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "schemas" / "schedule.schema.json").read_text())

SHAPES = [  # name, shape, bucket, backward order (bucket 0 holds the last layers)
    ("fc3.weight", (10, 256), 0, 0), ("fc3.bias", (10,), 0, 1),
    ("fc2.weight", (256, 512), 0, 2), ("fc2.bias", (256,), 1, 3),
    ("fc1.weight", (512, 784), 1, 4), ("fc1.bias", (512,), 1, 5),
]


def make_tables(windows=2, seed=0, zero=False, ranks=range(2, 9), default_rank=4):
    """Tables with PowerSGD candidates; error ∝ sqrt(n·m)/(r+1) with a random factor per window."""
    rng = random.Random(seed)
    out = []
    for w in range(windows):
        layers = []
        for name, shape, bucket, order in SHAPES:
            numel = math.prod(shape)
            if len(shape) == 1:
                cands = [{"method": "none", "params": {}, "error": 0.0, "bytes": 4 * numel, "collective": "allreduce"}]
                default = 0
            else:
                n, m = shape[0], numel // shape[0]
                cands = []
                for r in ranks:
                    err = 0.0 if zero else (1 + rng.random()) * math.sqrt(n * m) / (r + 1)
                    size = 4 * r * (n + m) if (n + m) * r * 2 < n * m else 4 * numel
                    cands.append({"method": "powersgd", "params": {"rank": r}, "error": err, "bytes": size,
                                  "collective": "allreduce"})
                default = list(ranks).index(default_rank)
            layers.append({"name": name, "shape": list(shape), "numel": numel,
                           "kind": "bias" if len(shape) == 1 else "weight", "bucket": bucket,
                           "backward_order": order, "compute_time_s": 1e-8 * numel, "default": default,
                           "candidates": cands})
        out.append({"start_step": 100 + 100 * w, "end_step": 200 + 100 * w, "layers": layers})
    return {"schema_version": 1, "kind": "lgreco-tables", "model": "mlp", "world_size": 8, "error_mode": "power",
            "acc_steps": 10, "windows": out, "provenance": {}}


def write(path, doc):
    path.write_text(json.dumps(doc))  # Python writes bare NaN/Infinity, as a real producer would
    return path


@pytest.mark.parametrize("engine", ["reference", "exact", "time"])
def test_plan_writes_valid_schedule_within_budget(lgreco, tmp_path, engine):
    tables = make_tables()
    t = write(tmp_path / "t.json", tables)
    out = tmp_path / "s.json"
    lgreco("plan", "--tables", t, "--engine", engine, "--bandwidth", "10Gbps", "-o", out, check=True)
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert [p["label"] for p in doc["phases"]] == ["warmup", "uniform", "plan-0", "plan-1"]
    assert doc["phases"][-1]["end_step"] is None
    # The plan of the last window meets α = 1 × the uniform error of that window.
    last = tables["windows"][-1]["layers"]
    uniform_error = sum(l["candidates"][l["default"]]["error"] for l in last)
    pr = doc["predicted"]
    assert pr["uniform_total_error"] == pytest.approx(uniform_error)
    assert pr["total_error"] <= uniform_error * (1 + 1e-12)
    chosen_error = 0.0
    for l in last:
        setting = doc["phases"][-1]["layers"][l["name"]]
        match = [c for c in l["candidates"] if c["method"] == setting["method"] and
                 all(setting["params"].get(k) == v for k, v in c["params"].items())]
        assert len(match) == 1, (l["name"], setting)
        chosen_error += match[0]["error"]
    assert chosen_error == pytest.approx(pr["total_error"])
    assert pr["compression_ratio"] == pytest.approx(pr["uncompressed_bytes_per_step"] / pr["bytes_per_step"])
    if engine != "reference":  # exact and time are never worse than their own objective's baseline
        assert pr["bytes_per_step"] <= pr["uniform_bytes_per_step"] or engine == "time"
    if engine == "time":
        assert pr["step_time_s"] <= pr["uniform_step_time_s"] * (1 + 1e-12)


def test_plan_summary_table_and_json_format(lgreco, tmp_path):
    t = write(tmp_path / "t.json", make_tables())
    p = lgreco("plan", "--tables", t, check=True)
    assert "fc2.weight" in p.stdout and "compression" in p.stdout and "uniform" in p.stdout
    p = lgreco("plan", "--tables", t, "--format", "json", "--engine", "exact", check=True)
    doc = json.loads(p.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["config"]["engine"] == "exact"
    assert doc["provenance"]["inputs"][0]["sha256"]


def test_nan_error_names_window_layer_candidate(lgreco, tmp_path):
    tables = make_tables()
    tables["windows"][1]["layers"][4]["candidates"][3]["error"] = float("nan")
    t = write(tmp_path / "t.json", tables)
    assert "NaN" in t.read_text()
    out = tmp_path / "s.json"
    p = lgreco("plan", "--tables", t, "-o", out)
    assert p.returncode == 1
    assert "window 1" in p.stderr and "fc1.weight" in p.stderr and "candidate 3" in p.stderr and "NaN" in p.stderr
    assert not out.exists()


def test_all_zero_errors_give_uniform_plan_with_warning(lgreco, tmp_path):
    t = write(tmp_path / "t.json", make_tables(zero=True))
    p = lgreco("plan", "--tables", t, "--format", "json", check=True)
    doc = json.loads(p.stdout)
    assert doc["predicted"]["status"] == "uniform"
    assert any("T = 0" in w for w in doc["predicted"]["warnings"])
    assert doc["predicted"]["bytes_per_step"] == doc["predicted"]["uniform_bytes_per_step"]


def test_infeasible_budget(lgreco, tmp_path):
    t = write(tmp_path / "t.json", make_tables())
    out = tmp_path / "s.json"
    p = lgreco("plan", "--tables", t, "--error-budget", "1e-3", "-o", out)
    assert p.returncode == 1 and "no plan meets the error budget" in p.stderr
    assert not out.exists()
    p = lgreco("plan", "--tables", t, "--error-budget", "1e-3", "--allow-infeasible", "-o", out, check=True)
    doc = json.loads(out.read_text())
    assert doc["predicted"]["status"] == "infeasible"
    # The least-error plan: every layer at its least-error candidate of the last window among those
    # that compress at PowerSGD's minimum rate 2 (the others are dropped; the default always stays).
    for layer in make_tables()["windows"][-1]["layers"]:
        n = layer["shape"][0]
        m = layer["numel"] // n

        def allowed(i, c):
            return c["method"] != "powersgd" or i == layer["default"] or (n + m) * c["params"]["rank"] * 2 < n * m

        best = min((c for i, c in enumerate(layer["candidates"]) if allowed(i, c)), key=lambda c: c["error"])
        setting = doc["phases"][-1]["layers"][layer["name"]]
        assert setting["method"] == best["method"], layer["name"]
        if best["method"] == "powersgd":
            assert setting["params"]["rank"] == best["params"]["rank"], layer["name"]


def test_constraints_pin_exclude_and_dual(lgreco, tmp_path):
    t = write(tmp_path / "t.json", make_tables())
    p = lgreco("plan", "--tables", t, "--engine", "exact", "--pin", "fc1.weight=none", "--exclude", "^fc3",
               "--format", "json", check=True)
    doc = json.loads(p.stdout)
    last = doc["phases"][-1]["layers"]
    assert last["fc1.weight"]["method"] == "none"
    assert last["fc3.weight"]["params"]["rank"] == 4  # excluded → default
    p = lgreco("plan", "--tables", t, "--engine", "dual", "--bytes-budget", "30KiB", "--format", "json", check=True)
    doc = json.loads(p.stdout)
    assert doc["predicted"]["bytes_per_step"] <= 30 * 1024
    p = lgreco("plan", "--tables", t, "--engine", "dual", "--alpha", "1")
    assert p.returncode == 2 and "--engine dual: the dual engine needs" in p.stderr


def test_output_not_overwritten_and_usage_errors(lgreco, tmp_path):
    t = write(tmp_path / "t.json", make_tables())
    out = tmp_path / "s.json"
    out.write_text("keep")
    p = lgreco("plan", "--tables", t, "-o", out)
    assert p.returncode == 1 and out.read_text() == "keep"
    lgreco("plan", "--tables", t, "-o", out, "--force", check=True)
    assert json.loads(out.read_text())["kind"] == "lgreco-schedule"
    assert lgreco("plan", "--tables", t, "--alpha", "1", "--error-budget", "2").returncode == 2
    assert lgreco("plan").returncode == 2
    # One budget rule (planner::budget_problem): alpha in (0, 1e6], an error budget >= 0.
    for flag, value, expected in (("--alpha", "-1", "a number > 0 and at most 1e+06"), ("--alpha", "0", "a number > 0 and at most 1e+06"),
                                  ("--alpha", "1e308", "a number > 0 and at most 1e+06"), ("--error-budget", "-0.5", "a finite number >= 0")):
        p = lgreco("plan", "--tables", t, flag, value, "-o", tmp_path / "neg.json")
        assert p.returncode == 2 and f"{flag} {value}: expected {expected}" in p.stderr, p.stderr
        assert not (tmp_path / "neg.json").exists()
    p = lgreco("plan", "--tables", t, "--bytes-budget", "1KiB", "-o", tmp_path / "neg.json")
    assert p.returncode == 2 and "--engine reference: a byte or time budget needs the dual engine" in p.stderr
    bad = make_tables()
    bad["windows"][0]["layers"][0]["colour"] = "red"
    p = lgreco("plan", "--tables", write(tmp_path / "bad.json", bad))
    assert p.returncode == 1 and "unknown key 'colour'" in p.stderr


def test_generated_tables_match_the_tables_schema():
    schema = json.loads((REPO / "schemas" / "tables.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(make_tables(), schema)
    bad = make_tables()
    bad["windows"][0]["layers"][0]["candidates"][0]["colour"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_plan_tables_on_a_topology_with_and_without_a_network_fit(lgreco, tmp_path):
    """--topology replaces the ring stand-in by the NCCL-shaped model; --network-fit calibrates it.
    The fit here is made from the preset's own predictions slowed down 2x, so the predicted
    uncompressed step must grow, and the schedule's network config names the fit."""
    t = write(tmp_path / "t.json", make_tables())
    topo = "1x8xA100-1x25G"
    fit = slowed_fit(lgreco, tmp_path, topo, 8, 2.0)
    docs = {}
    for name, extra in {"preset": [], "fit": ["--network-fit", fit]}.items():
        out = tmp_path / f"schedule-{name}.json"
        lgreco("plan", "--tables", t, "--engine", "time", "--topology", topo, *extra, "-o", out, check=True)
        docs[name] = json.loads(out.read_text())
        jsonschema.validate(docs[name], SCHEMA)
        assert docs[name]["config"]["network"]["model"] == "nccl"
    assert docs["fit"]["config"]["network"]["topology"]["network_fit"] == str(fit)
    assert docs["preset"]["config"]["network"]["topology"]["network_fit"] is None
    a, b = docs["preset"]["predicted"], docs["fit"]["predicted"]
    assert b["uncompressed_step_time_s"] > a["uncompressed_step_time_s"]
    assert b["step_time_s"] <= b["uniform_step_time_s"] * (1 + 1e-12)
    p = lgreco("plan", "--tables", t, "--topology", "dgx-a100", "--network-fit", fit, "-o", tmp_path / "x.json")
    assert p.returncode == 1 and "dgx-a100" in p.stderr and topo in p.stderr
    p = lgreco("plan", "--tables", t, "--network-fit", fit, "-o", tmp_path / "y.json")
    assert p.returncode == 2 and "--topology" in p.stderr
