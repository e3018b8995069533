"""Every output gets the mode of a plainly created file, 0666 minus the umask (atomic outputs are
written to a temporary file first; one made by mkstemp would stay 0600). Checked under umask 027
(0640 differs from both the usual 0644 and mkstemp's 0600)."""
import json
import os
import stat
import subprocess

import pytest

from bad_inputs import nccl_log, write_trace
from conftest import lgreco_bin
from test_plan_cli import make_tables


def run_with_umask(mask, *args):
    proc = subprocess.run([lgreco_bin(), *map(str, args)], capture_output=True, text=True,
                          preexec_fn=lambda: os.umask(mask))
    assert proc.returncode == 0, proc.stderr
    return proc


def test_outputs_have_the_umask_mode(tmp_path, mask=0o027):
    tables = tmp_path / "t.json"
    tables.write_text(json.dumps(make_tables(windows=1)))
    log = tmp_path / "sweep.log"
    log.write_text(nccl_log())
    trace = tmp_path / "in.h5"
    write_trace(trace)
    outs = {
        "trace.h5": ["trace", "synth", "--model", "resnet18", "--steps", "1", "--rank-terms", "1", "--deflate", "0"],
        "tables.h5": ["tables", "convert", tables],
        "tables2.json": ["tables", "convert", tmp_path / "tables.h5"],
        "schedule.json": ["plan", "--tables", tables, "--bandwidth", "10Gbps"],
        "hook.json": ["export", tmp_path / "schedule.json", "--to", "torch-hook"],
        "fit.json": ["net", "calibrate", log, "--topology", "2x8xA100-1x25G"],
    }
    for name, args in outs.items():
        run_with_umask(mask, *args, "-o", tmp_path / name)
    pytest.importorskip("matplotlib")
    run_with_umask(mask, "whatif", "--tables", tables, "--bandwidth", "10Gbps,100Gbps", "--nodes", "1",
                   "--no-kernel-time", "--plot", tmp_path / "plot.png")
    for name in [*outs, "plot.png"]:
        mode = stat.S_IMODE(os.stat(tmp_path / name).st_mode)
        assert mode == 0o666 & ~mask, f"{name}: mode {oct(mode)}, expected {oct(0o666 & ~mask)}"
    assert not [n for n in os.listdir(tmp_path) if ".tmp." in n]
