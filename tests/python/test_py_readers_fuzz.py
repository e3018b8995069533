"""The Python readers under generated bad input (Hypothesis): schedule files and documents, phases
the online planner appends, trace files and HDF5 tables. Whatever the input, a reader accepts it or
raises its own error class (a ValueError) with one line that names the input; nothing else may
escape (KeyError, TypeError, RecursionError, UnicodeDecodeError, h5py's OSError ...), and what a
reader accepted must answer every query without raising.

The examples are derandomized (the same on every run) so that the test cannot flake; set
LGRECO_HYPOTHESIS_EXAMPLES=N for a longer local campaign.
"""
import copy
import json
import os
import pathlib

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lgreco import native
from lgreco.methods import ScheduleError
from lgreco.schedule import Schedule, make_schedule
from lgreco.tables import TablesError, read_tables_h5, write_tables_h5
from lgreco.trace import TraceError, read_trace

from test_trace_bad_input import CASES as TRACE_CASES
from test_trace_h5py import random_grads, write_trace

EXAMPLES = int(os.environ.get("LGRECO_HYPOTHESIS_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

needs_native = pytest.mark.skipif(not native.available(), reason="the native module is not built for this Python")

SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-2**70, max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
           | st.sampled_from(["", "none", "topk", "powersgd", "qsgd", "allreduce", "allgather", "lgreco-schedule",
                              "pairs", "bitmap", "\n", "x" * 40]))
KEYS = st.sampled_from(["method", "params", "rank", "ratio", "bits", "start_step", "end_step", "layers", "wire",
                        "bytes", "collective", "rounds", "allgather_bytes", "stages", "plan", "from_step",
                        "to_step", "k", "encoding", "view", "n", "m", "compressed", "predicted", "label",
                        "bytes_per_step", "schema_version", "kind", "phases", "parameters", "name", "shape",
                        "seed", "raw", "code_bits"]) | st.text(max_size=6)
JSON = st.recursive(SCALARS, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(KEYS, kids, max_size=4),
                    max_leaves=12)

SHAPES = {"fc.weight": [16, 8], "fc.bias": [16], "head.weight": [4, 6, 2]}


def one_line_naming(e: BaseException, name: str) -> None:
    msg = str(e)
    assert "\n" not in msg, repr(msg)
    assert name in msg, (name, msg)


def valid_doc() -> dict:
    """A format-2 schedule with a DGC warm-up (wire stages), PowerSGD, QSGD and an open last phase."""
    a = {"fc.weight": {"method": "powersgd", "params": {"rank": 2}}, "fc.bias": {"method": "none"},
         "head.weight": {"method": "topk", "params": {"density": 0.1, "warmup_steps": 4, "selection": "dgc"}}}
    b = {"fc.weight": {"method": "qsgd", "params": {"bits": 4}}, "fc.bias": {"method": "none"},
         "head.weight": {"method": "topk", "params": {"density": 0.05}}}
    return make_schedule([(0, 10, "uniform", a), (10, None, "plan-0", b)], SHAPES, world_size=4)


def paths(doc, prefix=()):
    """Every path into a JSON document (the root included)."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


def mutate(doc, path, how, value):
    """doc with the value at `path` replaced by `value` (how 0), removed (1) or given an extra key (2)."""
    doc = copy.deepcopy(doc)
    if not path:
        return value if how == 0 else doc
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    last = path[-1]
    if how == 0:
        parent[last] = value
    elif how == 1:
        del parent[last]
    elif isinstance(parent[last], dict):
        parent[last]["zz_unknown"] = value
    else:
        parent[last] = [parent[last], value]
    return doc


def draw_mutation(data, base):
    """`base` with one generated change (mutate) at a generated path."""
    path = data.draw(st.sampled_from(list(paths(base))), label="path")
    return mutate(base, path, data.draw(st.integers(0, 2), label="how"), data.draw(JSON, label="value"))


def accepted_or_refused(read, name: str) -> None:
    """read() gives a schedule that answers every query, or a ScheduleError of one line naming `name`."""
    try:
        s = read()
    except ScheduleError as e:
        one_line_naming(e, name)
        return
    exercise(s)


def exercise(s: Schedule) -> None:
    """Every query a hook makes of an accepted schedule."""
    for step in (0, 1, 3, 9, 10, 11, 50, 10**6):
        ph = s.phase_at(step)
        for name in (ph.layers if ph is not None else ()):
            s.method_at(step, name)
            if ph.wire is not None:
                plan = ph.wire_at(name, step)
                assert isinstance(plan["bytes"], int) and plan["bytes"] >= 0
        if ph is not None and ph.wire is not None:
            ph.bytes_per_step()
    s.prediction_mismatches()
    try:
        s.check_parameters({n: tuple(sh) for n, sh in SHAPES.items()})
    except ScheduleError:
        pass


def test_wire_plan_checks_cover_the_schema():
    """The reader checks every key of a wire plan that schemas/schedule.schema.json defines, and no
    other (the schema is not shipped with an installed package, so the reader must not rely on it)."""
    from lgreco.schedule import _WIRE_FIELDS, _WIRE_REQUIRED, SCHEMA_PATH

    wire = json.loads(SCHEMA_PATH.read_text())["$defs"]["wire"]  # wire_plan: the same without stages
    assert set(_WIRE_FIELDS) == set(wire["properties"])
    assert set(_WIRE_REQUIRED) == set(wire["required"])


@needs_native
@FUZZ
@given(data=st.data())
def test_mutated_schedule_documents(data):
    doc = draw_mutation(data, valid_doc())
    accepted_or_refused(lambda: Schedule(doc, "sched.json"), "sched.json")


@needs_native
@FUZZ
@given(data=st.data())
def test_mutated_schedule_files(tmp_path_factory, data):
    """Schedule.load (with the repository's JSON Schema) on the same mutations, as files."""
    f = tmp_path_factory.mktemp("s") / "sched.json"
    f.write_text(json.dumps(draw_mutation(data, valid_doc())))
    accepted_or_refused(lambda: Schedule.load(f), str(f))


@FUZZ
@given(doc=JSON)
def test_arbitrary_json_as_a_schedule(doc):
    accepted_or_refused(lambda: Schedule(doc, "sched.json"), "sched.json")


@FUZZ
@given(raw=st.binary(max_size=64) | st.text(max_size=64).map(str.encode))
def test_arbitrary_bytes_as_a_schedule_file(tmp_path_factory, raw):
    f = tmp_path_factory.mktemp("s") / "sched.json"
    f.write_bytes(raw)
    with pytest.raises(ScheduleError) as e:
        Schedule.load(f)
    one_line_naming(e.value, str(f))


@pytest.mark.parametrize("text", [
    "[" * 100000 + "]" * 100000,                      # deeper than the decoder's recursion limit
    '{"a":' * 50000 + "1" + "}" * 50000,
    '{"schema_version": ' + "9" * 5000 + "}",          # more digits than int() converts
    '{"phases": [{"start_step": 1e999}]}',
    "\ufeff{}",                                         # byte-order mark
], ids=["deep-array", "deep-object", "huge-integer", "overflowing-float", "bom"])
def test_hostile_schedule_files(tmp_path, text):
    f = tmp_path / "sched.json"
    f.write_text(text)
    with pytest.raises(ScheduleError) as e:
        Schedule.load(f)
    one_line_naming(e.value, str(f))


def test_unreadable_schedule_files(tmp_path):
    for f, why in ((tmp_path / "missing.json", "no such file"), (tmp_path, "is a directory")):
        with pytest.raises(ScheduleError) as e:
            Schedule.load(f)
        one_line_naming(e.value, str(f))
        assert why in str(e.value)
    f = tmp_path / "latin1.json"
    f.write_bytes(b'{"label": "caf\xe9"}')
    with pytest.raises(ScheduleError) as e:
        Schedule.load(f)
    one_line_naming(e.value, str(f))
    assert "UTF-8" in str(e.value)


@needs_native
@FUZZ
@given(data=st.data())
def test_appended_phases(data):
    """What OnlineHook does with the phase rank 0's planner broadcasts: Schedule.with_phase."""
    s = Schedule(valid_doc(), "online")
    base = copy.deepcopy(valid_doc()["phases"][1])
    base["start_step"], base["end_step"], base["label"] = 20, None, "plan-1"
    phase = draw_mutation(data, base)
    accepted_or_refused(lambda: s.with_phase(phase), "online")


# ---------------------------------------------------------------------------------------- traces

def trace_file(tmp_path, dtype="float32"):
    path = tmp_path / "t.h5"
    write_trace(path, dtype, random_grads())
    return path


@pytest.mark.parametrize("breaker,message", TRACE_CASES, ids=[c[0].__name__ for c in TRACE_CASES])
def test_read_trace_refuses_what_the_cli_refuses(lgreco, tmp_path, breaker, message):
    path = trace_file(tmp_path)
    with h5py.File(path, "a") as f:
        breaker(f)
    with pytest.raises(TraceError) as e:
        read_trace(path)
    one_line_naming(e.value, str(path))
    if native.available():  # the same C++ checks as `lgreco trace validate`, the same words
        assert message in str(e.value)


@FUZZ
@given(data=st.data())
def test_read_trace_on_truncated_files(tmp_path_factory, data):
    """A trace cut anywhere (a copy or a write that stopped): TraceError naming the file. (Bytes
    overwritten inside HDF5's metadata can crash libhdf5 1.10 itself, in h5py as in the C++ reader;
    no reader inside the process can catch that, so it is not generated here: the lgreco tool's
    handling of it is tested in test_trace_bad_input.py.)"""
    tmp = tmp_path_factory.mktemp("t")
    path = trace_file(tmp, data.draw(st.sampled_from(["float32", "float16", "bfloat16"]), label="dtype"))
    refused_when_truncated(data, path, read_trace, TraceError)


def refused_when_truncated(data, path, read, error) -> None:
    """The file at `path` cut at a generated length: read(path) raises `error` of one line naming it."""
    raw = path.read_bytes()
    path.write_bytes(raw[: data.draw(st.integers(0, len(raw) - 1), label="length")])
    with pytest.raises(error) as e:
        read(path)
    one_line_naming(e.value, str(path))


def test_read_trace_unreadable_paths(tmp_path):
    noise = tmp_path / "noise.h5"
    noise.write_bytes(np.random.default_rng(1).bytes(5000))
    for f in (tmp_path / "missing.h5", tmp_path, noise):
        with pytest.raises(TraceError) as e:
            read_trace(f)
        one_line_naming(e.value, str(f))


# ---------------------------------------------------------------------------------------- tables

def tables_doc():
    cand = lambda m, p, err, b, c="allreduce": {"method": m, "params": p, "error": err, "bytes": b, "collective": c}
    layer = lambda name, shape, order: {
        "name": name, "shape": shape, "numel": int(np.prod(shape)), "kind": "weight", "bucket": 0,
        "backward_order": order, "default": 0, "compute_time_s": 1e-3,
        "candidates": [cand("none", {}, 0.0, 4.0 * np.prod(shape)),
                       cand("powersgd", {"rank": 1}, 0.5, 96.0)]}
    return {"schema_version": 1, "kind": "lgreco-tables", "model": "m", "world_size": 4, "error_mode": "power",
            "acc_steps": 10, "provenance": {},
            "windows": [{"start_step": 0, "end_step": 10,
                         "layers": [layer("a", [16, 8], 1), layer("b", [8, 4], 0)]}]}


@FUZZ
@given(data=st.data())
def test_read_tables_h5_on_truncated_files(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("tb") / "t.h5"
    write_tables_h5(tables_doc(), path)
    refused_when_truncated(data, path, read_tables_h5, TablesError)


def test_read_tables_h5_unreadable_paths(tmp_path):
    for f in (tmp_path / "missing.h5", tmp_path):
        with pytest.raises(TablesError) as e:
            read_tables_h5(f)
        one_line_naming(e.value, str(f))
