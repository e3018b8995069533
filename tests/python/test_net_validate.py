"""`lgreco net validate`: predicted against measured collective times from the corpus or nccl-tests output."""
import json
import math
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "network"


def data_rows(path):
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")][1:]


def test_validate_corpus_file_json(lgreco):
    src = CORPUS / "h200-hgx-pytorch.tsv"
    doc = json.loads(lgreco("net", "validate", src, "--format", "json", check=True).stdout)
    assert doc["kind"] == "lgreco-net-validate" and doc["schema_version"] == 1
    assert len(doc["rows"]) == len(data_rows(src))
    assert doc["config"]["benchmark"] == "pytorch" and doc["config"]["topology"] == "hgx-h200"
    assert doc["config"]["source"].startswith("https://github.com/")
    for row in doc["rows"]:
        # The error is the predicted over measured time, as nccl-tests reports times.
        assert math.isclose(row["error_pct"], 100 * (row["predicted_us"] / row["measured_us"] - 1), rel_tol=1e-9, abs_tol=1e-9)
    large = [abs(r["error_pct"]) for r in doc["rows"] if r["size_bytes"] >= 1048576]
    assert math.isclose(abs(doc["worst"]["at_least_1MiB"]["error_pct"]), max(large))


def test_validate_table_and_benchmark_terms(lgreco):
    src = CORPUS / "h200-hgx-pytorch.tsv"
    out = lgreco("net", "validate", src, check=True).stdout
    assert "worst error >= 1 MiB" in out and "worst error < 1 MiB" in out
    with_torch = json.loads(lgreco("net", "validate", src, "--format", "json", check=True).stdout)["rows"]
    as_nccl = json.loads(lgreco("net", "validate", src, "--benchmark", "nccl-tests", "--format", "json", check=True).stdout)["rows"]
    # PyTorch's per-call host cost is one constant added to every row.
    diffs = {round(a["predicted_us"] - b["predicted_us"], 6) for a, b in zip(with_torch, as_nccl)}
    assert len(diffs) == 1 and diffs.pop() > 0


def test_validate_nccl_tests_file_and_fit(lgreco, shared_dir, tmp_path):
    src = shared_dir / "data" / "nccl-tests" / "a100x8-nvswitch-allreduce.tsv"
    p = lgreco("net", "validate", src)
    assert p.returncode == 2 and "--topology" in p.stderr
    preset = json.loads(lgreco("net", "validate", src, "--topology", "dgx-a100", "--format", "json", check=True).stdout)
    assert preset["config"]["gpus_per_process"] == "node"  # the file's command runs -g 8
    fit = tmp_path / "fit.json"
    lgreco("net", "calibrate", src, "--topology", "dgx-a100", "-o", fit, check=True)
    fitted = json.loads(lgreco("net", "validate", src, "--topology", "dgx-a100", "--network-fit", fit, "--format", "json",
                               check=True).stdout)
    worst = lambda doc: max(abs(r["error_pct"]) for r in doc["rows"])
    # A calibration on the very sweep reproduces it far better than any preset.
    assert worst(fitted) < 10 < worst(preset)


def test_validate_bad_input(lgreco, tmp_path):
    src = CORPUS / "a100-dgx-nccltests.tsv"
    p = lgreco("net", "validate", src, "--benchmark", "mpi")
    assert p.returncode == 2 and "--benchmark" in p.stderr and "mpi" in p.stderr
    bad = tmp_path / "bad.tsv"
    bad.write_text(src.read_text().replace("# source:", "# origin:"))
    p = lgreco("net", "validate", bad)
    assert p.returncode == 1 and "bad.tsv" in p.stderr and "origin" in p.stderr


