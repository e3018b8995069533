"""CLI side of the network model: predict, calibrate, topology and bad input."""
import json

import pytest

from conftest import REPO


def test_predict_json_rows(lgreco):
    p = lgreco("net", "predict", "--topology", "dgx-a100", "--sizes", "32K:1M", "--format", "json", check=True)
    doc = json.loads(p.stdout)
    assert doc["kind"] == "lgreco-net-predict" and doc["schema_version"] == 1
    assert [r["size_bytes"] for r in doc["rows"]] == [32768 * 2**i for i in range(6)]
    times = [r["time_us"] for r in doc["rows"]]
    assert times == sorted(times)
    assert "provenance" in doc and doc["config"]["ranks"] == 8


def test_predict_says_how_far_off_to_expect_the_presets(lgreco):
    """With the presets, net predict prints the held-out error bands of its class for the size bands its sizes
    fall in (text and JSON alike); the bands come from the leave-one-system-out run over the corpus."""
    doc = json.loads(lgreco("net", "predict", "--topology", "4x8xH100-8x400G-efa", "--sizes", "1K:64M", "--format",
                            "json", check=True).stdout)
    err = doc["expected_error"]
    assert list(err["classes"]) == ["efa"]
    assert "leave-one-system-out" in err["basis"] and "systems" in err["basis"]
    efa = err["classes"]["efa"]
    bands = ["below_1MiB", "1MiB_to_64MiB", "at_least_64MiB"]
    assert set(efa) == set(bands)  # 1 KiB to 64 MiB: all three
    text = lgreco("net", "predict", "--topology", "4x8xH100-8x400G-efa", "--sizes", "1K:64M", check=True).stdout
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("how far off to expect the network times in these predictions"))
    assert len(lines) == head + 4
    for line, band, words in zip(lines[head + 1:], bands, ["< 1 MiB", "1-64 MiB", ">= 64 MiB"]):
        b = efa[band]
        assert line.startswith("  across hosts over AWS EFA, " + words + ": ")
        assert (f"off by a factor {b['median_factor']:.2f} (median), {b['p80_factor']:.2f} (80 % of rows), "
                f"{b['p90_factor']:.2f} (90 %), {b['max_factor']:.2f} (worst) on {b['systems']} systems held out "
                f"({b['rows']} rows)") in line
        assert 1 <= b["median_factor"] <= b["p80_factor"] <= b["p90_factor"] <= b["max_factor"]
    # Only the size bands asked for; one host of NVLink GPUs is its own class.
    doc = json.loads(lgreco("net", "predict", "--topology", "dgx-a100", "--sizes", "32K:512K", "--format", "json",
                            check=True).stdout)
    assert {c: list(b) for c, b in doc["expected_error"]["classes"].items()} == {"one-host-nvlink": ["below_1MiB"]}
    pcie = json.loads(lgreco("net", "predict", "--topology", "pcie-8x-rtx3090", "--sizes", "1G", "--format", "json",
                             check=True).stdout)["expected_error"]["classes"]
    assert list(pcie) == ["one-host-pcie"] and list(pcie["one-host-pcie"]) == ["at_least_64MiB"]
    assert pcie["one-host-pcie"]["at_least_64MiB"]["median_factor"] > 2
    # One rank sends nothing over any network: no band is claimed.
    one = lgreco("net", "predict", "--topology", "dgx-a100", "--ranks", "1", "--sizes", "1M", "--format", "json", check=True)
    assert json.loads(one.stdout)["expected_error"] is None


def test_calibrate_then_predict(lgreco, shared_dir, tmp_path):
    src = shared_dir / "data" / "nccl-tests" / "a100x8-nvswitch-allreduce.tsv"
    out = tmp_path / "fit.json"
    lgreco("net", "calibrate", src, "--topology", "dgx-a100", "-o", out, check=True)
    fit = json.loads(out.read_text())
    assert fit["kind"] == "lgreco-network-fit" and fit["nccl_version"] == "2.30.7"
    assert fit["fit_quality"]["rms_log_error"] < 0.1
    p = lgreco("net", "predict", "--topology", "dgx-a100", "--network-fit", out, "--sizes", "1G", "--format", "json", check=True)
    # A calibration is the user's own fit: no presets' error band is claimed for it.
    assert json.loads(p.stdout)["expected_error"] is None
    assert "how far off" not in lgreco("net", "predict", "--topology", "dgx-a100", "--network-fit", out, "--sizes", "1G",
                                       check=True).stdout
    t = json.loads(p.stdout)["rows"][0]["time_us"]
    assert abs(t / 8203.9 - 1) < 0.1
    again = lgreco("net", "calibrate", src, "--topology", "dgx-a100", "-o", out)
    assert again.returncode == 1 and "exists" in again.stderr
    # Every fitted parameter comes with its standard error as a factor; the sweep's rows set the protocols'
    # bandwidths (its large sizes) to a few per cent, and the table output prints the same factors.
    se = fit["fit_quality"]["standard_error_factor"]
    assert se and set(se) <= set(fit["parameters"])
    assert all(1 < v < 1e6 for v in se.values())
    assert se["Simple.bw_multiplier"] < 1.1 and se["LL128.bw_multiplier"] < 1.1
    table = lgreco("net", "calibrate", src, "--topology", "dgx-a100", "-o", tmp_path / "again.json", check=True).stdout
    line = next(l for l in table.splitlines() if l.startswith("standard errors"))
    assert f"Simple.bw_multiplier x{se['Simple.bw_multiplier']:.3g}" in line


