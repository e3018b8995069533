"""One option set for `lgreco plan` (both forms), checked before any work; usage errors exit 2 and
name the flag; outputs never replace inputs; schedules report parameters in model order."""
import json
import time

import pytest

from test_plan_cli import make_tables, write


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    import subprocess
    from conftest import lgreco_bin

    path = tmp_path_factory.mktemp("opts") / "r18.h5"
    subprocess.run([lgreco_bin(), "trace", "synth", "--model", "resnet18", "--steps", "2", "-o", str(path)], check=True,
                   capture_output=True)
    return path


@pytest.mark.parametrize("args,needle", [
    ([], "--trace FILE"),
    (["--tables", "T", "--trace", "X"], "one of --trace"),
    (["--tables", "T", "--family", "topk"], "--family only applies with --trace"),
    (["--trace", "TRACE", "--bandwidth", "10,25", "-o", "OUT"], "--bandwidth"),
    (["--trace", "TRACE", "--bandwidth", "25Gbpz", "-o", "OUT"], "--bandwidth"),
    (["--trace", "TRACE", "--bandwidth", "25Gbps", "--topology", "2x8xA100-1x25G", "-o", "OUT"], "exclude each other"),
    (["--trace", "TRACE", "--default", "rank=0", "-o", "OUT"], "rank 0"),
    (["--trace", "TRACE", "--default", "rank=100000", "-o", "OUT"], "[0, 65536]"),
    (["--trace", "TRACE", "--threads", "0", "-o", "OUT"], "--threads"),
    (["--trace", "TRACE", "--alpha", "-1", "-o", "OUT"], "--alpha"),
    (["--trace", "TRACE", "--buckets", "0", "-o", "OUT"], "--buckets"),
    (["--trace", "TRACE"], "--output"),
    (["--trace", "TRACE", "-o", ""], "--output"),
    (["--trace", "TRACE", "-o", "TRACE", "--force"], "is the input"),
])
def test_plan_usage_errors_come_first_and_name_the_flag(lgreco, tmp_path, trace, args, needle):
    args = [str(trace) if a == "TRACE" else str(tmp_path / "s.json") if a == "OUT" else a for a in args]
    before = trace.read_bytes()
    t0 = time.monotonic()
    p = lgreco("plan", *args)
    assert p.returncode == 2, p.stderr
    assert needle in p.stderr and p.stderr.startswith("lgreco: error: ") and p.stderr.count("\n") == 1, p.stderr
    assert time.monotonic() - t0 < 5  # refused before any replay (the replay takes longer)
    assert trace.read_bytes() == before
    assert not (tmp_path / "s.json").exists()


def test_plan_tables_refuses_to_replace_its_input(lgreco, tmp_path):
    t = write(tmp_path / "t.json", make_tables())
    before = t.read_text()
    p = lgreco("plan", "--tables", t, "-o", t, "--force")
    assert p.returncode == 2 and "is the input" in p.stderr
    assert t.read_text() == before


def test_infeasible_budget_is_one_rule_in_both_forms(lgreco, tmp_path, trace):
    t = write(tmp_path / "t.json", make_tables())
    p = lgreco("plan", "--tables", t, "--error-budget", "1e-9")
    assert p.returncode == 1 and "--allow-infeasible" in p.stderr
    p = lgreco("plan", "--trace", trace, "--error-budget", "1e-9", "-o", tmp_path / "s.json")
    assert p.returncode == 1 and "--allow-infeasible" in p.stderr
    assert not (tmp_path / "s.json").exists()
    lgreco("plan", "--trace", trace, "--error-budget", "1e-9", "--allow-infeasible", "-o", tmp_path / "s.json", check=True)
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["predicted"]["status"] == "infeasible"


def test_trace_form_takes_the_plan_options_of_the_tables_form(lgreco, tmp_path, trace):
    out = tmp_path / "s.json"
    lgreco("plan", "--trace", trace, "--bandwidth", "25Gbps", "--exclude", "^fc", "--pin", "conv1.weight=none", "-o", out,
           check=True)
    doc = json.loads(out.read_text())
    plan = doc["phases"][-1]["layers"]
    assert plan["conv1.weight"]["method"] == "none"
    assert doc["config"]["plan"]["exclude"] == "^fc" and doc["config"]["plan"]["network"]["model"] == "ring"
    assert doc["predicted"]["step_time_s"] is not None


def test_schedule_show_lists_parameters_in_model_order(lgreco, tmp_path, trace):
    out = tmp_path / "s.json"
    lgreco("plan", "--trace", trace, "-o", out, check=True)
    names = [p["name"] for p in json.loads(out.read_text())["parameters"]]
    shown = lgreco("schedule", "show", out, check=True).stdout
    rows = [line.split()[0] for line in shown.splitlines() if line.split() and line.split()[0] in names]
    assert rows == names
    csv = lgreco("export", out, "--to", "csv", check=True).stdout.splitlines()[1:]
    assert [r.split(",")[3] for r in csv[: len(names)]] == names


def test_whatif_nodes_out_of_range_is_a_usage_error(lgreco, tmp_path):
    t = write(tmp_path / "t.json", make_tables())
    p = lgreco("whatif", "--tables", t, "--nodes", str(2 ** 32 + 1))
    assert p.returncode == 2 and "--nodes" in p.stderr
    p = lgreco("whatif", "--tables", t, "--bandwidth", "10,25")
    assert p.returncode == 2 and "--bandwidth" in p.stderr and "needs a unit" in p.stderr