def test_validate_excluded_file_says_why(lgreco):
    # A file kept out of the fit (tests/data/network/excluded/) validates like any corpus file and
    # repeats its reason; the fitted files carry none.
    src = CORPUS / "excluded" / "aws-p5-eks-efa-nccltests.tsv"
    reason = next(line for line in src.read_text().splitlines() if line.startswith("# excluded:"))[len("# excluded:"):].strip()
    p = lgreco("net", "validate", src, check=True)
    assert p.stdout.splitlines()[-1] == "kept out of the presets' fit: " + reason
    doc = json.loads(lgreco("net", "validate", src, "--format", "json", check=True).stdout)
    assert doc["config"]["excluded"] == reason and len(doc["rows"]) == len(data_rows(src))
    doc = json.loads(lgreco("net", "validate", CORPUS / "a100-dgx-nccltests.tsv", "--format", "json", check=True).stdout)
    assert doc["config"]["excluded"] is None


def test_validate_corpus_directory(lgreco):
    doc = json.loads(lgreco("net", "validate", CORPUS, "--format", "json", check=True).stdout)
    assert doc["kind"] == "lgreco-net-validate-corpus" and doc["mode"] == "presets"
    systems = {s["system"] for s in doc["systems"]}
    assert len(systems) >= 8 and systems == {r["system"] for r in doc["rows"]}
    assert len(doc["rows"]) == sum(len(data_rows(f)) for f in CORPUS.glob("*.tsv"))
    # The totals the docs quote, recounted here from the rows and systems of the same document.
    t = doc["totals"]
    within = [abs(r["error_pct"]) <= (20.0 if r["size_bytes"] >= 1 << 20 else 40.0) for r in doc["rows"]]
    assert t["rows"] == len(doc["rows"]) and t["rows_within_bars"] == sum(within)
    assert t["systems"] == len(doc["systems"]) and t["systems_within_bars"] == sum(s["meets_bars"] for s in doc["systems"])
    logs = sorted(abs(math.log(r["predicted_us"] / r["measured_us"])) for r in doc["rows"])
    assert t["median_abs_log_error"] == pytest.approx(logs[len(logs) // 2], rel=1e-9)
    # The baseline the presets are measured against: NCCL's own constants on the same rows, further off.
    assert t["median_abs_log_error_nccl_constants"] > t["median_abs_log_error"]
    lines = lgreco("net", "validate", CORPUS, check=True).stdout.splitlines()
    summary = next(line for line in lines if line.startswith("systems within the bars:"))
    assert summary.endswith(f"(NCCL's own constants: {t['median_abs_log_error_nccl_constants']:.3f})")
    p = lgreco("net", "validate", CORPUS, "--topology", "dgx-a100")
    assert p.returncode == 2 and "corpus directory" in p.stderr
    p = lgreco("net", "validate", CORPUS / "a100-dgx-nccltests.tsv", "--holdout")
    assert p.returncode == 2 and "--holdout" in p.stderr


def test_validate_corpus_refit_is_the_shipped_fit(tmp_path, lgreco):
    # The shipped constants are the corpus fit (test_corpus_holdout.cpp checks every prediction), so a
    # refit on the shipped corpus prints them back; on a smaller corpus the constants move.
    doc = json.loads(lgreco("net", "validate", CORPUS, "--refit", "--format", "json", check=True).stdout)
    shipped = json.loads(lgreco("net", "validate", CORPUS, "--format", "json", check=True).stdout)
    assert doc["mode"] == "refit" and set(doc["constants"]) == set(shipped["constants"])
    for name, value in doc["constants"].items():
        assert math.isclose(value, shipped["constants"][name], rel_tol=2e-3, abs_tol=1e-9), name
    # The fit's near optima: the best is one of them, so each constant's range holds its value.
    fit = doc["fit"]
    assert shipped["fit"] is None and (fit["chains"], fit["hops"]) == (4, 12) and fit["near_optimum_pct"] == 1
    assert 1 <= fit["near_optima"] <= fit["chains"] and fit["objective"] > 0
    assert len(fit["near_optima_objectives"]) == fit["near_optima"] and fit["near_optima_objectives"][0] == fit["objective"]
    assert fit["near_optima_objectives"] == sorted(fit["near_optima_objectives"])
    assert fit["near_optima_objectives"][-1] <= fit["objective"] * 1.01
    assert set(fit["constants_range"]) == set(doc["constants"])
    for name, (low, high) in fit["constants_range"].items():
        assert low <= doc["constants"][name] <= high, name
    # network-model.md's paragraph on how well the corpus determines each constant quotes these ranges.
    text = (REPO / "docs" / "network-model.md").read_text()
    para = text[text.index("How well the corpus determines each constant."):]
    para = para[:para.index("\n\n")]
    assert f"{len(doc['systems'])}-system corpus {fit['near_optima']} of the {fit['chains']} chains do" in para

    def printed(value, written):  # value rounded to the significant digits of `written`
        digits = len(written.replace(".", "").lstrip("0"))
        return float(f"{value:.{digits}g}") == float(written)

    quoted = re.findall(r"\b([a-z][a-z0-9_]*)\s+([0-9.]+)-([0-9.]+)", para)
    assert len(quoted) >= 10
    for name, low, high in quoted:
        got = fit["constants_range"][name]
        assert printed(got[0], low) and printed(got[1], high), (name, low, high, got)
    # "up to a factor X": the widest range among the plugin constants (EFA, TCPX, TCPXO and the plugin class).
    plugin = [h / l for n, (l, h) in fit["constants_range"].items() if re.match(r"(efa\d|tcpx|tcpxo)_|.*_plugin$", n)]
    factor = re.search(r"up to a\s+factor ([0-9.]+)", para).group(1)
    assert printed(max(plugin), factor), (max(plugin), factor)
    for f in ["a100-dgx-nccltests.tsv", "h200-hgx-pytorch.tsv", "p4dn-a100-efa-nccltests.tsv"]:
        (tmp_path / f).write_text((CORPUS / f).read_text())
    small = json.loads(lgreco("net", "validate", tmp_path, "--refit", "--format", "json", check=True).stdout)
    assert small["constants"] != doc["constants"]
    assert {s["system"] for s in small["systems"]} == {"dgx-a100", "hgx-h200", "aws-p4dn"}
    p = lgreco("net", "validate", CORPUS, "--refit", "--holdout")
    assert p.returncode == 2 and "exclude" in p.stderr
    p = lgreco("net", "validate", CORPUS / "a100-dgx-nccltests.tsv", "--refit")
    assert p.returncode == 2 and "--refit" in p.stderr


def test_docs_presets_figures_are_the_tools(lgreco):
    # docs/network-model.md quotes, per corpus system, the shipped presets' worst error at >= 1 MiB and
    # below, and the totals; they must be what `lgreco net validate DIR` prints now, so a refit that
    # leaves the docs behind fails here. (The held-out columns take a 3-minute refit of every system; the
    # C++ [loso] test, which runs it anyway, checks them.)
    doc = json.loads(lgreco("net", "validate", CORPUS, "--format", "json", check=True).stdout)
    text = (REPO / "docs" / "network-model.md").read_text()
    header = "| system | held out ≥ 1 MiB | held out < 1 MiB | presets ≥ 1 MiB | presets < 1 MiB |"
    assert text.count(header) == 1
    lines = text.split(header, 1)[1].splitlines()[2:]
    table = {}
    for line in lines:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        table[cells[0].removesuffix(" ✓")] = cells[3:5]

    def quoted(cell):
        return None if cell == "—" else float(cell.removesuffix(" %"))

    tool = {s["system"]: s for s in doc["systems"]}
    assert set(table) == set(tool)
    for system, (large, small) in table.items():
        for cell, key in ((large, "at_least_1MiB"), (small, "below_1MiB")):
            worst = tool[system][key]
            if worst is None:
                assert quoted(cell) is None, (system, key, cell)
            else:
                assert quoted(cell) == pytest.approx(worst["error_pct"], abs=0.051), (system, key, cell)
    t, prose = doc["totals"], text.replace("\n", " ")
    assert f"rows are within the bars held out and {t['rows_within_bars']} with the shipped presets" in prose
    assert (f"Across all {t['rows']} rows the presets' median |ln(pred/meas)| is {t['median_abs_log_error']:.3f} "
            f"against {t['median_abs_log_error_nccl_constants']:.3f} for NCCL's constants") in prose
    assert f"({t['rows']} rows, {t['systems']} systems," in text


def _quantity(cell, units):
    """'8.14 ms' -> (8.14 in the base unit, half a unit of its last digit); the docs write minus as '−'."""
    number, unit = cell.replace("−", "-").split()
    decimals = len(number.split(".")[1]) if "." in number else 0
    return float(number) * units[unit], 0.5 * 10 ** -decimals * units[unit]


def test_docs_node_trends_are_the_tools(lgreco):
    # The node-count trend table of docs/network-model.md (shipped presets, largest allreduce size per
    # host count) is what `lgreco net validate DIR` prints under "node-count trends", cell by cell, to
    # the digits the table shows; the trends' own figures are recomputed from the rows here.
    doc = json.loads(lgreco("net", "validate", CORPUS, "--format", "json", check=True).stdout)
    text = (REPO / "docs" / "network-model.md").read_text()
    header = "| system | nodes | size | measured | predicted | error | t/t(first) measured / predicted |"
    assert text.count(header) == 1
    quoted = []
    for line in text.split(header, 1)[1].splitlines()[2:]:
        if not line.startswith("| "):
            break
        quoted.append([c.strip() for c in line.strip("|").split("|")])
    # Every trend point once, in any order of systems.
    tool = {(t["system"], p["hosts"]): p for t in doc["trends"] for p in t["points"]}
    assert sorted((c[0], int(c[1])) for c in quoted) == sorted(tool)
    sizes = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    times = {"µs": 1, "ms": 1e3, "s": 1e6}
    for cells in quoted:
        p = tool[(cells[0], int(cells[1]))]
        size, _ = _quantity(cells[2], sizes)
        assert size == p["size_bytes"], cells
        for cell, key in ((cells[3], "measured_us"), (cells[4], "predicted_us")):
            value, half = _quantity(cell, times)
            assert abs(value - p[key]) <= half * 1.0001, (cells, key, p[key])
        error, half = _quantity(cells[5], {"%": 1})
        assert abs(error - p["error_pct"]) <= half * 1.0001, (cells, p["error_pct"])
        ratios = cells[6].split(" / ")
        for cell, key in zip(ratios, ("measured_ratio", "predicted_ratio")):
            assert abs(float(cell) - p[key]) <= 0.005 * 1.0001, (cells, key, p[key])
    # The trends come from the document's own rows: per system and host count the allreduce at the
    # largest size (the first one on a tie), its ratio to the fewest hosts, and the 25 % bar.
    assert doc["bars_pct"]["node_trend"] == 25.0
    for trend in doc["trends"]:
        rows = [r for r in doc["rows"] if r["system"] == trend["system"] and r["collective"] == "allreduce"]
        largest = {}
        for r in rows:
            if r["hosts"] not in largest or r["size_bytes"] > largest[r["hosts"]]["size_bytes"]:
                largest[r["hosts"]] = r
        assert [p["hosts"] for p in trend["points"]] == sorted(largest) and len(largest) >= 2
        base = largest[min(largest)]
        for p in trend["points"]:
            r = largest[p["hosts"]]
            assert (p["size_bytes"], p["measured_us"], p["predicted_us"]) == (r["size_bytes"], r["measured_us"], r["predicted_us"])
            assert p["measured_ratio"] == pytest.approx(r["measured_us"] / base["measured_us"], rel=1e-12)
            assert p["predicted_ratio"] == pytest.approx(r["predicted_us"] / base["predicted_us"], rel=1e-12)
        assert trend["meets_bar"] == all(abs(p["error_pct"]) <= 25.0 for p in trend["points"])
    hosts = {}
    for r in doc["rows"]:
        if r["collective"] == "allreduce":
            hosts.setdefault(r["system"], set()).add(r["hosts"])
    assert {t["system"] for t in doc["trends"]} == {s for s, h in hosts.items() if len(h) > 1}
    assert doc["totals"]["trends"] == len(doc["trends"])
    assert doc["totals"]["trends_within_bar"] == sum(t["meets_bar"] for t in doc["trends"])


# The docs' constants table (docs/network-model.md "Presets and their constants"): which fitted constants
# each row quotes, in the order its value cell lists them ("a / b / c" or "a, b, c").
_DOCS_CONSTANT_ROWS = {
    "η_nvlink": ["eta_nvlink"],
    "η_pcie": ["eta_pcie"],
    "η_rdma": ["eta_rdma"],
    "η_plugin": ["eta_plugin"],
    "η_socket": ["eta_socket"],
    "LL latency per network step": ["hop_ll_rdma", "hop_ll_plugin", "hop_ll_socket"],
    "LL128/Simple latency per network step": ["hop_pipe_rdma", "hop_pipe_plugin", "hop_pipe_socket"],
    "latency once per collective across hosts": ["net_base_rdma", "net_base_plugin", "net_base_socket"],
    "time added across hosts to the LL128/Simple transfer (T_net)": ["net_fill_rdma", "net_fill_plugin", "net_fill_socket"],
    "factors on η_plugin, plugin LL step, plugin LL128/Simple step, T_net: EFA v1": [
        "efa1_eta_factor", "efa1_hop_ll_factor", "efa1_hop_pipe_factor", "efa1_fill_factor"],
    "the same: EFA v2": ["efa2_eta_factor", "efa2_hop_ll_factor", "efa2_hop_pipe_factor", "efa2_fill_factor"],
    "the same: EFA v3": ["efa3_eta_factor", "efa3_hop_ll_factor", "efa3_hop_pipe_factor", "efa3_fill_factor"],
    "the same: EFA v4": ["efa4_eta_factor", "efa4_hop_ll_factor", "efa4_hop_pipe_factor", "efa4_fill_factor"],
    "the same: TCPX": ["tcpx_eta_factor", "tcpx_hop_ll_factor", "tcpx_hop_pipe_factor", "tcpx_fill_factor"],
    "the same: TCPXO": ["tcpxo_eta_factor", "tcpxo_hop_ll_factor", "tcpxo_hop_pipe_factor", "tcpxo_fill_factor"],
    "η_nogdr": ["nogdr_efficiency"],
    "s_lat": ["latency_scale"],
    "m_LL": ["ll_bandwidth"],
    "T (pipeline fill": ["fill"],
    "κ_nvls": ["nvls_fraction"],
    "NVLS latency": ["nvls_latency"],
    "τ_pytorch": ["pytorch_overhead"],
    "τ_launch": ["launch_overhead"],
}


def _docs_table_rows(text, header):
    """The cells of each row of the markdown table under `header` (which must appear once)."""
    assert text.count(header) == 1
    rows = []
    for line in text.split(header, 1)[1].splitlines()[2:]:
        if not line.startswith("| "):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_docs_constants_table_is_the_shipped_presets(lgreco):
    # Every value of the docs' constants table is a shipped constant as `lgreco net validate DIR --format
    # json` reports it (the units the tool prints: µs for times), to the digits the table shows, and
    # every shipped constant is in the table once: a refit that leaves the table behind fails here.
    constants = json.loads(lgreco("net", "validate", CORPUS, "--format", "json", check=True).stdout)["constants"]
    text = (REPO / "docs" / "network-model.md").read_text()
    quoted = {}
    for cells in _docs_table_rows(text, "| constant | value | prior (before the corpus) | corpus rows that determine it |"):
        # A row quotes key k when its first cell starts with k and the name does not go on ("TCPX" is not "TCPXO").
        keys = [k for k in _DOCS_CONSTANT_ROWS if cells[0].startswith(k) and
                (len(cells[0]) == len(k) or not (cells[0][len(k)].isalnum() or cells[0][len(k)] == "_"))]
        assert len(keys) == 1, cells[0]
        names = _DOCS_CONSTANT_ROWS[keys[0]]
        values = cells[1].removesuffix(" µs").replace(" / ", ", ").split(", ")
        assert len(values) == len(names), (cells[0], cells[1])
        for name, value in zip(names, values):
            assert name not in quoted, name
            quoted[name] = value
    assert sorted(quoted) == sorted(constants)
    for name, value in quoted.items():
        decimals = len(value.split(".")[1]) if "." in value else 0
        assert abs(float(value) - constants[name]) <= 0.5 * 10 ** -decimals * 1.0001, (name, value, constants[name])


def test_evidence_table_is_the_tools(lgreco):
    # `net validate DIR --evidence` prints what pins each constant; docs/network-model.md quotes it row for row
    # ("What pins each constant"), and its JSON (`evidence`, also without the flag) adds up: for every constant
    # the prior's share and the systems' shares make 1.
    text = lgreco("net", "validate", CORPUS, "--evidence", check=True).stdout
    lines = text.split("what pins each constant", 1)[1].splitlines()[4:]
    printed = {}
    for line in lines:
        m = re.match(r"  (\S+)\s+se x(\S+)\s+prior\s+(\d+) %  (.*)$", line)
        if not m:
            break
        printed[m.group(1)] = (m.group(2), m.group(3) + " %", m.group(4))
    doc = json.loads(lgreco("net", "validate", CORPUS, "--format", "json", check=True).stdout)
    evidence = doc["evidence"]
    assert sorted(printed) == sorted(evidence) == sorted(doc["constants"])
    for name, e in evidence.items():
        assert math.isclose(e["prior_share"] + sum(s["share"] for s in e["systems"]), 1.0, rel_tol=1e-9), name
        shares = [s["share"] for s in e["systems"]]
        assert shares == sorted(shares, reverse=True), name
        assert all(s["rows"] >= 1 and s["min_size_bytes"] <= s["max_size_bytes"] for s in e["systems"]), name
        # The standard error: at most the prior's alone; without a system's rows no smaller than with them.
        assert 0 < e["std_ln"] <= e["prior_std_ln"] * (1 + 1e-9), name
        assert all(e["std_ln"] * (1 - 1e-9) <= s["std_ln_without"] <= e["prior_std_ln"] * (1 + 1e-9) for s in e["systems"]), name
        assert printed[name][0] == f"{math.exp(e['std_ln']):.3g}", name
    docs = (REPO / "docs" / "network-model.md").read_text()
    header = ("| constant | standard error (× or ÷) | prior's share | systems whose rows pin it (5 % or more; the rows that carry "
              "80 % of each; how much the standard error grows without them) |")
    quoted = {cells[0]: (cells[1], cells[2], cells[3]) for cells in _docs_table_rows(docs, header)}
    assert quoted == printed
    # The findings the docs draw from the table.
    prose = " ".join(docs.split())
    rdma = evidence["eta_rdma"]["systems"]
    assert {s["system"] for s in rdma[:2]} == {"gcp-a4-b200-roce", "lambda-b200-ib"}
    assert f"{round(100 * (rdma[0]['share'] + rdma[1]['share']))} % together" in prose
    pcie = evidence["eta_pcie"]["systems"][0]
    assert pcie["system"] == "l40s-openshift" and f"l40s-openshift's intra-host path ({round(100 * pcie['share'])} %)" in prose
    at_prior = sorted(n for n, e in evidence.items() if e["prior_share"] >= 0.9)
    assert at_prior == sorted(["efa4_hop_ll_factor", "tcpx_hop_pipe_factor", "efa3_fill_factor", "efa3_hop_pipe_factor"])
    one_system = [n for n, e in evidence.items()
                  if e["prior_share"] < 0.5 and e["systems"] and e["systems"][0]["share"] >= 0.95 * (1 - e["prior_share"])]
    assert "Eleven constants rest on one system" in prose and len(one_system) == 11
    def grows(constant, system):
        e = evidence[constant]
        return next(s["std_ln_without"] for s in e["systems"] if s["system"] == system) / e["std_ln"]
    assert f"η_socket's standard error grows ×{grows('eta_socket', 'l40s-openshift'):.0f} without l40s-openshift" in prose
    assert f"η_rdma ×{grows('eta_rdma', 'gcp-a4-b200-roce'):.2f} without gcp-a4-b200-roce" in prose
    # prior_std_ln = s·σ/λ, with λ 0.05 and η_rdma's σ 0.1.
    assert f"s = {evidence['eta_rdma']['prior_std_ln'] * 0.05 / 0.1:.3f}" in prose


def test_write_error_bands_from_a_holdout(tmp_path, lgreco):
    """--write-error-bands writes the held-out error bands as the source of error_bands_table.cpp (what the
    tools print as the presets' expected error); it refuses to overwrite without --force and needs --holdout."""
    small = tmp_path / "corpus"
    small.mkdir()
    for f in ["a100-dgx-nccltests.tsv", "h200-hgx-pytorch.tsv", "p4dn-a100-efa-nccltests.tsv"]:
        (small / f).write_text((CORPUS / f).read_text())
    out = tmp_path / "bands.cpp"
    doc = json.loads(lgreco("net", "validate", small, "--holdout", "--write-error-bands", out, "--format", "json",
                            check=True).stdout)
    bands = doc["error_bands"]
    assert set(bands) == {"one-host-nvlink", "one-host-pcie", "rdma", "efa", "tcpx", "tcpxo", "socket"}
    assert all(set(b) == {"below_1MiB", "1MiB_to_64MiB", "at_least_64MiB"} for b in bands.values())
    assert sum(b[k]["rows"] for b in bands.values() for k in b) == doc["totals"]["rows"]
    assert bands["efa"]["at_least_64MiB"]["systems"] == 1 and bands["socket"]["below_1MiB"] == {"systems": 0, "rows": 0}
    src = out.read_text()
    assert "const ErrorBands& shipped_error_bands()" in src and "--write-error-bands" in src
    assert f'o{{"{small.as_posix()}", 3, {doc["totals"]["rows"]}}}' in src
    # Each band's line: {systems, rows, median, p80, p90, max} of |ln|, below 1 MiB then at least 1 MiB.
    efa_line = next(l for l in src.splitlines() if l.endswith("// efa"))
    large = bands["efa"]["at_least_64MiB"]
    assert efa_line.strip().startswith("{{{0, 0, 0.000000, 0.000000, 0.000000, 0.000000}")  # no EFA row below 1 MiB here
    assert f"{{1, {large['rows']}, {math.log(large['median_factor']):.6f}," in efa_line
    again = lgreco("net", "validate", small, "--holdout", "--write-error-bands", out)
    assert again.returncode == 1 and "exists" in again.stderr and out.read_text() == src
    assert lgreco("net", "validate", small, "--holdout", "--write-error-bands", out, "--force").returncode == 0
    for args, word in [(["--write-error-bands", out], "--holdout"), (["--force"], "--force"),
                       (["--refit", "--write-error-bands", out], "--holdout")]:
        p = lgreco("net", "validate", small, *args)
        assert p.returncode == 2 and word in p.stderr, (args, p.stderr)
    p = lgreco("net", "validate", CORPUS / "a100-dgx-nccltests.tsv", "--holdout", "--write-error-bands", out)
    assert p.returncode == 2 and "corpus directory" in p.stderr
