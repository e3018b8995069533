"""`lgreco schedule validate|show|diff` and `lgreco export`."""
import csv
import io
import json

from test_plan_cli import make_tables, write


def planned(lgreco, tmp_path, *extra):
    t = write(tmp_path / "t.json", make_tables())
    out = tmp_path / ("s%d.json" % len(list(tmp_path.glob("s*.json"))))
    lgreco("plan", "--tables", t, "-o", out, *extra, check=True)
    return out


def test_validate_accepts_planner_output_and_rejects_broken(lgreco, tmp_path):
    s = planned(lgreco, tmp_path)
    p = lgreco("schedule", "validate", s, check=True)
    assert "valid (4 phases, 6 parameters)" in p.stdout
    doc = json.loads(s.read_text())
    del doc["phases"][2]["layers"]["fc2.weight"]
    del doc["phases"][2]["wire"]["fc2.weight"]
    doc["phases"][3]["start_step"] = 250  # overlaps plan-0 [200, 300)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    p = lgreco("schedule", "validate", bad)
    assert p.returncode == 1
    assert "fc2.weight" in p.stdout and "missing" in p.stdout
    assert "before the previous phase ends" in p.stdout
    doc = json.loads(s.read_text())
    doc["phases"][1]["layers"]["fc2.weight"] = {"method": "powersgd", "params": {"rnak": 2}}
    bad.write_text(json.dumps(doc))
    p = lgreco("schedule", "validate", bad)
    assert p.returncode == 1 and "rnak" in p.stderr


def test_show_and_diff(lgreco, tmp_path):
    a = planned(lgreco, tmp_path)
    b = planned(lgreco, tmp_path, "--alpha", "2")
    p = lgreco("schedule", "show", a, check=True)
    assert "plan-1" in p.stdout and "fc1.weight" in p.stdout
    p = lgreco("schedule", "diff", a, "--phases", "warmup,uniform", "--format", "json", check=True)
    doc = json.loads(p.stdout)
    changed = {c["parameter"] for c in doc["comparisons"][0]["changes"]}
    assert changed == {"fc1.weight", "fc2.weight", "fc3.weight"}
    p = lgreco("schedule", "diff", a, b, "--format", "json", check=True)
    doc = json.loads(p.stdout)
    sa, sb = json.loads(a.read_text()), json.loads(b.read_text())
    for comp in doc["comparisons"]:
        label = comp["phases"]
        pa = next(x for x in sa["phases"] if x["label"] == label)
        pb = next(x for x in sb["phases"] if x["label"] == label)
        expected = {n for n in pa["layers"] if pa["layers"][n] != pb["layers"][n]}
        assert {c["parameter"] for c in comp["changes"]} == expected


def test_export_csv_torch_hook_and_cgx(lgreco, tmp_path):
    s = planned(lgreco, tmp_path)
    p = lgreco("export", s, "--to", "csv", check=True)
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert len(rows) == 4 * 6
    assert {r["label"] for r in rows} == {"warmup", "uniform", "plan-0", "plan-1"}
    out = tmp_path / "hook.json"
    lgreco("export", s, "--to", "torch-hook", "-o", out, check=True)
    hook = json.loads(out.read_text())
    assert hook["phases"][1]["layers"]["fc2.weight"]["params"]["power_iterations"] == 1  # defaults explicit
    p = lgreco("export", s, "--to", "cgx")
    assert p.returncode == 1 and "fc" in p.stderr and "CGX runs only maxmin and none" in p.stderr
    # A maxmin schedule exports bits per layer.
    doc = json.loads(s.read_text())
    for ph in doc["phases"]:
        ph.pop("wire")  # edited by hand: the registry gives the new settings' wire plans
        for name, setting in ph["layers"].items():
            if setting["method"] != "none":
                ph["layers"][name] = {"method": "maxmin", "params": {"bits": 2}}
    mm = tmp_path / "mm.json"
    mm.write_text(json.dumps(doc))
    p = lgreco("export", mm, "--to", "cgx", check=True)
    cgx = json.loads(p.stdout)
    layer = next(l for l in cgx["phases"][2]["layers"] if l["name"] == "fc1.weight")
    assert layer["bits"] == 2 and layer["numel"] == 512 * 784 and layer["bucket_size"] == 1024