def test_calibrate_writes_the_corpus_worst_sweep_and_refuses_one_no_model_fits(lgreco, tmp_path):
    """The poor-fit bar (net::kPoorFitRmsLn, 0.5) sits above every real sweep of the corpus: the one that
    calibrates worst on its own topology (h100-xe9680's 16-rank allreduce, rms 0.263) is written; a sweep
    whose times fall as the size doubles is refused and nothing is written."""
    rows = [l.split("\t") for l in (REPO / "tests" / "data" / "network" / "h100-xe9680-2node-ib-nccltests.tsv").read_text().splitlines()
            if l.startswith("allreduce\t16\t")]
    sweep = tmp_path / "xe9680.tsv"
    sweep.write_text("size_bytes\ttime_us\n" + "".join(f"{r[2]}\t{r[3]}\n" for r in rows))
    out = tmp_path / "fit.json"
    lgreco("net", "calibrate", sweep, "--topology", "2x8xH100-8x400G", "--ranks", "16", "--collective", "allreduce", "-o", out, check=True)
    assert 0.2 < json.loads(out.read_text())["fit_quality"]["rms_log_error"] < 0.5
    falling = tmp_path / "falling.tsv"
    falling.write_text("size_bytes\ttime_us\n" + "".join(f"{2**k}\t{1e7 / 2**k}\n" for k in range(10, 30, 2)))
    p = lgreco("net", "calibrate", falling, "--topology", "dgx-a100", "--collective", "allreduce", "--ranks", "8", "-o", tmp_path / "f.json")
    assert p.returncode == 1 and "typical factor" in p.stderr and not (tmp_path / "f.json").exists()
    lgreco("net", "calibrate", falling, "--topology", "dgx-a100", "--collective", "allreduce", "--ranks", "8", "-o", tmp_path / "f.json",
           "--allow-poor-fit", check=True)
    assert json.loads((tmp_path / "f.json").read_text())["fit_quality"]["rms_log_error"] > 5


