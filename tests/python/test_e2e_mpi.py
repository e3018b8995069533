"""Scale-out under a real MPI launcher (docs/scale-out.md): `mpirun -np 2` and `-np 3` (oversubscribed
on a small machine) write the same schedule and tables as one process, byte for byte apart from the
provenance; bad input on one rank stops every rank with the same one line, exit 1, nothing written;
SIGTERM/SIGINT to mpirun leaves no file behind. Skipped only when the build has no MPI."""
import json
import re
import os
import shutil
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

from conftest import lgreco_bin
from e2e_traces import TINY_LAYERS, tiny_model_trace, write_trace


def build_has_mpi():
    out = subprocess.run([lgreco_bin(), "--version"], capture_output=True, text=True, check=True).stdout
    return "mpi on" in out


pytestmark = pytest.mark.skipif(not build_has_mpi(), reason="this lgreco was built without MPI (LGRECO_MPI=OFF or no MPI found)")

# Small windows so that the closed loop plans from window k and applies in k+1 several times.
LOOP = ["--threads", "1", "--period", "6", "--acc-steps", "3"]


def mpirun(np_, *args, tag=True):
    """mpirun's command line; `tag` prefixes each rank's lines with "[job,rank]<stream>:" (it also cuts
    long stdout documents, so JSON on stdout is read untagged: only rank 0 prints it)."""
    launcher = shutil.which("mpirun")
    assert launcher, "the build has MPI but mpirun is missing (scripts/install-deps.sh installs openmpi-bin)"
    # No single-copy shared-memory transfers: containers often forbid the ptrace access they need.
    cmd = [launcher, "-np", str(np_), "--oversubscribe", "--mca", "btl_vader_single_copy_mechanism", "none"]
    cmd += ["--tag-output"] if tag else []
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd + [lgreco_bin(), *map(str, args)]


def run(cmd, cwd):
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=300)


def without_provenance(path):
    """The file's text with the top-level "provenance" member cut out (outputs are dump(2): top-level
    members start with two spaces and a quote)."""
    out, skipping = [], False
    for line in path.read_text().splitlines():
        top = line.startswith('  "') or line == "}"
        if top:
            skipping = line.startswith('  "provenance":')
        if not skipping:
            out.append(line)
    return "\n".join(out)


def rank_lines(stderr, text):
    """The ranks (from --tag-output's "[job,rank]<stderr>:" prefix) whose stderr has a line equal to `text`."""
    ranks = []
    for line in stderr.splitlines():
        if line.endswith("<stderr>:" + text):
            ranks.append(int(line.split("]")[0].split(",")[1]))
    return sorted(ranks)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mpi")
    tiny_model_trace(folder / "t.h5")
    return folder


@pytest.mark.parametrize("family", ["powersgd", "topk", "mixed"])
def test_plan_on_2_and_3_ranks_is_the_one_process_plan(tiny, family):
    args = ["plan", "--trace", "t.h5", "--family", family, *LOOP]
    one = run([lgreco_bin(), *args, "-o", f"{family}-1.json", "--tables-out", f"{family}-1.tables.json"], tiny)
    assert one.returncode == 0, one.stderr
    # `lgreco scaleout` estimates the split the ranks will use (the same rule, the same numbers).
    est = run([lgreco_bin(), "scaleout", "--trace", "t.h5", "--family", family, *LOOP, "--ranks", "2,3", "--format", "json"], tiny)
    assert est.returncode == 0, est.stderr
    balance = {row["ranks"]: row["estimated_cost_max_over_mean"] for row in json.loads(est.stdout)["rows"]}
    for ranks in (2, 3):
        out, tables = f"{family}-{ranks}.json", f"{family}-{ranks}.tables.json"
        p = run(mpirun(ranks, *args, "-o", out, "--tables-out", tables), tiny)
        assert p.returncode == 0, p.stderr
        assert p.stdout.count("schedule written to") == 1  # the summary comes from rank 0 only
        assert without_provenance(tiny / out) == without_provenance(tiny / f"{family}-1.json")
        assert without_provenance(tiny / tables) == without_provenance(tiny / f"{family}-1.tables.json")
        # The provenance records how the layers were spread (the one-process file has no such member).
        layout = json.loads((tiny / out).read_text())["provenance"]["replay"]
        assert layout["ranks"] == ranks and len(layout["per_rank"]) == ranks
        placed = sorted(i for r in layout["per_rank"] for i in r["layers"])
        assert placed == list(range(7))
        assert layout["estimated_cost_max_over_mean"] == balance[ranks] >= 1
        assert "replay" not in json.loads((tiny / f"{family}-1.json").read_text())["provenance"]


