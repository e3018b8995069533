"""`make demo` (scripts/demo.sh): its stages on a toy run (LGRECO_DEMO_SIZE=tiny: a 6,406-parameter
char-LM, 16 steps), and that a failing stage stops it. About 40 s: two 2-process recordings."""
import json
import os
import subprocess

import pytest

from conftest import REPO, lgreco_bin

DEMO = REPO / "scripts" / "demo.sh"


def run_demo(binary, out, **env):
    e = {**os.environ, "LGRECO_DEMO_SIZE": "tiny", "LGRECO_DEMO_OUT": str(out), **env}
    return subprocess.run(["bash", str(DEMO), str(binary)], capture_output=True, text=True, env=e, timeout=300)


def test_tiny_demo_runs_every_stage(tmp_path):
    out = tmp_path / "demo"
    proc = run_demo(lgreco_bin(), out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for stage in ("1/5", "2/5", "3/5", "4/5", "5/5"):
        assert f"== {stage}" in proc.stdout
    assert "demo finished in" in proc.stdout
    assert "ScheduleHook(ddp, Schedule.load(" in proc.stdout
    assert not (out / "charlm-trace.h5").exists(), "the trace must be deleted"
    for name in ("schedule.json", "tables.json", "whatif.json", "whatif.txt", "whatif.png", "summary.txt",
                 "compute-scale.json", "record-run.json"):
        assert (out / name).stat().st_size > 0, name
    assert sum(f.stat().st_size for f in out.iterdir()) < 2_000_000
    # the scale is the measured ratio the demo prints, and the plan and the what-if used it
    scale = json.loads((out / "compute-scale.json").read_text())
    x = scale["compute_scale"]
    assert x == pytest.approx(scale["cpu_matmul_flops"] / (scale["fraction"] * scale["gpu_dense_peak_flops"]), rel=1e-12)
    sched = json.loads((out / "schedule.json").read_text())
    assert sched["config"]["compute"]["recorded_scale"] == pytest.approx(x, rel=1e-9)
    assert "x X = the A100's" in proc.stdout
    # the summary's figures are the schedule's and the what-if's
    pred = sched["predicted"]
    summary = (out / "summary.txt").read_text()
    assert f"{pred['uniform_bytes_per_step'] / pred['bytes_per_step']:.2f}x" in summary
    points = json.loads((out / "whatif.json").read_text())["points"]
    gains = [p["uniform_step_s"] / p["adaptive_step_s"] for p in points]
    assert f"{max(gains):.2f}x" in summary
    assert (out / "whatif.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    subprocess.run([lgreco_bin(), "schedule", "validate", str(out / "schedule.json")], check=True,
                   capture_output=True)


def test_failing_stage_stops_the_demo(tmp_path):
    fake = tmp_path / "lgreco"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = plan ]; then echo "lgreco: error: injected" >&2; exit 1; fi\n'
                    f'exec "{lgreco_bin()}" "$@"\n')
    fake.chmod(0o755)
    out = tmp_path / "demo"
    proc = run_demo(fake, out)
    assert proc.returncode != 0
    assert "lgreco: error: injected" in proc.stderr
    assert "== 4/5" not in proc.stdout and "demo finished" not in proc.stdout
    assert not (out / "charlm-trace.h5").exists(), "a failed demo must not leave its trace behind"
    assert not (out / "schedule.json").exists()


def test_bad_input_is_one_line(tmp_path):
    proc = run_demo(tmp_path / "no-such-lgreco", tmp_path / "o")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "demo.sh: error:" in proc.stderr
    proc = run_demo(lgreco_bin(), tmp_path / "o", LGRECO_DEMO_SIZE="huge")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "LGRECO_DEMO_SIZE=huge" in proc.stderr
    proc = subprocess.run(["bash", str(DEMO)], capture_output=True, text=True)
    assert proc.returncode != 0 and "usage" in proc.stderr


def test_report_rejects_bad_input(tmp_path):
    script = REPO / "scripts" / "demo_report.py"
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "lgreco-whatif", "points": [{"nodes": 1}]}')
    sched = tmp_path / "s.json"
    sched.write_text('{"predicted": {}}')
    for args in (["summary", "--schedule", str(sched), "--whatif", str(bad)],
                 ["summary", "--schedule", str(tmp_path / "missing.json"), "--whatif", str(bad)],
                 ["scale", "--topology-json", str(bad), "-o", str(tmp_path / "x.json")]):
        proc = subprocess.run(["/usr/bin/python3", str(script), *args], capture_output=True, text=True)
        assert proc.returncode == 1 and proc.stderr.startswith("demo_report: error:"), proc.stderr
        assert proc.stderr.count("\n") == 1
