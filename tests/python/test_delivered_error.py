"""Error predicted = error delivered (docs/replay.md, "Planned error and delivered error").

The closed loop plans window k on the per-step error every candidate delivers over that window
(trajectory mode, the default) and applies the plan in window k+1. There, the replay with error
feedback measures what the plan really delivered and what the uniform default delivers in the same
window from the same state. The plan must deliver at most the uniform's error × (1 + TOLERANCE) and
send no more bytes.

TOLERANCE = 5 %: the plan is made a window earlier than it runs, and gradient statistics drift
between windows (measured: +2.3 % on the char-LM below; on the synthetic ResNet-18 with 6-step
windows +4.8 % with the flat profile, +1.9 % with the measured one, the default; the old default, planning on the window's mean matrix, delivered up to 4–12 % more
than uniform, docs/replay.md). The bound is on delivered error against the same window's uniform,
not on the prediction, which cannot see the next window.
"""
import json
import pathlib
import subprocess
import sys

import pytest

from conftest import REPO

TOLERANCE = 0.05


def check_plan(lgreco, trace, tmp_path, *extra):
    out = tmp_path / "s.json"
    p = lgreco("plan", "--trace", trace, "--warmup-steps", "0", "--threads", "2", *extra, "-o", out, "--format", "json",
               check=True)
    summary = json.loads(p.stdout)
    doc = json.loads(out.read_text())
    plans = [ph for ph in doc["phases"] if ph["label"].startswith("plan-") and "delivered_error_per_step" in ph["predicted"]]
    assert plans, "the trace has no window where a plan ran"
    for ph in plans:
        pr = ph["predicted"]
        assert pr["delivered_error_per_step"] <= pr["uniform_error_per_step_same_window"] * (1 + TOLERANCE), (ph["label"], pr)
    uniform = next(ph for ph in doc["phases"] if ph["label"] == "uniform")["predicted"]
    # In the uniform window the prediction is the delivered error itself (the same computation).
    assert uniform["delivered_error_per_step"] == pytest.approx(uniform["total_error"], rel=1e-12)
    assert summary["predicted"]["bytes_per_step"] <= summary["predicted"]["uniform_bytes_per_step"]
    return doc


def test_real_gradients_char_lm(lgreco, tmp_path):
    """A char-LM trained on the licence texts every Debian system ships (real data, real gradients)."""
    trace = tmp_path / "charlm.h5"
    env_py = str(REPO / "python")
    subprocess.run([sys.executable, str(REPO / "examples" / "charlm.py"), "--steps", "75", "--record", str(trace), "--every", "25",
                    "--burst", "15", "--record-start", "10", "--d-model", "48", "--layers", "2"],
                   check=True, capture_output=True, env={"PYTHONPATH": env_py, "PATH": "/usr/bin:/bin"})
    check_plan(lgreco, trace, tmp_path, "--period", "15", "--acc-steps", "5", "--min-numel", "256")


def test_synthetic_preset_resnet18(lgreco, tmp_path):
    trace = tmp_path / "r18.h5"
    lgreco("trace", "synth", "--model", "resnet18", "--steps", "18", "--seed", "3", "-o", trace, check=True)
    check_plan(lgreco, trace, tmp_path, "--period", "6", "--acc-steps", "3")
