"""`lgreco models` and `lgreco trace synth|info|validate` from the outside: exit codes, exact counts,
atomic output, determinism, and files that h5py reads as the format says."""
import json
import os
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

from conftest import lgreco_bin

EXPECTED = {
    "resnet18": 11173962, "resnet50": 25557032, "transformer-xl-base": 191950298, "gpt2": 124439808,
    "bert-base": 109482240, "vit-b16": 86567656, "llama2-7b": 6738415616, "digits-resnet": 696042, "charlm": 819542,
}


def test_models_json_has_exact_counts(lgreco):
    doc = json.loads(lgreco("models", "--format", "json", check=True).stdout)
    assert doc["schema_version"] == 1 and doc["kind"] == "lgreco-models" and "provenance" in doc
    got = {m["name"]: m["parameters"] for m in doc["models"]}
    assert got == EXPECTED
    for m in doc["models"]:
        assert m["bytes_fp32"] == 4 * m["parameters"]
        assert m["tensors"] > 0 and m["description"]


def test_models_table_lists_every_model(lgreco):
    out = lgreco("models", check=True).stdout
    for name, count in EXPECTED.items():
        line = next(l for l in out.splitlines() if l.startswith(name + " "))
        assert str(count) in line.split()


def test_synth_writes_a_trace_h5py_reads(lgreco, tmp_path):
    out = tmp_path / "r18.h5"
    p = lgreco("trace", "synth", "--model", "resnet18", "--steps", "3", "--burst-length", "2", "--burst-spacing", "50",
               "--dtype", "bfloat16", "--seed", "4", "--world-size", "8", "-o", out, check=True)
    assert f"wrote {out}" in p.stdout
    with h5py.File(out, "r") as f:
        assert f.attrs["format"] == "lgreco-trace" and f.attrs["version"] == 1
        assert f.attrs["model"] == "resnet18" and f.attrs["world_size"] == 8 and f.attrs["dtype"] == "bfloat16"
        assert list(f["steps"][:]) == [0, 1, 50]
        assert len(f["layers"]) == 62
        g = f["layers/000000"]
        assert g.attrs["name"] == "conv1.weight" and list(g.attrs["shape"]) == [64, 3, 3, 3]
        d = g["grad"]
        assert d.shape == (3, 1728) and d.dtype == np.uint16 and d.attrs["dtype"] == "bfloat16"
        assert d.chunks == (1, 1728) and d.compression == "gzip" and d.shuffle
        big = next(g for g in f["layers"].values() if g.attrs["name"] == "layer4.1.conv2.weight")
        assert big.attrs["numel"] == 2359296 and big["grad"].chunks == (1, 2097152)  # two chunks per step
        values = (d[:].astype(np.uint32) << 16).view(np.float32)
        assert np.isfinite(values).all() and np.abs(values).max() > 0
    info = json.loads(lgreco("trace", "info", out, "--format", "json", check=True).stdout)
    assert info["layers"][0]["l2_norm_mean"] == pytest.approx(np.linalg.norm(values.astype(np.float64), axis=1).mean(), rel=1e-9)
    assert sum(l["numel"] for l in info["layers"]) == EXPECTED["resnet18"]
    config = json.loads(info["producer_config"])  # the synthesis options are recorded in the trace
    assert (config["seed"], config["steps"], config["burst_length"], config["burst_spacing"]) == (4, 3, 2, 50)
    assert lgreco("trace", "validate", out).returncode == 0


def test_synth_is_deterministic_in_the_seed(lgreco, tmp_path):
    def grads(seed, name):
        out = tmp_path / name
        lgreco("trace", "synth", "--model", "resnet18", "--steps", "2", "--dtype", "float16", "--seed", seed,
               "--threads", "1" if name == "a.h5" else "2", "-o", out, check=True)
        with h5py.File(out, "r") as f:
            return f["layers/000003/grad"][:]
    a, b, c = grads(1, "a.h5"), grads(1, "b.h5"), grads(2, "c.h5")
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_synth_refuses_to_overwrite_without_force(lgreco, tmp_path):
    out = tmp_path / "exists.h5"
    out.write_text("precious")
    p = lgreco("trace", "synth", "--model", "resnet18", "--steps", "1", "-o", out)
    assert p.returncode == 1
    assert "exists and is kept; pass --force" in p.stderr
    assert out.read_text() == "precious"
    lgreco("trace", "synth", "--model", "resnet18", "--steps", "1", "-o", out, "--force", check=True)
    assert lgreco("trace", "validate", out).returncode == 0
    assert sorted(os.listdir(tmp_path)) == ["exists.h5"]


@pytest.mark.parametrize("args", [
    ["--model", "resnet18", "--steps", "2", "--no-such-flag", "1"],
    ["--model", "resnet18", "--steps", "2", "--bursts", "2", "--burst-length", "1"],
    ["--model", "resnet18", "--steps", "2", "--dtype", "float64"],
    ["--model", "no-such-model", "--steps", "2"],
    ["--model", "resnet18", "--steps", "0"],
    ["--model", "resnet18", "--steps", "2", "--rho", "1.5"],
    ["--model", "resnet18"],
])
def test_synth_usage_errors(lgreco, tmp_path, args):
    p = lgreco("trace", "synth", *args, "-o", tmp_path / "x.h5")
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("lgreco: error: ")
    assert os.listdir(tmp_path) == []


def test_synth_into_missing_folder_fails_cleanly(lgreco, tmp_path):
    p = lgreco("trace", "synth", "--model", "resnet18", "--steps", "1", "-o", tmp_path / "nope" / "x.h5")
    assert p.returncode == 1 and "does not exist" in p.stderr
    assert os.listdir(tmp_path) == []


def test_interrupted_synth_leaves_nothing(tmp_path):
    out = tmp_path / "big.h5"
    proc = subprocess.Popen([lgreco_bin(), "trace", "synth", "--model", "gpt2", "--steps", "8", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait until the temporary file exists, so the interruption happens in the middle of writing.
    deadline = time.time() + 60
    while time.time() < deadline and not any(n.startswith("big.h5.tmp.") for n in os.listdir(tmp_path)):
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err == "lgreco: error: interrupted by SIGINT; no output written\n"
    assert os.listdir(tmp_path) == []


def test_info_and_validate_help(lgreco):
    for cmd in (["trace", "synth"], ["trace", "info"], ["trace", "validate"], ["models"]):
        p = lgreco(*cmd, "--help")
        assert p.returncode == 0 and p.stdout.startswith("usage: lgreco " + " ".join(cmd))
    assert lgreco("trace", "info").returncode == 2  # missing FILE
    assert lgreco("trace", "validate", "a.h5", "b.h5").returncode == 2
