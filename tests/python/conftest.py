"""Shared fixtures for the Python tests: the lgreco binary, the repository and shared data."""
import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def lgreco_bin() -> str:
    path = os.environ.get("LGRECO_BIN", str(REPO / "build" / "tools" / "lgreco"))
    if not pathlib.Path(path).exists():
        raise RuntimeError(f"lgreco binary not found at {path}; build first (make test does)")
    return path


@pytest.fixture
def lgreco():
    """Runs `lgreco ARGS...` and returns the CompletedProcess (text mode, never raises on exit code)."""

    def run(*args, check=False, **kw):
        proc = subprocess.run([lgreco_bin(), *map(str, args)], capture_output=True, text=True, **kw)
        if check and proc.returncode != 0:
            raise AssertionError(f"lgreco {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
        return proc

    return run


def slowed_fit(lgreco, folder, topology, ranks, factor):
    """A network fit of `topology` calibrated on the uncalibrated model's own allreduce sweep with
    every time multiplied by `factor` (a stand-in measurement whose answer is known: slower)."""
    pred = json.loads(lgreco("net", "predict", "--topology", topology, "--collective", "allreduce", "--sizes",
                             "32K:1G", "--format", "json", check=True).stdout)
    tsv = folder / "slow.tsv"
    tsv.write_text("size_bytes\ttime_us\talgbw_GBps\tbusbw_GBps\n" + "".join(
        f"{int(r['size_bytes'])}\t{factor * r['time_us']:.3f}\t0\t0\n" for r in pred["rows"]))
    fit = folder / "fit.json"
    lgreco("net", "calibrate", tsv, "--topology", topology, "--ranks", str(ranks), "--collective", "allreduce",
           "-o", fit, check=True)
    return fit


@pytest.fixture
def shared_dir():
    return pathlib.Path(os.environ.get("LGRECO_SHARED_DIR", REPO.parent / "shared"))
