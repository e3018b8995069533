"""Candidate tables in HDF5: written by Python (h5py, python/lgreco/tables.py) or by `plan --trace
--tables-out X.h5`, read by `plan --tables` and `whatif --tables`; the same plans as the JSON form;
bad files fail cleanly."""
import json
import math
import os

from e2e_traces import tiny_model_trace
from lgreco.tables import read_tables_h5, write_tables_h5
from test_plan_cli import make_tables


def schedule_without_provenance(path):
    doc = json.loads(path.read_text())
    doc.pop("provenance")
    return doc


def test_python_written_h5_plans_like_json(lgreco, tmp_path):
    doc = make_tables(windows=3, seed=4)
    doc["windows"][1]["layers"][0]["candidates"][2]["kernel_time_s"] = 3e-5
    (tmp_path / "t.json").write_text(json.dumps(doc))
    write_tables_h5(doc, tmp_path / "t.h5")
    assert read_tables_h5(tmp_path / "t.h5") == doc
    assert oct(os.stat(tmp_path / "t.h5").st_mode & 0o777) == oct(os.stat(tmp_path / "t.json").st_mode & 0o777)
    for engine in ("reference", "time"):
        outs = []
        for name in ("t.json", "t.h5"):
            out = tmp_path / f"s-{engine}-{name}.json"
            lgreco("plan", "--tables", tmp_path / name, "--engine", engine, "--bandwidth", "10Gbps", "-o", out, check=True)
            outs.append(schedule_without_provenance(out))
        assert outs[0] == outs[1]


def test_tables_out_h5_round_trip(lgreco, tmp_path):
    trace = tmp_path / "tiny.h5"
    tiny_model_trace(trace, bursts=2, burst_length=12)
    for name in ("tables.h5", "tables.json"):
        lgreco("plan", "--trace", trace, "--family", "all", "--period", "12", "-o", tmp_path / f"s-{name}.json",
               "--tables-out", tmp_path / name, check=True)
    from_h5 = read_tables_h5(tmp_path / "tables.h5")
    from_json = json.loads((tmp_path / "tables.json").read_text())
    # Same document up to provenance (time stamps, argv) and the parameters the C++ side normalises.
    for doc in (from_h5, from_json):
        doc.pop("provenance")
    assert len(from_h5["windows"]) == len(from_json["windows"]) == 2
    for wa, wb in zip(from_h5["windows"], from_json["windows"]):
        for la, lb in zip(wa["layers"], wb["layers"]):
            assert la["name"] == lb["name"] and la["default"] == lb["default"]
            assert [(c["method"], c["params"], c["bytes"], c["collective"]) for c in la["candidates"]] == \
                [(c["method"], c["params"], c["bytes"], c["collective"]) for c in lb["candidates"]]
            for ca, cb in zip(la["candidates"], lb["candidates"]):
                assert math.isclose(ca["error"], cb["error"], rel_tol=1e-12, abs_tol=1e-300)
    # Planning from the HDF5 tables gives the schedule the closed loop wrote.
    lgreco("plan", "--tables", tmp_path / "tables.h5", "-o", tmp_path / "again.json", check=True)
    again = schedule_without_provenance(tmp_path / "again.json")
    loop = schedule_without_provenance(tmp_path / "s-tables.h5.json")
    assert [p["layers"] for p in again["phases"]] == [p["layers"] for p in loop["phases"]]
    p = lgreco("whatif", "--tables", tmp_path / "tables.h5", "--bandwidth", "10Gbps,100Gbps", "--nodes", "2",
               "--format", "json")
    assert p.returncode == 0, p.stderr
    assert len(json.loads(p.stdout)["points"]) == 2


def test_bad_h5_tables_fail_cleanly(lgreco, tmp_path):
    doc = make_tables(windows=2)
    doc["windows"][1]["layers"][2]["candidates"][3]["error"] = math.nan
    write_tables_h5(doc, tmp_path / "nan.h5")
    before = set(os.listdir(tmp_path))
    p = lgreco("plan", "--tables", tmp_path / "nan.h5", "-o", tmp_path / "s.json")
    assert p.returncode == 1
    name = doc["windows"][1]["layers"][2]["name"]
    assert "nan.h5" in p.stderr and "window 1" in p.stderr and f"'{name}'" in p.stderr and "candidate 3" in p.stderr
    assert "NaN" in p.stderr
    good = make_tables(windows=2)
    write_tables_h5(good, tmp_path / "cut.h5")
    with open(tmp_path / "cut.h5", "r+b") as f:
        f.truncate(os.path.getsize(tmp_path / "cut.h5") // 3)
    p = lgreco("plan", "--tables", tmp_path / "cut.h5", "-o", tmp_path / "s.json")
    assert p.returncode == 1 and "cut.h5" in p.stderr and "truncated or corrupt" in p.stderr
    assert set(os.listdir(tmp_path)) == before | {"cut.h5"}  # no schedule, no temporaries


def test_tables_convert_and_info(lgreco, tmp_path):
    doc = make_tables(windows=2, seed=9)
    (tmp_path / "t.json").write_text(json.dumps(doc))
    lgreco("tables", "convert", tmp_path / "t.json", "-o", tmp_path / "t.h5", check=True)
    got = read_tables_h5(tmp_path / "t.h5")
    # The C++ side writes parameters normalised (every default spelled out): compare the rest, and
    # that the given parameters are kept.
    for wa, wb in zip(got["windows"], doc["windows"]):
        for la, lb in zip(wa["layers"], wb["layers"]):
            for ca, cb in zip(la["candidates"], lb["candidates"]):
                assert cb["params"].items() <= ca.pop("params").items()
                cb.pop("params")
    assert got == doc
    doc = make_tables(windows=2, seed=9)
    lgreco("tables", "convert", tmp_path / "t.h5", "-o", tmp_path / "back.json", check=True)
    back = json.loads((tmp_path / "back.json").read_text())
    assert back["windows"][1]["layers"][4]["candidates"][3]["error"] == doc["windows"][1]["layers"][4]["candidates"][3]["error"]
    assert [len(layer["candidates"]) for layer in back["windows"][0]["layers"]] == \
        [len(layer["candidates"]) for layer in doc["windows"][0]["layers"]]
    p = lgreco("tables", "info", tmp_path / "t.h5", "--format", "json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    n = sum(len(layer["candidates"]) for w in doc["windows"] for layer in w["layers"])
    assert info["form"] == "hdf5" and info["candidates"] == n and info["layers"] == len(doc["windows"][0]["layers"])
    assert info["candidates_per_method"] == {"none": 6, "powersgd": n - 6}
    assert lgreco("tables", "info", tmp_path / "t.json").stdout.startswith(f"{tmp_path / 't.json'}: json tables")
    # The output exists: refused without --force, the file untouched.
    before = (tmp_path / "back.json").read_bytes()
    p = lgreco("tables", "convert", tmp_path / "t.h5", "-o", tmp_path / "back.json")
    assert p.returncode == 1 and "back.json" in p.stderr and (tmp_path / "back.json").read_bytes() == before
    # Bad input: nothing written.
    (tmp_path / "bad.json").write_text('{"schema_version": 1, "kind": "lgreco-tables"')
    p = lgreco("tables", "convert", tmp_path / "bad.json", "-o", tmp_path / "bad.h5")
    assert p.returncode == 1 and "bad.json" in p.stderr and not (tmp_path / "bad.h5").exists()
    assert sorted(os.listdir(tmp_path)) == ["back.json", "bad.json", "t.h5", "t.json"]
