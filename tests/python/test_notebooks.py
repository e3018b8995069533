"""The analysis notebooks: committed clean, and each one executes headless on inputs the CLI writes.

Every execution test generates its inputs with the `lgreco` binary into a temporary folder (small
synthetic traces, few what-if points), executes the notebook with `jupyter nbconvert --execute`
(Debian's packages) with environment variables pointing at those files, then checks the JSON
summary the notebook wrote against the input data. A notebook whose subcommands are not built into
this `lgreco` is skipped, naming the missing subcommand or flag; with LGRECO_NB_REQUIRE_ALL=1 that is a
failure (for a build that has every command, so that a wrong command line in a notebook's intro cannot
hide behind a skip).
"""
import json
import math
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import REPO

NOTEBOOKS = REPO / "notebooks"
NAMES = ["whatif-bandwidth", "layer-tradeoffs", "network-validation", "schedule-inspection"]
NCCL_FILE = pathlib.Path("data") / "nccl-tests" / "a100x8-nvswitch-allreduce.tsv"
EXEC_TIMEOUT_S = 300


def load_nb(name):
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())


def intro_commands(name):
    """The `lgreco ...` command lines of the notebook's first markdown cell (continuations joined)."""
    text = "".join(load_nb(name)["cells"][0]["source"]).replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip().startswith("lgreco ")]


def subcommand_of(command_line, known):
    """The longest registered subcommand that prefixes `lgreco WORDS...`; None when none matches."""
    words = command_line.split()[1:]
    best = None
    for n in range(1, min(3, len(words)) + 1):
        if " ".join(words[:n]) in known:
            best = " ".join(words[:n])
    return best


@pytest.fixture
def available(lgreco):
    return set(lgreco("--list-commands", check=True).stdout.split("\n")) - {""}


def require(name, available, lgreco):
    """Skips unless every subcommand the notebook's intro names is built into lgreco, with the flags it uses."""
    missing = []
    for line in intro_commands(name):
        sub = subcommand_of(line, available)
        if sub is None:
            missing.append("`lgreco " + " ".join(w for w in line.split()[1:3] if not w.startswith("-")) + "`")
            continue
        help_text = lgreco(*sub.split(), "--help", check=True).stdout
        rest = line.split()[1 + len(sub.split()):]
        if len(rest) >= 2 and rest[0].startswith("--"):  # a mode flag (`plan --trace T --help`) has its own help
            help_text += lgreco(*sub.split(), rest[0], rest[1], "--help").stdout
        flags = [f for f in re.findall(r"(?<!\S)(--[a-z][a-z0-9-]*)", line) if f not in help_text]
        if flags:
            missing.append(f"`lgreco {sub}` with {', '.join(flags)}")
    if missing:
        why = f"{name}.ipynb needs {'; '.join(dict.fromkeys(missing))}: not in this build (lgreco --list-commands / --help)"
        if os.environ.get("LGRECO_NB_REQUIRE_ALL") == "1":
            pytest.fail(why + " and LGRECO_NB_REQUIRE_ALL=1")
        pytest.skip(why)


