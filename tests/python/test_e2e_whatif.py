"""`lgreco whatif`: the grid, the output contract (JSON/CSV keys) and properties of the predictions."""
import csv
import io
import json

import pytest

from e2e_traces import tiny_model_trace

KEYS = ["bandwidth_Gbps", "nodes", "ranks", "uncompressed_step_s", "uniform_step_s", "adaptive_step_s",
        "uncompressed_exposed_comm_s", "uniform_exposed_comm_s", "adaptive_exposed_comm_s", "uniform_speedup",
        "adaptive_speedup", "adaptive_vs_uniform", "uncompressed_bytes_per_step", "uniform_bytes_per_step",
        "adaptive_bytes_per_step", "compute_s"]


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("whatif") / "tiny.h5"
    tiny_model_trace(path, bursts=2, burst_length=12)
    return path


def test_json_grid_and_properties(trace, lgreco):
    p = lgreco("whatif", "--trace", trace, "--bandwidth", "1Gbps:400Gbps:5", "--nodes", "1,2,4", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["kind"] == "lgreco-whatif" and doc["schema_version"] == 1
    pts = doc["points"]
    assert len(pts) == 3 * 5
    bws = sorted({pt["bandwidth_Gbps"] for pt in pts})
    assert bws[0] == pytest.approx(1) and bws[-1] == pytest.approx(400)
    ratios = [b / a for a, b in zip(bws, bws[1:])]
    assert all(r == pytest.approx(ratios[0]) for r in ratios)  # log-spaced
    for pt in pts:
        assert set(pt) == set(KEYS)
        assert pt["ranks"] == 8 * pt["nodes"]
        assert pt["uniform_speedup"] == pytest.approx(pt["uncompressed_step_s"] / pt["uniform_step_s"])
        assert pt["adaptive_speedup"] == pytest.approx(pt["uncompressed_step_s"] / pt["adaptive_step_s"])
        assert pt["adaptive_bytes_per_step"] <= pt["uniform_bytes_per_step"] < pt["uncompressed_bytes_per_step"]
        for k in ("uncompressed", "uniform", "adaptive"):
            assert pt[f"{k}_step_s"] >= pt["compute_s"] - 1e-12
            assert pt[f"{k}_exposed_comm_s"] >= -1e-12
    for n in (1, 2, 4):
        row = sorted((pt for pt in pts if pt["nodes"] == n), key=lambda pt: pt["bandwidth_Gbps"])
        steps = [pt["uncompressed_step_s"] for pt in row]
        assert all(b <= a + 1e-12 for a, b in zip(steps, steps[1:])), (n, steps)  # more bandwidth, no slower
        if n == 1:  # one node: the inter-node bandwidth is not used
            assert max(steps) == pytest.approx(min(steps))


def test_csv_and_plot(trace, lgreco, tmp_path):
    png = tmp_path / "w.png"
    p = lgreco("whatif", "--trace", trace, "--bandwidth", "10Gbps,100Gbps", "--nodes", "2", "--format", "csv",
               "--plot", png)
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert list(rows[0].keys()) == KEYS
    assert len(rows) == 2
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = lgreco("whatif", "--trace", trace, "--nodes", "2", "--plot", png)
    assert again.returncode != 0 and "exists" in again.stderr


def test_tables_input_matches_trace_input(trace, lgreco, tmp_path):
    tables = tmp_path / "t.json"
    p = lgreco("plan", "--trace", trace, "-o", tmp_path / "s.json", "--tables-out", tables)
    assert p.returncode == 0, p.stderr
    args = ["--bandwidth", "5Gbps,50Gbps", "--nodes", "4", "--format", "json"]
    a = json.loads(lgreco("whatif", "--trace", trace, *args, check=True).stdout)["points"]
    b = json.loads(lgreco("whatif", "--tables", tables, *args, check=True).stdout)["points"]
    for x, y in zip(a, b):
        for k in KEYS:
            assert x[k] == pytest.approx(y[k], rel=1e-12), k


def test_bad_grid_is_a_usage_error(trace, lgreco):
    p = lgreco("whatif", "--trace", trace, "--bandwidth", "400Gbps:1Gbps:3")
    assert p.returncode == 2
    assert "--bandwidth" in p.stderr
