"""`lgreco whatif`: the grid, the output contract (JSON/CSV keys) and properties of the predictions."""
import csv
import io
import json

import pytest

from conftest import REPO, slowed_fit
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
        assert set(pt) == set(KEYS) | {"network_class", "uniform_speedup_range_p80", "adaptive_speedup_range_p80"}
        # The speedups if the network times were off by the 80 % band of their class, either way: around the nominal.
        for k in ("uniform", "adaptive"):
            lo, hi = pt[f"{k}_speedup_range_p80"]
            assert lo <= pt[f"{k}_speedup"] * (1 + 1e-12) and pt[f"{k}_speedup"] <= hi * (1 + 1e-12)
            if pt["nodes"] > 1:  # compression pays more on a slower network: the range is not a point
                assert hi > lo
        assert pt["ranks"] == 8 * pt["nodes"]
        # The default base cluster is 4x8xA100-1x25G: NVLink on one node, RDMA verbs across nodes.
        assert pt["network_class"] == ("one-host-nvlink" if pt["nodes"] == 1 else "rdma")
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
    # How far off the network times may be: the presets' held-out error bands of the points' classes, both size
    # bands (a step moves buckets of every size); the same figures `net predict` gives for those classes.
    err = doc["expected_network_error"]
    assert "leave-one-system-out" in err["basis"]
    assert set(err["classes"]) == {"one-host-nvlink", "rdma"}
    for cls, bands in err["classes"].items():
        assert set(bands) == {"below_1MiB", "1MiB_to_64MiB", "at_least_64MiB"}
        for b in bands.values():
            assert b["rows"] > 0 and 1 <= b["median_factor"] <= b["p80_factor"] <= b["p90_factor"] <= b["max_factor"]
    pred = json.loads(lgreco("net", "predict", "--topology", "2x8xA100-1x25G", "--sizes", "64K,8M,64M", "--format", "json",
                             check=True).stdout)
    assert pred["expected_error"]["classes"]["rdma"] == err["classes"]["rdma"]
    text = lgreco("whatif", "--trace", trace, "--bandwidth", "10Gbps", "--nodes", "1,2", check=True).stdout
    assert "how far off to expect the network times in these predictions" in text
    assert "adaptive p80" in text.splitlines()[1]
    two = json.loads(lgreco("whatif", "--trace", trace, "--bandwidth", "10Gbps", "--nodes", "2", "--format", "json",
                            check=True).stdout)["points"][0]
    lo, hi = two["adaptive_speedup_range_p80"]
    assert f"{lo:.2f}-{hi:.2f}x" in next(l for l in text.splitlines() if l.split()[:1] == ["2"])
    assert text.count("one host over NVLink, ") == 3 and text.count("across hosts over RDMA verbs") == 3


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


def test_kernel_time_enters_the_predictions(trace, lgreco, tmp_path):
    """Compression kernel time is charged like `lgreco simulate` does: an estimate on the topology's
    GPU by default, a device profile's figures with --kernel-profile, nothing with --no-kernel-time.
    A profile with 1 s of fixed cost per PowerSGD layer must show up in full: compression runs on the
    compute stream, so the step is at least compute + 0.5 s per compressed layer (half the profile's
    time is charged before the collective)."""
    tables = tmp_path / "t.json"
    lgreco("plan", "--trace", trace, "-o", tmp_path / "s.json", "--tables-out", tables, check=True)
    layers = json.loads(tables.read_text())["windows"][-1]["layers"]
    compressed = sum(1 for l in layers if l["candidates"][l["default"]]["method"] != "none")
    assert compressed > 0
    prof = json.loads((REPO / "kernels" / "profiles" / "a100.json").read_text())
    prof["methods"]["powersgd"]["overhead_us"] = 1e6
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(prof))
    args = ["--tables", tables, "--bandwidth", "10Gbps,100Gbps", "--nodes", "2", "--format", "json"]
    runs = {}
    for name, extra in {"none": ["--no-kernel-time"], "estimate": [], "slow": ["--kernel-profile", slow]}.items():
        doc = json.loads(lgreco("whatif", *args, *extra, check=True).stdout)
        runs[name] = doc
    assert runs["none"]["config"]["kernel_time"] == {"source": "none"}
    assert runs["estimate"]["config"]["kernel_time"]["source"] == "memory-traffic estimate"
    assert runs["estimate"]["config"]["kernel_time"]["memory_bandwidth_GBps"] == pytest.approx(1555)
    assert runs["slow"]["config"]["kernel_time"] == {"source": "profile", "profile": str(slow)}
    for a, b, c in zip(runs["none"]["points"], runs["estimate"]["points"], runs["slow"]["points"]):
        # "none" layers cost no kernel time: the uncompressed step is the same in all three.
        assert a["uncompressed_step_s"] == b["uncompressed_step_s"] == c["uncompressed_step_s"]
        assert b["uniform_step_s"] > a["uniform_step_s"]
        assert c["uniform_step_s"] >= c["compute_s"] + 0.5 * compressed
        assert c["uniform_step_s"] <= a["uniform_step_s"] + 1.0 * compressed + 1e-9
    p = lgreco("whatif", *args, "--kernel-profile", tmp_path / "missing.json")
    assert p.returncode != 0 and "missing.json" in p.stderr
    p = lgreco("whatif", *args, "--kernel-profile", slow, "--no-kernel-time")
    assert p.returncode == 2 and "--no-kernel-time" in p.stderr
    p = lgreco("whatif", *args, "--memory-limit", "3furlongs")
    assert p.returncode == 2 and "--memory-limit" in p.stderr and "furlongs" in p.stderr


