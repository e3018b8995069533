"""Ctrl-C during a replay: the command stops at the next step/layer boundary, exits 130 and leaves
no output (nor temporary files) behind."""
import os
import signal
import subprocess
import time

import numpy as np

from conftest import lgreco_bin
from e2e_traces import write_trace


def test_sigint_leaves_no_output(tmp_path):
    rng = np.random.default_rng(1)
    layers = [{"name": f"l{i}.weight", "shape": [512, 512], "bucket": i // 2} for i in range(4)]
    steps = list(range(12)) + list(range(1000, 1012))
    grads = [rng.standard_normal((len(steps), 512 * 512)).astype(np.float32) for _ in layers]
    trace = tmp_path / "t.h5"
    write_trace(trace, layers, steps, grads)
    before = set(os.listdir(tmp_path))
    out, tables = tmp_path / "s.json", tmp_path / "tables.json"
    # Trajectory mode over 19 candidates per layer: many seconds of work on one thread.
    proc = subprocess.Popen([lgreco_bin(), "plan", "--trace", trace, "--family", "all", "--error-mode", "trajectory",
                             "--threads", "1", "-o", out, "--tables-out", tables],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    assert proc.poll() is None, "finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert set(os.listdir(tmp_path)) == before  # no schedule, no tables, no temporaries
