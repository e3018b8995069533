"""`lgreco simulate` from the outside: presets, traces with a planned schedule, JSON fields, bad input."""
import json
import math

import pytest

SLOW = "2x8xA100-1x25GbE"  # two hosts on one 25 GbE NIC each: communication dominates


def simulate(lgreco, *args):
    p = lgreco("simulate", *args, "--format", "json", check=True)
    return json.loads(p.stdout)


def check_doc(doc):
    assert doc["kind"] == "lgreco-simulate" and doc["schema_version"] == 1 and "provenance" in doc
    assert doc["step_s"] >= doc["compute_s"] > 0
    assert doc["exposed_comm_s"] >= 0
    assert math.isclose(doc["speedup"], doc["uncompressed_step_s"] / doc["step_s"], rel_tol=1e-12)
    prev_end = 0.0
    for b in doc["buckets"]:
        for key in ("bucket", "ready_s", "start_s", "end_s", "comm_s", "allreduce_round0_bytes", "allreduce_round1_bytes",
                    "allgather_bytes"):
            assert key in b
        assert b["start_s"] >= max(b["ready_s"], prev_end) - 1e-15  # one communication stream, bucket order
        assert math.isclose(b["end_s"] - b["start_s"], b["comm_s"], rel_tol=1e-9, abs_tol=1e-15)
        prev_end = b["end_s"]
    total = sum(b["allreduce_round0_bytes"] + b["allreduce_round1_bytes"] + b["allgather_bytes"] for b in doc["buckets"])
    assert math.isclose(total, doc["bytes_per_step"], rel_tol=1e-12)


def test_preset_uncompressed_is_its_own_baseline(lgreco):
    doc = simulate(lgreco, "--model", "resnet50", "--topology", "dgx-a100")
    check_doc(doc)
    assert doc["speedup"] == 1.0
    assert doc["config"]["compute"]["source"] == "estimated" and doc["config"]["bucket_source"] == "ddp"
    assert "resnet50 preset" in doc["config"]["compute"]["note"]
    # ResNet-50 in fp32: 4 bytes per parameter.
    assert doc["bytes_per_step"] == 4 * 25557032
    # One host of NVLink GPUs: the presets' held-out error bands of that class, both size bands.
    assert set(doc["expected_network_error"]["classes"]) == {"one-host-nvlink"}
    text = lgreco("simulate", "--model", "resnet50", "--topology", "dgx-a100", check=True).stdout.splitlines()
    assert text[-4].startswith("how far off to expect the network times in these predictions")
    assert [l.split(":")[0] for l in text[-3:]] == ["  one host over NVLink, < 1 MiB", "  one host over NVLink, 1-64 MiB",
                                                   "  one host over NVLink, >= 64 MiB"]


def test_preset_uniform_method_on_slow_network(lgreco):
    doc = simulate(lgreco, "--model", "resnet50", "--topology", SLOW, "--method", "powersgd:rank=4")
    check_doc(doc)
    assert doc["speedup"] > 1 and doc["bytes_per_step"] < doc["uncompressed_bytes_per_step"] / 10


@pytest.fixture()
def trace_and_schedule(lgreco, tmp_path):
    trace = tmp_path / "r18.h5"
    lgreco("trace", "synth", "--model", "resnet18", "--steps", "2", "-o", trace, check=True)
    info = json.loads(lgreco("trace", "info", trace, "--format", "json", check=True).stdout)
    layers = []
    for l in info["layers"]:
        shape, numel = l["shape"], math.prod(l["shape"])
        cands = [{"method": "none", "params": {}, "error": 0.0, "bytes": 4 * numel, "collective": "allreduce"}]
        if len(shape) > 1:
            n, m = shape[0], numel // shape[0]
            for r in (1, 2, 4):
                size = 4 * min(r, n, m) * (n + m) if (n + m) * min(r, n, m) * 2 < n * m else 4 * numel
                cands.append({"method": "powersgd", "params": {"rank": r}, "error": math.sqrt(numel) / (r + 1), "bytes": size,
                              "collective": "allreduce"})
        layers.append({"name": l["name"], "shape": shape, "numel": numel, "kind": l["kind"], "bucket": l["bucket"],
                       "backward_order": l["backward_order"], "default": len(cands) - 1, "candidates": cands})
    tables = {"schema_version": 1, "kind": "lgreco-tables", "model": "resnet18", "world_size": 16, "error_mode": "power",
              "acc_steps": 2, "windows": [{"start_step": 0, "end_step": 2, "layers": layers}], "provenance": {}}
    t = tmp_path / "tables.json"
    t.write_text(json.dumps(tables))
    sched = tmp_path / "s.json"
    lgreco("plan", "--tables", t, "--bandwidth", "25Gbps", "--warmup-steps", "0", "-o", sched, check=True)
    return trace, sched


def test_trace_with_schedule(lgreco, trace_and_schedule):
    trace, sched = trace_and_schedule
    doc = simulate(lgreco, "--trace", trace, "--topology", SLOW, "--schedule", sched)
    check_doc(doc)
    assert doc["config"]["schedule"]["phase"] == len(json.loads(sched.read_text())["phases"]) - 1
    assert doc["speedup"] >= 1.0
    assert doc["bytes_per_step"] < doc["uncompressed_bytes_per_step"]
    phases = json.loads(sched.read_text())["phases"]
    first = simulate(lgreco, "--trace", trace, "--topology", SLOW, "--schedule", sched, "--phase", "0")
    assert first["config"]["schedule"]["label"] == phases[0]["label"]
    assert math.isclose(first["bytes_per_step"], phases[0]["predicted"]["bytes_per_step"], rel_tol=1e-12)
    assert math.isclose(doc["bytes_per_step"], phases[-1]["predicted"]["bytes_per_step"], rel_tol=1e-12)


def test_bad_inputs_name_the_file(lgreco, tmp_path, trace_and_schedule):
    trace, sched = trace_and_schedule
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    p = lgreco("simulate", "--trace", trace, "--topology", SLOW, "--schedule", broken)
    assert p.returncode == 1 and "broken.json" in p.stderr
    doc = json.loads(sched.read_text())
    doc["phases"][-1]["layers"].pop(next(iter(doc["phases"][-1]["layers"])))
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps(doc))
    p = lgreco("simulate", "--trace", trace, "--topology", SLOW, "--schedule", missing)
    assert p.returncode == 1 and "missing.json" in p.stderr
    notrace = tmp_path / "nothing.h5"
    notrace.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 64)
    p = lgreco("simulate", "--trace", notrace, "--topology", SLOW)
    assert p.returncode == 1 and "nothing.h5" in p.stderr
    p = lgreco("simulate", "--model", "resnet18", "--trace", trace, "--topology", SLOW)
    assert p.returncode != 0 and "exactly one" in p.stderr
    p = lgreco("simulate", "--trace", trace, "--topology", SLOW, "--schedule", sched, "--phase", "99")
    assert p.returncode != 0 and "--phase" in p.stderr