def test_network_fit_carries_over_to_every_point(trace, lgreco, tmp_path):
    """A calibration of the base cluster is used by plan --trace and by every what-if point. The
    'measurement' here is the preset's own sweep of the base cluster (4 nodes, 25 Gb/s) slowed down
    1.5x, so at that point the fitted model must predict a slower uncompressed step; at the other
    points it extrapolates (NCCL's constants with the fitted terms against the corpus presets), so
    there it must differ from the preset, not necessarily be slower."""
    topo = "4x8xA100-1x25G"
    fit = slowed_fit(lgreco, tmp_path, topo, 32, 1.5)
    tables = tmp_path / "t.json"
    p = lgreco("plan", "--trace", trace, "--topology", topo, "--network-fit", fit, "-o", tmp_path / "s.json",
               "--tables-out", tables, "--format", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["config"]["topology"]["network_fit"] == str(fit)
    args = ["--tables", tables, "--topology", topo, "--bandwidth", "10Gbps,25Gbps,100Gbps", "--nodes", "1,2,4,8",
            "--format", "json"]
    plain = json.loads(lgreco("whatif", *args, check=True).stdout)
    fitted = json.loads(lgreco("whatif", *args, "--network-fit", fit, check=True).stdout)
    assert fitted["config"]["topology"]["network_fit"] == str(fit)
    base = 0
    for a, b in zip(plain["points"], fitted["points"]):
        assert (a["nodes"], a["bandwidth_Gbps"]) == (b["nodes"], b["bandwidth_Gbps"])
        if a["nodes"] == 4 and a["bandwidth_Gbps"] == pytest.approx(25):
            base += 1
            assert b["uncompressed_step_s"] > a["uncompressed_step_s"], (a, b)
        else:
            assert b["uncompressed_step_s"] != pytest.approx(a["uncompressed_step_s"], rel=1e-6), (a, b)
    assert base == 1
    # A fit of another topology is refused, naming both.
    p = lgreco("whatif", "--tables", tables, "--topology", "2x8xA100-1x25G", "--network-fit", fit)
    assert p.returncode == 1 and "4x8xA100-1x25G" in p.stderr and "2x8xA100-1x25G" in p.stderr
    p = lgreco("plan", "--trace", trace, "--network-fit", fit, "-o", tmp_path / "s2.json")
    assert p.returncode == 2 and "--topology" in p.stderr


def test_nccl_env_enters_plan_and_every_whatif_point(trace, lgreco, tmp_path):
    """The job's NCCL restrictions (--nccl-env, NCCL's syntax) are part of the cluster: plan --topology
    records them, and every what-if point prices its collectives under them (ruling the tree and NVLS
    out can only make a step slower)."""
    tables = tmp_path / "t.json"
    topo = "2x8xH100-8x400G"
    p = lgreco("plan", "--trace", trace, "--topology", topo, "--nccl-env", "NCCL_ALGO=Ring", "-o", tmp_path / "s.json",
               "--tables-out", tables, "--format", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["config"]["topology"]["nccl_env"] == "NCCL_ALGO=Ring"
    p = lgreco("plan", "--trace", trace, "--nccl-env", "NCCL_ALGO=Ring", "-o", tmp_path / "s2.json")
    assert p.returncode == 2 and "--nccl-env needs --topology" in p.stderr and not (tmp_path / "s2.json").exists()
    args = ["--tables", tables, "--topology", topo, "--bandwidth", "25Gbps,400Gbps", "--nodes", "1,2,4", "--format", "json"]
    free = json.loads(lgreco("whatif", *args, check=True).stdout)
    ring = json.loads(lgreco("whatif", *args, "--nccl-env", "NCCL_ALGO=Ring", check=True).stdout)
    assert free["config"]["topology"]["nccl_env"] is None
    assert ring["config"]["topology"]["nccl_env"] == "NCCL_ALGO=Ring"
    slower = 0
    for a, b in zip(free["points"], ring["points"]):
        assert (a["nodes"], a["bandwidth_Gbps"]) == (b["nodes"], b["bandwidth_Gbps"])
        assert b["uncompressed_step_s"] >= a["uncompressed_step_s"] * (1 - 1e-12)
        slower += b["uncompressed_step_s"] > a["uncompressed_step_s"] * (1 + 1e-9)
    assert slower > 0
    p = lgreco("whatif", *args, "--nccl-env", "NCCL_PROTO=LL,Fast")
    assert p.returncode == 2 and "Fast" in p.stderr