def test_unparseable_log(lgreco, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("# nThread 1 nGpus 8\n   8388608   2097152 float sum -1 garbage\n")
    p = lgreco("net", "calibrate", bad, "--topology", "dgx-a100", "--ranks", "8", "--collective", "allreduce", "-o", tmp_path / "f.json")
    assert p.returncode == 1
    assert "bad.txt:2" in p.stderr
    assert not (tmp_path / "f.json").exists()


def test_plugin_transports_in_cluster_specs_and_their_json(lgreco, tmp_path):
    """EFA (generation from the GPU or named), TCPX, TCPXO and NICs without GPUDirect RDMA: shown by `net
    topology`, kept through its JSON, and a different prediction from RDMA at the same line rate."""
    shown = {spec: lgreco("net", "topology", spec, check=True).stdout.splitlines()[0]
             for spec in ("2x8xV100-1x100G-efa-nogdr", "2x8xA100-4x100G-efa", "2x8xH200-16x200G-efa3",
                          "2x8xH100-8x200G-tcpxo", "2x8xH100-4x200G-tcpx")}
    assert "transport efa v1 without GPUDirect RDMA" in shown["2x8xV100-1x100G-efa-nogdr"]
    assert "transport efa v1," in shown["2x8xA100-4x100G-efa"]
    assert "transport efa v3," in shown["2x8xH200-16x200G-efa3"]
    assert "transport tcpxo," in shown["2x8xH100-8x200G-tcpxo"]
    assert "transport tcpx," in shown["2x8xH100-4x200G-tcpx"]
    doc = json.loads(lgreco("net", "topology", "2x8xV100-1x100G-efa-nogdr", "--format", "json", check=True).stdout)
    assert (doc["transport"], doc["efa_generation"], doc["gpudirect"]) == ("efa", 1, False)
    for key in ("bottlenecks", "nic_sharing", "provenance"):
        doc.pop(key)
    doc["kind"] = "lgreco-topology"
    f = tmp_path / "p3dn.json"
    f.write_text(json.dumps(doc))
    assert "transport efa v1 without GPUDirect RDMA" in lgreco("net", "topology", f, check=True).stdout

    def time_us(spec):
        p = lgreco("net", "predict", "--topology", spec, "--sizes", "1G", "--format", "json", check=True)
        return json.loads(p.stdout)["rows"][0]["time_us"]
    # 4 hosts of 8 A100 with 4 x 100 Gb/s: network-bound at 1 GiB. The corpus: EFA v1 reaches less of the
    # line rate than RDMA verbs, and staging through host memory less again.
    rdma, efa, nogdr = time_us("4x8xA100-4x100G"), time_us("4x8xA100-4x100G-efa"), time_us("4x8xA100-4x100G-efa-nogdr")
    assert rdma < efa < nogdr
    # GCP's two GPUDirect plugins at the same line rate: TCPX (A3 High, receive path on the host's cores)
    # reaches about half of what TCPXO (A3 Mega, offloaded) does in the corpus' all_gather runs.
    assert time_us("2x8xH100-8x200G-tcpxo") < time_us("2x8xH100-8x200G-tcpx")


def test_bad_topology_files(lgreco, tmp_path):
    doc = {"schema_version": 1, "kind": "lgreco-topology", "name": "x", "gpu": "A100",
           "nodes": [{"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"}, {"id": "g2", "kind": "gpu"}],
           "links": [{"a": "g0", "b": "g1", "class": "nvlink", "bandwidth_GBps": 50}]}
    f = tmp_path / "t.json"
    f.write_text(json.dumps(doc))
    p = lgreco("net", "topology", f)
    assert p.returncode == 1 and "disconnected" in p.stderr and "g2" in p.stderr
    doc["links"].append({"a": "g1", "b": "g2", "class": "nvlink", "bandwidth_GBps": -1})
    f.write_text(json.dumps(doc))
    p = lgreco("net", "topology", f)
    assert p.returncode == 1 and "bandwidth_GBps" in p.stderr and "-1" in p.stderr
    f.write_text("{not json")
    p = lgreco("net", "topology", f)
    assert p.returncode == 1 and "t.json" in p.stderr


def test_simulate_json(lgreco, tmp_path):
    layers = {"batch_per_gpu": 32, "tensors": [{"name": f"l{i}.weight", "shape": [1024, 1024], "uses_per_sample": 196}
                                                for i in range(24)]}
    f = tmp_path / "layers.json"
    f.write_text(json.dumps(layers))
    p = lgreco("simulate", "--layers", f, "--topology", "4x8xA100-4x100G", "--method", "powersgd:rank=4",
               "--format", "json", check=True)
    doc = json.loads(p.stdout)
    assert doc["kind"] == "lgreco-simulate"
    assert doc["step_s"] >= doc["compute_s"]
    assert doc["speedup"] > 1
    ends = [b["end_s"] for b in doc["buckets"]]
    assert ends == sorted(ends)


def test_nccl_env_restricts_predict_and_simulate(lgreco, tmp_path):
    """--nccl-env takes NCCL's own variables: with NCCL_ALGO=Ring the model never picks the tree it
    otherwise takes on 2 hosts, is never faster, and says so in its config; a bad value is a usage
    error naming the variable; simulate charges the restricted collectives."""
    args = ["net", "predict", "--topology", "2x8xH100-8x400G", "--sizes", "1K:1G", "--format", "json"]
    free = json.loads(lgreco(*args, check=True).stdout)
    ring = json.loads(lgreco(*args, "--nccl-env", "NCCL_ALGO=Ring", check=True).stdout)
    assert free["config"]["nccl_env"] is None and ring["config"]["nccl_env"] == "NCCL_ALGO=Ring"
    assert any(r["algorithm"] == "tree" for r in free["rows"])
    assert {r["algorithm"] for r in ring["rows"]} == {"ring"}
    for a, b in zip(free["rows"], ring["rows"]):
        assert b["time_us"] >= a["time_us"] * (1 - 1e-12)
    simple = json.loads(lgreco(*args, "--nccl-env", "NCCL_PROTO=^LL,LL128", check=True).stdout)
    assert {r["protocol"] for r in simple["rows"]} == {"Simple"}
    for bad, word in [("NCCL_ALGO=rign", "rign"), ("NCCL_SOCKET_IFNAME=eth0", "NCCL_SOCKET_IFNAME"),
                      ("NCCL_NVLS_ENABLE=on", "on")]:
        p = lgreco(*args, "--nccl-env", bad)
        assert p.returncode == 2 and "--nccl-env" in p.stderr and word in p.stderr and p.stdout == ""
    p = lgreco("net", "predict", "--topology", "hgx-h200", "--sizes", "1M", "--nccl-env", "NCCL_ALGO=tree")
    assert p.returncode == 1 and "NCCL_ALGO=tree" in p.stderr and p.stdout == ""

    layers = {"batch_per_gpu": 32, "tensors": [{"name": f"l{i}.weight", "shape": [1024, 1024], "uses_per_sample": 196}
                                                for i in range(24)]}
    f = tmp_path / "layers.json"
    f.write_text(json.dumps(layers))
    sim = ["simulate", "--layers", f, "--topology", "2x8xH100-8x400G", "--format", "json"]
    a = json.loads(lgreco(*sim, check=True).stdout)
    b = json.loads(lgreco(*sim, "--nccl-env", "NCCL_ALGO=Ring NCCL_NVLS_ENABLE=0", check=True).stdout)
    assert a["config"]["nccl_env"] is None and b["config"]["nccl_env"] == "NCCL_ALGO=Ring NCCL_NVLS_ENABLE=0"
    assert b["step_s"] > a["step_s"]


def test_validate_follows_the_corpus_files_nccl_env(lgreco, tmp_path):
    """A corpus file's nccl_env (the run's NCCL_TREE_THRESHOLD=0) is how its rows are predicted, by
    `net validate FILE` as by the corpus fit; --nccl-env overrides it."""
    src = REPO / "tests" / "data" / "network" / "p3dn-v100-efa-dlami-nccltests.tsv"
    doc = json.loads(lgreco("net", "validate", src, "--format", "json", check=True).stdout)
    assert doc["config"]["nccl_env"] == "NCCL_TREE_THRESHOLD=0"
    assert {r["algorithm"] for r in doc["rows"]} == {"ring"}
    free = json.loads(lgreco("net", "validate", src, "--format", "json", "--nccl-env", "NCCL_TREE_THRESHOLD=1099511627776",
                             check=True).stdout)
    assert "tree" in {r["algorithm"] for r in free["rows"]}
    whole = json.loads(lgreco("net", "validate", REPO / "tests" / "data" / "network", "--format", "json", check=True).stdout)
    rows = [r for r in whole["rows"] if r["file"] == src.name]
    assert [r["predicted_us"] for r in rows] == pytest.approx([r["predicted_us"] for r in doc["rows"]], rel=1e-12)


def test_calibrate_under_the_sweeps_nccl_env(lgreco, tmp_path):
    """A sweep run with NCCL_ALGO=Ring is fitted as rings (--nccl-env on calibrate, recorded in the
    fit's config); fitted without it, the same sweep is explained with the tree the run never used."""
    topo = "2x8xH100-8x400G"
    pred = json.loads(lgreco("net", "predict", "--topology", topo, "--sizes", "32K:1G", "--nccl-env", "NCCL_ALGO=Ring",
                             "--format", "json", check=True).stdout)
    tsv = tmp_path / "ring.tsv"
    tsv.write_text("size_bytes\ttime_us\talgbw_GBps\tbusbw_GBps\n" + "".join(
        f"{int(r['size_bytes'])}\t{1.3 * r['time_us']:.3f}\t0\t0\n" for r in pred["rows"]))
    docs = {}
    for name, extra in {"ring": ["--nccl-env", "NCCL_ALGO=Ring"], "free": []}.items():
        out = tmp_path / f"{name}.json"
        p = lgreco("net", "calibrate", tsv, "--topology", topo, "--ranks", "16", "--collective", "allreduce", *extra,
                   "-o", out, "--format", "json", check=True)
        docs[name] = json.loads(p.stdout)
        assert json.loads(out.read_text()) == docs[name]
    assert docs["ring"]["config"]["nccl_env"] == "NCCL_ALGO=Ring" and docs["free"]["config"]["nccl_env"] is None
    assert docs["ring"]["config"]["optimizer"].startswith("Levenberg-Marquardt, ")
    # The fitted model under the run's restriction picks rings only, and predicts the sweep well.
    pr = json.loads(lgreco("net", "predict", "--topology", topo, "--network-fit", tmp_path / "ring.json", "--sizes", "32K:1G",
                           "--nccl-env", "NCCL_ALGO=Ring", "--format", "json", check=True).stdout)
    assert {r["algorithm"] for r in pr["rows"]} == {"ring"}
    assert docs["ring"]["fit_quality"]["rms_log_error"] < 0.1
    free = json.loads(lgreco("net", "predict", "--topology", topo, "--network-fit", tmp_path / "free.json", "--sizes",
                             "32K:1G", "--format", "json", check=True).stdout)
    assert "tree" in {r["algorithm"] for r in free["rows"]}