def test_replay_and_whatif_on_2_ranks_match_one_process(tiny):
    base = run([lgreco_bin(), "plan", "--trace", "t.h5", "--family", "mixed", *LOOP, "-o", "rw.json"], tiny)
    assert base.returncode == 0, base.stderr
    for args in (["replay", "--trace", "t.h5", "--schedule", "rw.json", "--phase", "scheduled", "--threads", "1"],
                 ["replay", "--trace", "t.h5", "--schedule", "rw.json", "--phase", "all", "--threads", "1"],
                 ["whatif", "--trace", "t.h5", "--family", "mixed", *LOOP, "--nodes", "1,4", "--bandwidth", "10Gbps,100Gbps"]):
        one = run([lgreco_bin(), *args, "--format", "json"], tiny)
        many = run(mpirun(2, *args, "--format", "json", tag=False), tiny)
        assert one.returncode == 0 and many.returncode == 0, one.stderr + many.stderr
        a, b = json.loads(one.stdout), json.loads(many.stdout)
        a.pop("provenance"), b.pop("provenance")
        assert a == b, args


def owner_of(tiny, ranks, layer_name):
    """The rank that replays `layer_name` in a run of `ranks` ranks with LOOP (from a good run's provenance)."""
    out = f"own-{ranks}.json"
    p = run(mpirun(ranks, "plan", "--trace", "t.h5", *LOOP, "-o", out, "--force"), tiny)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tiny / out).read_text())
    index = [spec["name"] for spec in TINY_LAYERS].index(layer_name)
    return next(r["rank"] for r in doc["provenance"]["replay"]["per_rank"] if index in r["layers"])


def assert_clean_failure(tiny, trace, ranks, expected_start):
    before = set(os.listdir(tiny))
    single = run([lgreco_bin(), "plan", "--trace", trace, *LOOP, "-o", "bad.json", "--tables-out", "bad.tables.json"], tiny)
    assert single.returncode == 1
    line = single.stderr.strip().splitlines()[-1]
    assert line.startswith(expected_start), line
    p = run(mpirun(ranks, "plan", "--trace", trace, *LOOP, "-o", "bad.json", "--tables-out", "bad.tables.json"), tiny)
    assert p.returncode == 1, p.stderr
    assert rank_lines(p.stderr, line) == list(range(ranks)), p.stderr  # the same line from every rank
    assert set(os.listdir(tiny)) == before  # no schedule, no tables, no temporaries


def test_nan_on_rank_1_stops_every_rank_with_the_same_line(tiny):
    assert owner_of(tiny, 2, "conv1.weight") == 1
    shutil.copy(tiny / "t.h5", tiny / "nan.h5")
    with h5py.File(tiny / "nan.h5", "r+") as f:
        d = f["layers/000000/grad"]  # conv1.weight
        row = d[5]
        row[7] = np.nan
        d[5] = row
    step = int(h5py.File(tiny / "nan.h5", "r")["steps"][5])
    assert_clean_failure(tiny, "nan.h5", 2,
                         f"lgreco: error: trace nan.h5: layer 'conv1.weight' (index 0) step {step}: non-finite gradient value nan")
    os.remove(tiny / "nan.h5")


def test_corrupt_chunk_on_a_worker_rank_stops_every_rank_with_the_same_line(tiny):
    owner = owner_of(tiny, 3, "fc.weight")
    assert owner != 0
    shutil.copy(tiny / "t.h5", tiny / "cut.h5")
    with h5py.File(tiny / "cut.h5", "r") as f:
        info = f["layers/000005/grad"].id.get_chunk_info(4)  # fc.weight, step index 4
    with open(tiny / "cut.h5", "r+b") as f:
        f.seek(info.byte_offset + info.size // 2)
        f.write(b"\xff" * 16)
    assert_clean_failure(tiny, "cut.h5", 3, "lgreco: error: trace cut.h5: layer 'fc.weight' (/layers/000005/grad), step index 4")
    os.remove(tiny / "cut.h5")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_mpirun_leaves_no_output(tmp_path, sig):
    rng = np.random.default_rng(1)
    layers = [{"name": f"l{i}.weight", "shape": [512, 512], "bucket": i // 2} for i in range(4)]
    steps = list(range(12)) + list(range(1000, 1012))
    write_trace(tmp_path / "t.h5", layers, steps, [rng.standard_normal((len(steps), 512 * 512)).astype(np.float32) for _ in layers])
    before = set(os.listdir(tmp_path))
    # Trajectory mode over 19 candidates per layer: many seconds of work per rank.
    proc = subprocess.Popen(mpirun(2, "plan", "--trace", "t.h5", "--family", "all", "--error-mode", "trajectory", "--threads", "1",
                                   "-o", "s.json", "--tables-out", "tables.json"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    time.sleep(2.0)
    assert proc.poll() is None, "finished before it could be interrupted"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, err
    assert re.search(r"lgreco: error: interrupted by SIG(INT|TERM); no output written", err), err
    assert set(os.listdir(tmp_path)) == before, err  # no schedule, no tables, no temporaries
