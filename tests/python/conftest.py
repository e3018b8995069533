"""Shared fixtures for the Python tests: the lgreco binary, the repository and shared data."""
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


@pytest.fixture
def shared_dir():
    return pathlib.Path(os.environ.get("LGRECO_SHARED_DIR", REPO.parent / "shared"))
