"""Bad trace files: each problem is one line naming the file and the dataset, exit code 1."""
import os
import pathlib
import signal
import subprocess

import h5py
import numpy as np
import pytest

from conftest import lgreco_bin
from test_trace_h5py import random_grads, write_trace


def break_version(f):
    f.attrs["version"] = 2


def break_format(f):
    f.attrs["format"] = "something-else"


def break_numel(f):
    f["layers/000001"].attrs["numel"] = 100


def break_dims(f):
    g = f["layers/000001"]
    del g["grad"]
    g["grad"] = np.zeros(128, dtype=np.float32)


def break_rows(f):
    g = f["layers/000002"]
    del g["grad"]
    g["grad"] = np.zeros((4, 16), dtype=np.float32)


def break_missing(f):
    del f["layers/000003/grad"]


def break_steps(f):
    del f["steps"]


def break_order(f):
    del f["steps"]
    f["steps"] = np.array([100, 101, 101, 500, 501], dtype=np.int64)


def break_type(f):
    g = f["layers/000000"]
    del g["grad"]
    g["grad"] = np.zeros((5, 400), dtype=np.float64)


def break_gap(f):
    f.move("layers/000004", "layers/000009")


def break_kind(f):
    f["layers/000000"].attrs["kind"] = "conv"


def break_order_dup(f):
    f["layers/000000"].attrs["backward_order"] = 3


def break_attr_type(f):
    f.attrs["world_size"] = "eight"


CASES = [
    (break_version, "format version 2 is not supported (this build reads version 1)"),
    (break_format, "root attribute 'format' is 'something-else', expected 'lgreco-trace'"),
    (break_numel, "layer 'fc.weight' (/layers/000001): attribute 'numel' is 100 but shape [16, 8] has 128 elements"),
    (break_dims, "layer 'fc.weight' (/layers/000001/grad): dataset has 1 dims, expected 2"),
    (break_rows, "layer 'fc.bias' (/layers/000002/grad): dataset shape is [4, 16], expected [5, 16] (steps, numel)"),
    (break_missing, "layer 'norm.weight' (/layers/000003/grad): dataset is missing"),
    (break_steps, "/steps: dataset is missing"),
    (break_order, "/steps: step ids must be strictly increasing, but index 2 is 101 after 101"),
    (break_type, "layer 'emb.weight' (/layers/000000/grad): dataset type is float64, but the layer's dtype is float32"),
    (break_gap, "/layers/000004: group is missing"),
    (break_kind, "attribute 'kind' is 'conv', expected weight, bias, norm or embedding"),
    (break_order_dup, "layer 'fc.weight' (/layers/000001): attribute 'backward_order' 3 is used by another layer"),
    (break_attr_type, "attribute 'world_size' has type string, expected integer"),
]