def execute(name, tmp_path, env_vars):
    """Executes the notebook headless; returns the summary JSON it wrote. Fails with the cell's error."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = tmp_path / f"{name}-out"
    env = dict(os.environ, LGRECO_NB_OUT=str(out), MPLBACKEND="Agg", PYDEVD_DISABLE_FILE_VALIDATION="1",
               **{k: str(v) for k, v in env_vars.items()})
    proc = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
         f"--ExecutePreprocessor.timeout={EXEC_TIMEOUT_S}", "--ExecutePreprocessor.kernel_name=python3",
         "--output-dir", str(tmp_path), str(NOTEBOOKS / f"{name}.ipynb")],
        capture_output=True, text=True, env=env, timeout=EXEC_TIMEOUT_S + 60)
    assert proc.returncode == 0, f"{name}.ipynb failed (env {env_vars}):\n{proc.stderr[-4000:]}"
    executed = json.loads((tmp_path / f"{name}.ipynb").read_text())
    errors = [o for c in executed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    images = sum(1 for c in executed["cells"] for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
    assert images >= 1, f"{name}.ipynb displayed no figure"
    return json.loads((out / f"{name}.summary.json").read_text())


def nccl_tsv(shared_dir):
    """The nccl-tests sweep: under the shared folder, or in a `shared/` next to any parent of the repo."""
    for base in [shared_dir, *[p / "shared" for p in REPO.parents]]:
        if (base / NCCL_FILE).exists():
            return base / NCCL_FILE
    pytest.skip(f"{NCCL_FILE} not found (set LGRECO_SHARED_DIR)")


# ---------------------------------------------------------------- committed form


@pytest.mark.parametrize("name", NAMES)
def test_notebook_committed_without_outputs(name):
    nb = load_nb(name)
    assert nb["nbformat"] == 4
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{name}.ipynb cell {i} has outputs"
            assert cell["execution_count"] is None, f"{name}.ipynb cell {i} has an execution count"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_intro_names_inputs_and_commands(name):
    """First a markdown cell naming every LGRECO_NB_* variable the code reads and the commands; then code."""
    nb = load_nb(name)
    intro, first_code = nb["cells"][0], nb["cells"][1]
    assert intro["cell_type"] == "markdown" and first_code["cell_type"] == "code"
    code = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    used = set(re.findall(r'"(LGRECO_NB_[A-Z_]+)"', code))
    assert used, f"{name}.ipynb reads no LGRECO_NB_* variable"
    text = "".join(intro["source"])
    assert not (used - set(re.findall(r"LGRECO_NB_[A-Z_]+", text))), f"intro lacks {used - set(re.findall(r'LGRECO_NB_[A-Z_]+', text))}"
    assert intro_commands(name), f"{name}.ipynb intro shows no lgreco command"
    assert "matplotlib.use(\"Agg\")" in "".join(first_code["source"])


# ---------------------------------------------------------------- inputs generated with the CLI
# Kept small: one synthetic resnet18 trace of a few steps (the smallest preset), uncompressed on disk,
# generated once per session and shared by the tests that need it; a handful of what-if points.

TRACE_STEPS = 6
COMPUTE_TFLOPS = 50  # the trace records backward compute times, so communication can hide behind them


class Inputs:
    """Lazily generated CLI outputs in one session-wide folder."""

    def __init__(self, folder):
        self.dir = folder
        self.made = {}

    def trace(self, lgreco):
        if "trace" not in self.made:
            path = self.dir / "trace.h5"
            lgreco("trace", "synth", "--model", "resnet18", "--steps", TRACE_STEPS, "--deflate", 0,
                   "--compute-tflops", COMPUTE_TFLOPS, "--output", path, check=True)
            self.made["trace"] = path
        return self.made["trace"]

    def plan(self, lgreco):
        """(tables.json, schedule.json) of a powersgd plan of the trace, phased: warm-up, uniform, two plans."""
        if "plan" not in self.made:
            tables, schedule = self.dir / "tables.json", self.dir / "schedule.json"
            third = TRACE_STEPS // 3
            lgreco("plan", "--trace", self.trace(lgreco), "--family", "powersgd", "--warmup-steps", third, "--period", third,
                   "--tables-out", tables, "--output", schedule, check=True)
            self.made["plan"] = (tables, schedule)
        return self.made["plan"]


@pytest.fixture(scope="session")
def inputs(tmp_path_factory):
    return Inputs(tmp_path_factory.mktemp("notebook-inputs"))


def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


# ---------------------------------------------------------------- execution, one test per notebook


def test_whatif_bandwidth_notebook(lgreco, available, inputs, tmp_path):
    require("whatif-bandwidth", available, lgreco)
    whatif = tmp_path / "whatif.json"
    p = lgreco("whatif", "--trace", inputs.trace(lgreco), "--family", "powersgd", "--bandwidth", "1Gbps:400Gbps:8",
               "--nodes", "1,4", "--format", "json", check=True)
    whatif.write_text(p.stdout)
    doc = json.loads(whatif.read_text())
    # A threshold inside the range of the largest cluster's speedups, so that the crossing (interpolation) is tested.
    top = [p["adaptive_speedup"] for p in doc["points"] if p["nodes"] == max(q["nodes"] for q in doc["points"])]
    assert max(top) > 1.1 * min(top), f"speedups do not vary with bandwidth: {top}"
    threshold = math.sqrt(max(top) * min(top))
    summary = execute("whatif-bandwidth", tmp_path, {"LGRECO_NB_WHATIF": whatif, "LGRECO_NB_PAYOFF_SPEEDUP": threshold})

    nodes = sorted({p["nodes"] for p in doc["points"]})
    assert [e["nodes"] for e in summary["by_nodes"]] == nodes
    for entry in summary["by_nodes"]:
        pts = sorted((p for p in doc["points"] if p["nodes"] == entry["nodes"]), key=lambda p: p["bandwidth_Gbps"])
        bw, s = [p["bandwidth_Gbps"] for p in pts], [p["adaptive_speedup"] for p in pts]
        assert entry["bandwidths_Gbps"] == bw
        assert entry["adaptive_speedup"] == s
        assert entry["uniform_speedup"] == [p["uniform_speedup"] for p in pts]
        for p in pts:  # the contract the notebook relies on: speedup = uncompressed / schedule step time
            assert close(p["adaptive_speedup"], p["uncompressed_step_s"] / p["adaptive_step_s"], 1e-6), p
        status, b_star = entry["payoff_status"], entry["payoff_bandwidth_Gbps"]
        above = [i for i, x in enumerate(s) if x >= threshold]
        if status == "never":
            assert not above and b_star == bw[0]
        elif status == "beyond-range":
            assert above[-1] == len(s) - 1 and b_star is None
        else:
            assert status == "within", status
            i = above[-1]
            assert i < len(s) - 1 and all(x < threshold for x in s[i + 1:])
            assert bw[i] <= b_star <= bw[i + 1], (bw[i], b_star, bw[i + 1])
            # The speedup interpolated linearly in log(bandwidth) between the bracketing points is the threshold at b*.
            t = math.log(b_star / bw[i]) / math.log(bw[i + 1] / bw[i])
            assert close(s[i] + t * (s[i + 1] - s[i]), threshold, 1e-9)
        assert close(entry["max_adaptive_speedup"], max(s))
        if entry["nodes"] == max(nodes) and s == sorted(s, reverse=True):  # decreasing: it must cross in range
            assert status == "within", entry

    # The same study as CSV (`--format csv`) gives the same summary.
    csv_path = tmp_path / "whatif.csv"
    p = lgreco("whatif", "--trace", inputs.trace(lgreco), "--family", "powersgd", "--bandwidth", "1Gbps:400Gbps:8",
               "--nodes", "1,4", "--format", "csv", check=True)
    csv_path.write_text(p.stdout)
    from_csv = execute("whatif-bandwidth", tmp_path / "csv", {"LGRECO_NB_WHATIF": csv_path,
                                                               "LGRECO_NB_PAYOFF_SPEEDUP": threshold})
    for a, b in zip(summary["by_nodes"], from_csv["by_nodes"], strict=True):
        assert a["nodes"] == b["nodes"] and a["payoff_status"] == b["payoff_status"]
        assert all(close(x, y, 1e-9) for x, y in zip(a["adaptive_speedup"], b["adaptive_speedup"], strict=True))
        assert (a["payoff_bandwidth_Gbps"] is None) == (b["payoff_bandwidth_Gbps"] is None)
        if a["payoff_bandwidth_Gbps"] is not None:
            assert close(a["payoff_bandwidth_Gbps"], b["payoff_bandwidth_Gbps"], 1e-9)


def test_layer_tradeoffs_notebook(lgreco, available, inputs, tmp_path):
    require("layer-tradeoffs", available, lgreco)
    tables_path, schedule_path = inputs.plan(lgreco)
    summary = execute("layer-tradeoffs", tmp_path, {"LGRECO_NB_TABLES": tables_path, "LGRECO_NB_SCHEDULE": schedule_path})
    tables, schedule = json.loads(tables_path.read_text()), json.loads(schedule_path.read_text())

    assert summary["unmatched"] == [], summary["unmatched"]
    phase = next(p for p in schedule["phases"] if p["label"] == summary["phase"])
    window = tables["windows"][summary["window"]]
    assert [l["name"] for l in summary["layers"]] == [l["name"] for l in window["layers"]]
    for row, layer in zip(summary["layers"], window["layers"]):
        cand = layer["candidates"][row["chosen_index"]]
        assert cand["method"] == phase["layers"][layer["name"]]["method"], layer["name"]
        assert row["chosen_bytes"] == cand["bytes"] and row["chosen_error"] == cand["error"]
        assert row["uniform_bytes"] == layer["candidates"][layer["default"]]["bytes"]
    # Conservation: bytes by kind add up to the total, which is what the schedule predicts for the phase.
    assert sum(v["layers"] for v in summary["by_kind"].values()) == len(window["layers"])
    assert close(sum(v["chosen_bytes"] for v in summary["by_kind"].values()), summary["total_chosen_bytes"])
    assert close(summary["total_chosen_bytes"], phase["predicted"]["bytes_per_step"], 1e-6)
    assert close(summary["total_uncompressed_bytes"], 4 * sum(l["numel"] for l in window["layers"]))
    # The tables' default candidates are the uniform setting: their bytes add up to the schedule's uniform phase.
    uniform = [p for p in schedule["phases"] if p["label"] == "uniform"
               and p["predicted"].get("source_window") == summary["window"]]
    assert uniform, [(p["label"], p["predicted"].get("source_window")) for p in schedule["phases"]]
    assert close(summary["total_uniform_bytes"], uniform[0]["predicted"]["bytes_per_step"], 1e-6)


def test_network_validation_notebook(lgreco, available, tmp_path, shared_dir):
    require("network-validation", available, lgreco)
    tsv = nccl_tsv(shared_dir)
    preset, fit, fitted = tmp_path / "predict-preset.json", tmp_path / "fit.json", tmp_path / "predict-fit.json"
    lgreco("net", "calibrate", tsv, "--topology", "dgx-a100", "--output", fit, check=True)
    for out, extra in ((preset, []), (fitted, ["--network-fit", fit])):
        p = lgreco("net", "predict", "--topology", "dgx-a100", *extra, "--collective", "allreduce", "--sizes", "32K:16G",
                   "--format", "json", check=True)
        out.write_text(p.stdout)
    summary = execute("network-validation", tmp_path, {"LGRECO_NB_MEASURED": tsv, "LGRECO_NB_PRED_PRESET": preset,
                                                       "LGRECO_NB_PRED_FIT": fitted, "LGRECO_NB_FIT": fit})
    holdout = json.loads(fit.read_text())["holdout"]
    assert summary["holdout_max_abs_error_pct"] == holdout["max_abs_error_pct"]
    assert summary["holdout_points"] == len(summary["sizes_bytes"])  # every size held out once
    assert summary["holdout_max_abs_error_pct"] == max(abs(p["error_pct"]) for k in ("even_to_odd", "odd_to_even")
                                                       for p in holdout[k])

    rows = [l.split("\t") for l in tsv.read_text().splitlines() if l and not l.startswith("#")][1:]
    assert summary["sizes_bytes"] == sorted(int(r[0]) for r in rows)
    meas = {int(r[0]): float(r[1]) * 1e-6 for r in rows}
    assert all(close(summary["measured_time_s"][i], meas[s]) for i, s in enumerate(summary["sizes_bytes"]))
    for name, path in (("preset", preset), ("fit", fitted)):
        pred = {int(r["size_bytes"]): r["time_us"] * 1e-6 for r in json.loads(path.read_text())["rows"]}
        rel = [(pred[s] - meas[s]) / meas[s] for s in summary["sizes_bytes"]]
        assert all(close(a, b) for a, b in zip(summary["relative_error"][name], rel)), name
        assert close(summary["stats"][name]["all"]["mean_abs_rel_error"], sum(map(abs, rel)) / len(rel))
        assert close(summary["stats"][name]["all"]["max_abs_rel_error"], max(map(abs, rel)))
    # A fit calibrated on this very sweep (in-sample) must not be worse than the uncalibrated preset.
    assert summary["stats"]["fit"]["all"]["mean_abs_rel_error"] <= summary["stats"]["preset"]["all"]["mean_abs_rel_error"]


def test_schedule_inspection_notebook(lgreco, available, inputs, tmp_path):
    require("schedule-inspection", available, lgreco)
    _, schedule_path = inputs.plan(lgreco)
    schedule = json.loads(schedule_path.read_text())
    sims = []
    for k in range(len(schedule["phases"])):  # one simulated step per phase, on the trace's compute times
        p = lgreco("simulate", "--trace", inputs.trace(lgreco), "--schedule", schedule_path, "--phase", k,
                   "--topology", "4x8xA100-1x25G", "--format", "json", check=True)
        sims.append(tmp_path / f"simulate-{k}.json")
        sims[-1].write_text(p.stdout)
    summary = execute("schedule-inspection", tmp_path, {"LGRECO_NB_SCHEDULE": schedule_path,
                                                        "LGRECO_NB_SIMULATE": ",".join(map(str, sims))})

    params = len(schedule["phases"][0]["layers"])
    assert summary["parameters"] == params
    assert [(p["label"], p["start_step"], p["end_step"], p["bytes_per_step"]) for p in summary["phases"]] == \
        [(p["label"], p["start_step"], p["end_step"], p["predicted"]["bytes_per_step"]) for p in schedule["phases"]]
    for p in summary["phases"]:
        assert sum(p["methods"].values()) == params
    assert len(summary["simulations"]) == len(sims)
    for k, (g, path) in enumerate(zip(summary["simulations"], sims)):
        sim = json.loads(path.read_text())
        assert g["phase"] == k and g["label"] == schedule["phases"][k]["label"]
        assert g["buckets"] == len(sim["buckets"]) > 0
        assert close(g["step_s"], sim["step_s"]) and close(g["exposed_comm_s"], sim["exposed_comm_s"])
        assert close(g["comm_end_s"], max(b["end_s"] for b in sim["buckets"]))
        assert all(w >= -1e-12 for w in g["wait_s"]), g["wait_s"]  # no bucket starts before it is ready
        # The timeline model (sim/timeline.hpp): step = max(compute end, communication end) + optimizer, so the
        # exposed band drawn from the end of compute ends where the last collective ends (or is empty).
        assert math.isclose(g["exposed_comm_s"], max(0.0, g["comm_end_s"] - g["compute_s"]), rel_tol=1e-9,
                            abs_tol=1e-12)
        assert g["optimizer_s"] >= -1e-12
        # The simulated phase sends the bytes the schedule predicts for it.
        assert close(g["bytes_per_step"], schedule["phases"][k]["predicted"]["bytes_per_step"], 1e-9), k
    # Compression shortens the step: the warm-up (uncompressed) step is the slowest one.
    assert max(g["step_s"] for g in summary["simulations"]) == summary["simulations"][0]["step_s"]
