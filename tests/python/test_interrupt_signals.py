"""SIGINT/SIGTERM stop every writing command with exit 130/143, one error line, and no output or
temporary file, also when a second signal follows the first (README, "Exit codes").

No timing decides a result. A signal is sent once the process has installed its handlers (read
from /proc/<pid>/status), and while it provably still has work to do: either its temporary output
exists and the remaining work takes minutes (trace synth), or it waits for its input on a FIFO
that the test fills only after the signal (tables convert, net calibrate), so the output can only
be committed after the signal arrived.
"""
import errno
import json
import os
import signal
import subprocess
import time

import pytest

import bad_inputs as B
from conftest import lgreco_bin
from test_plan_cli import make_tables

PATIENCE_S = 120  # a safety net against a hung test, not an assertion on speed


def handlers_installed(pid):
    """Waits until `pid` catches SIGINT and SIGTERM (SigCgt in /proc/<pid>/status)."""
    want = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/status") as f:
            caught = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
        if caught & want == want:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never installed its signal handlers")


def wait_for(predicate, what):
    deadline = time.monotonic() + PATIENCE_S
    while not predicate():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def feed_fifo(fifo, data):
    """Writes `data` into `fifo` once the process has opened it for reading."""
    def opened():
        try:
            feed_fifo.fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            return True
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            return False
    wait_for(opened, f"a reader of {fifo}")
    os.set_blocking(feed_fifo.fd, True)
    with os.fdopen(feed_fifo.fd, "wb") as f:
        f.write(data)


def start(args):
    proc = subprocess.Popen([lgreco_bin(), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    handlers_installed(proc.pid)
    return proc


def send(proc, sigs):
    for k, sig in enumerate(sigs):
        if k:
            time.sleep(0.1)  # "two signals 0.1 s apart"; either order of events gives the same result
        proc.send_signal(sig)


def finish(proc, folder, sigs, before):
    try:
        _, err = proc.communicate(timeout=PATIENCE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = err.decode()
    name = "SIGTERM" if sigs[0] == signal.SIGTERM else "SIGINT"
    assert proc.returncode == 128 + sigs[-1] or proc.returncode == 128 + sigs[0], err
    assert err.count("\n") == 1 and err.startswith("lgreco: error: interrupted"), err
    if len(sigs) == 1:
        assert err == f"lgreco: error: interrupted by {name}; no output written\n"
    assert B.tmp_files(folder) == []
    assert sorted(os.listdir(folder)) == before


SIGNALS = {"int": [signal.SIGINT], "term": [signal.SIGTERM], "int-int": [signal.SIGINT, signal.SIGINT],
           "term-term": [signal.SIGTERM, signal.SIGTERM]}


@pytest.mark.parametrize("which", list(SIGNALS))
def test_trace_synth(tmp_path, which):
    sigs = SIGNALS[which]
    out = tmp_path / "big.h5"
    before = []
    proc = start(["trace", "synth", "--model", "gpt2", "--steps", "8", "--threads", "1", "-o", out])
    # Its temporary output exists: minutes of generation and compression remain.
    wait_for(lambda: B.tmp_files(tmp_path) or proc.poll() is not None, "the temporary trace")
    assert proc.poll() is None, proc.stderr.read().decode()
    send(proc, sigs)
    finish(proc, tmp_path, sigs, before)


@pytest.mark.parametrize("which", list(SIGNALS))
def test_tables_convert(tmp_path, which):
    sigs = SIGNALS[which]
    fifo = tmp_path / "in.json"
    os.mkfifo(fifo)
    (tmp_path / "out.h5").write_bytes(b"old")
    before = sorted(os.listdir(tmp_path))
    proc = start(["tables", "convert", fifo, "-o", tmp_path / "out.h5", "--force"])
    send(proc, sigs)
    if len(sigs) == 1:  # the input arrives after the signal: the command runs on, but must not commit
        feed_fifo(fifo, json.dumps(make_tables(windows=2)).encode())
    finish(proc, tmp_path, sigs, before)
    assert (tmp_path / "out.h5").read_bytes() == b"old"


@pytest.mark.parametrize("which", list(SIGNALS))
def test_net_calibrate(tmp_path, which):
    sigs = SIGNALS[which]
    fifo = tmp_path / "sweep.log"
    os.mkfifo(fifo)
    before = sorted(os.listdir(tmp_path))
    proc = start(["net", "calibrate", fifo, "--topology", "2x8xA100-1x25G", "-o", tmp_path / "fit.json"])
    send(proc, sigs)
    if len(sigs) == 1:
        feed_fifo(fifo, B.nccl_log().encode())
    finish(proc, tmp_path, sigs, before)