@pytest.mark.parametrize("breaker,message", CASES, ids=[c[0].__name__ for c in CASES])
def test_broken_trace_is_one_line_error(lgreco, tmp_path, breaker, message):
    path = tmp_path / "bad.h5"
    write_trace(path, "float32", random_grads())
    with h5py.File(path, "a") as f:
        breaker(f)
    for cmd in (["trace", "validate", path], ["trace", "info", path]):
        p = lgreco(*cmd)
        assert p.returncode == 1, (cmd, p.stdout, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1, p.stderr
        assert lines[0].startswith(f"lgreco: error: trace {path}: "), lines[0]
        assert message in lines[0], lines[0]


def test_random_bytes_and_truncated_files(lgreco, tmp_path):
    noise = tmp_path / "noise.h5"
    noise.write_bytes(np.random.default_rng(1).bytes(50000))
    p = lgreco("trace", "validate", noise)
    assert p.returncode == 1
    assert p.stderr.strip() == f"lgreco: error: trace {noise}: not an HDF5 file (no HDF5 signature: wrong file, or corrupt)"

    cut = tmp_path / "cut.h5"
    write_trace(cut, "float16", random_grads())
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    p = lgreco("trace", "validate", cut)
    assert p.returncode == 1
    assert len(p.stderr.strip().splitlines()) == 1
    assert p.stderr.startswith(f"lgreco: error: trace {cut}: ")
    assert "HDF5-DIAG" not in p.stderr  # HDF5's own error stack stays silent

    missing = tmp_path / "missing.h5"
    p = lgreco("trace", "info", missing)
    assert p.returncode == 1 and p.stderr.strip() == f"lgreco: error: trace {missing}: no such file"


DAMAGED = pathlib.Path(__file__).resolve().parents[1] / "data" / "traces"


def test_libhdf5_crash_on_a_damaged_file_is_one_line(lgreco, tmp_path):
    """tests/data/traces/damaged-heap-segv.h5 is a float16 trace with one byte changed (offset 2622,
    0x00 -> 0xcf) in the global heap that holds its string attributes: libhdf5 1.10 faults inside
    H5HG_read reading one. The tool says so in one line naming the file and exits 1; a libhdf5 that
    refuses the file cleanly passes too (one line, exit 1)."""
    path = tmp_path / "t.h5"
    path.write_bytes((DAMAGED / "damaged-heap-segv.h5").read_bytes())
    env = dict(os.environ)
    if "ASAN_OPTIONS" in env:
        # Under AddressSanitizer (make test-sanitize) ASan's memcpy interceptor reports libhdf5's own
        # overlapping copy before the fault happens; let libhdf5's memcpy through unchecked so that the
        # fault, and lgreco's handling of it, is what this test sees there too.
        env["ASAN_OPTIONS"] += ":replace_intrin=0"
    for cmd in (["trace", "validate", path], ["trace", "info", path]):
        p = lgreco(*cmd, env=env)
        assert p.returncode == 1, (cmd, p.returncode, p.stderr)
        assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"lgreco: error: trace {path}: "), p.stderr


def test_libhdf5_abort_on_a_damaged_file_is_an_error(lgreco, tmp_path):
    """tests/data/traces/damaged-heap-abort.h5 (a float16 trace with six bytes changed) corrupts
    libhdf5 1.10's heap: glibc aborts ("munmap_chunk(): invalid pointer", its own line on stderr) when
    the reader closes the refused file. lgreco's line is the last one, and the exit code 1."""
    if "ASAN_OPTIONS" in os.environ:
        pytest.skip("under AddressSanitizer (make test-sanitize) ASan reports libhdf5's invalid free() itself, "
                    "before glibc's abort; `make test` checks lgreco's handling of it")
    path = tmp_path / "t.h5"
    path.write_bytes((DAMAGED / "damaged-heap-abort.h5").read_bytes())
    p = lgreco("trace", "validate", path)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert p.stderr.endswith("\n") and p.stderr.splitlines()[-1].startswith(f"lgreco: error: trace {path}: "), p.stderr
    assert len(p.stderr.splitlines()) <= 2, p.stderr


def test_one_signal_ends_a_read_stuck_in_libhdf5(lgreco, tmp_path):
    """tests/data/traces/damaged-heap-hang.h5 (a bfloat16 trace with five bytes changed) sends
    libhdf5 1.10's global-heap reader into a loop that never returns to lgreco's cancellation checks:
    one SIGTERM (what `timeout` sends) ends it at once, with the usual line and code. A libhdf5 that
    refuses the file instead passes too (one line, exit 1)."""
    path = tmp_path / "t.h5"
    path.write_bytes((DAMAGED / "damaged-heap-hang.h5").read_bytes())
    proc = subprocess.Popen([lgreco_bin(), "trace", "validate", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=3)
        assert proc.returncode == 1 and err.count("\n") == 1, (proc.returncode, err)
        return
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, err)
    assert err == "lgreco: error: interrupted by SIGTERM; no output written\n"
