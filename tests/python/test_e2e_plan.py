"""The main job end to end: trace → plan (closed-loop replay) → schedule validate → simulate, and
the schedule's predicted bytes against what the kernels send when the schedule is replayed."""
import json

import pytest

from e2e_traces import tiny_model_trace, TINY_LAYERS

TOPO = "4x8xA100-1x25G"


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    import subprocess
    from conftest import lgreco_bin

    d = tmp_path_factory.mktemp("e2e")
    trace = d / "tiny.h5"
    tiny_model_trace(trace, bursts=2, burst_length=12)
    sched, tables = d / "schedule.json", d / "tables.json"
    p = subprocess.run([lgreco_bin(), "plan", "--trace", trace, "--family", "powersgd", "--default", "rank=4",
                        "--topology", TOPO, "-o", sched, "--tables-out", tables, "--threads", "2"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return {"dir": d, "trace": trace, "schedule": sched, "tables": tables, "stdout": p.stdout}


def test_plan_summary_mentions_shrunk_windows(planned):
    out = planned["stdout"]
    assert "windows shrank to the trace's bursts" in out
    assert "adaptive" in out and "uniform" in out and "uncompressed" in out


def test_schedule_validates_and_has_phases(planned, lgreco):
    p = lgreco("schedule", "validate", planned["schedule"])
    assert p.returncode == 0, p.stderr
    doc = json.loads(planned["schedule"].read_text())
    labels = [ph["label"] for ph in doc["phases"]]
    assert labels == ["warmup", "uniform", "plan-0", "plan-1"]
    names = {l["name"] for l in TINY_LAYERS}
    for ph in doc["phases"]:
        assert set(ph["layers"]) == names
    assert doc["phases"][-1]["end_step"] is None
    for a, b in zip(doc["phases"], doc["phases"][1:]):
        assert a["end_step"] == b["start_step"]


def test_adaptive_within_budget_and_not_larger_than_uniform(planned):
    pred = json.loads(planned["schedule"].read_text())["predicted"]
    assert pred["total_error"] <= pred["uniform_total_error"] * (1 + 1e-9)
    assert pred["bytes_per_step"] <= pred["uniform_bytes_per_step"]
    assert pred["uniform_bytes_per_step"] < pred["uncompressed_bytes_per_step"]
    assert pred["compression_ratio"] == pytest.approx(pred["uncompressed_bytes_per_step"] / pred["bytes_per_step"])
    for key in ("step_time_s", "uniform_step_time_s", "uncompressed_step_time_s"):
        assert pred[key] > 0


def test_predicted_bytes_equal_replayed_bytes(planned, lgreco):
    p = lgreco("replay", "--trace", planned["trace"], "--schedule", planned["schedule"], "--format", "json")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    sched = json.loads(planned["schedule"].read_text())
    by_label = {ph["label"]: ph for ph in sched["phases"]}
    assert len(rep["phases"]) == len(sched["phases"])
    for ph in rep["phases"]:
        assert ph["bytes_per_step"] == pytest.approx(by_label[ph["label"]]["predicted"]["bytes_per_step"], rel=1e-12), ph["label"]
    assert rep["phases"][-1]["bytes_per_step"] == pytest.approx(sched["predicted"]["bytes_per_step"], rel=1e-12)


def test_tables_reusable_by_plan_tables(planned, lgreco):
    tables = json.loads(planned["tables"].read_text())
    assert tables["kind"] == "lgreco-tables"
    assert len(tables["windows"]) == 2
    out = planned["dir"] / "from_tables.json"
    p = lgreco("plan", "--tables", planned["tables"], "--bandwidth", "25Gbps", "-o", out)
    assert p.returncode == 0, p.stderr


def test_simulate_with_schedule(planned, lgreco):
    if "simulate" not in lgreco("--list-commands", check=True).stdout.split("\n"):
        pytest.skip("this build has no `simulate` command yet")
    p = lgreco("simulate", "--trace", planned["trace"], "--schedule", planned["schedule"], "--topology", TOPO)
    assert p.returncode == 0, p.stderr


def test_existing_output_is_refused_and_left_alone(planned, lgreco):
    sched = planned["schedule"]
    before = sched.read_text()
    p = lgreco("plan", "--trace", planned["trace"], "--topology", TOPO, "-o", sched)
    assert p.returncode != 0
    assert sched.read_text() == before


def test_cuda_backend_without_device_is_a_clear_error(planned, lgreco):
    p = lgreco("info", "--format", "json", check=True)
    if json.loads(p.stdout)["provenance"]["cuda"]:
        pytest.skip("this build has CUDA; the no-device path is covered where it has none")
    out = planned["dir"] / "cuda.json"
    p = lgreco("plan", "--trace", planned["trace"], "-o", out, "--backend", "cuda")
    assert p.returncode == 1
    assert "CUDA" in p.stderr or "cuda" in p.stderr
    assert not out.exists()
