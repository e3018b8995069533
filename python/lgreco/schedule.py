"""Schedule files (JSON, kind "lgreco-schedule"): loading, validation and phase lookup.

A schedule has phases over training steps; each phase maps every parameter name of the model to a
method. Steps outside every phase use "none". Format 2 (what `lgreco plan` writes) also lists every
parameter's shape and, per phase, every parameter's wire plan (kernels/wire.hpp: bytes, k,
encoding, matrix view, code width, and the stages of a DGC warm-up): what the DDP hook sends and
checks its bytes against, without the native module. Format 1 (no wire plans) needs the native
module to price a step. Validation is structural (this module) and, when the repository's
schemas/schedule.schema.json is present, also against that JSON Schema.
"""
from __future__ import annotations

import bisect
import dataclasses
import json
import math
import pathlib
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from . import native
from .methods import Method, ScheduleError, parse_method

NONE = Method("none", {})
_TOP_KEYS = {"schema_version", "kind", "model", "world_size", "family", "engine", "seed", "phases",
             "buckets", "predicted", "config", "provenance", "parameters"}
_PHASE_KEYS = {"start_step", "end_step", "label", "layers", "predicted", "wire"}
SCHEMA_PATH = pathlib.Path(__file__).resolve().parents[2] / "schemas" / "schedule.schema.json"


@dataclass(frozen=True)
class Phase:
    """Steps [start_step, end_step) (end_step None = open) and the method of every parameter; format
    2 also carries every parameter's wire plan."""

    start_step: int
    end_step: Optional[int]
    label: str
    layers: Mapping[str, Method]
    predicted_bytes_per_step: Optional[int]
    wire: Optional[Mapping[str, Mapping[str, Any]]] = None

    def wire_at(self, name: str, step: int) -> Mapping[str, Any]:
        """The wire plan of parameter `name` at `step` (a DGC warm-up stage, else the steady plan)."""
        w = self.wire[name]
        for st in w.get("stages", ()):
            if st["from_step"] <= step and (st["to_step"] is None or step < st["to_step"]):
                return st["plan"]
        return w

    def bytes_per_step(self) -> int:
        """Σ over parameters of the steady-state wire bytes (the phase's prediction; needs its wire plans)."""
        return sum(int(w["bytes"]) for w in self.wire.values())


class Schedule:
    """A validated schedule. `phase_at(step)` returns the Phase in force (or None)."""

    def __init__(self, doc: Mapping[str, Any], source: str = "schedule"):
        self.source = source
        self.doc = doc
        self.phases = _parse_phases(doc, source)
        self.seed = doc.get("seed", 0)
        self.world_size = doc.get("world_size")
        self.parameters = _parse_parameters(doc["parameters"], source) if "parameters" in doc else None
        self._starts = [p.start_step for p in self.phases]

    @classmethod
    def load(cls, path: str | pathlib.Path) -> "Schedule":
        """Reads and validates a schedule file (JSON Schema too when the schema file exists)."""
        path = pathlib.Path(path)
        doc = read_json_file(path, f"schedule {path}", ScheduleError)
        validate_with_schema(doc, str(path))
        return cls(doc, str(path))

    def with_phase(self, phase: Mapping[str, Any]) -> "Schedule":
        """A new schedule: this one with its last phase, which must be open, ended at the new phase's
        start_step (> its own start), and the new phase (a phase document, e.g. from lgreco's planner)
        appended. Only the new phase is parsed."""
        last = self.phases[-1]
        start = phase.get("start_step") if isinstance(phase, dict) else None
        if last.end_step is not None:
            raise ScheduleError(f"{self.source}: cannot append a phase: the last phase '{last.label}' is closed "
                                f"(ends at step {last.end_step})")
        if not isinstance(start, int) or isinstance(start, bool) or start <= last.start_step:
            raise ScheduleError(f"{self.source}: appended phase's start_step = {start!r}, expected an integer > "
                                f"{last.start_step} (the start of the open phase '{last.label}')")
        closed = dataclasses.replace(last, end_step=start)
        version = int(self.doc.get("schema_version", 1))
        new = _parse_phase(phase, len(self.phases), len(self.phases) + 1, closed, version, self.source)
        doc = dict(self.doc)
        raw = [dict(p) for p in doc["phases"]]
        raw[-1]["end_step"] = start
        doc["phases"] = raw + [phase]
        out = Schedule.__new__(Schedule)
        out.source, out.doc, out.seed, out.world_size, out.parameters = (self.source, doc, self.seed, self.world_size,
                                                                         self.parameters)
        out.phases = self.phases[:-1] + [closed, new]
        out._starts = [p.start_step for p in out.phases]
        return out

    def phase_at(self, step: int) -> Optional[Phase]:
        i = bisect.bisect_right(self._starts, step) - 1
        if i < 0:
            return None
        ph = self.phases[i]
        return ph if ph.end_step is None or step < ph.end_step else None

    def method_at(self, step: int, name: str) -> Method:
        ph = self.phase_at(step)
        return NONE if ph is None else ph.layers[name]

    def wire_at(self, step: int, name: str, shape: Sequence[int]) -> Mapping[str, Any]:
        """The wire plan of parameter `name` (of this shape) at `step`: the schedule's own (format 2),
        else the registry's through the native module (format 1, or a step in no phase)."""
        ph = self.phase_at(step)
        if ph is not None and ph.wire is not None:
            return ph.wire_at(name, step)
        m = NONE if ph is None else ph.layers[name]
        if m.name == "none":
            n = math.prod(shape)
            return {"bytes": 4 * n, "collective": "allreduce", "rounds": [4 * n, 0], "allgather_bytes": 0, "raw": True}
        return native.wire_plan(m.to_json(), shape, step)

    def check_parameters(self, shapes: Mapping[str, Sequence[int]]) -> None:
        """Every model parameter appears in every phase with the schedule's shape (format 2), and no
        phase names an unknown one."""
        names = list(shapes)
        known = set(names)
        if self.parameters is not None:
            for name, shape in self.parameters:
                if name in known and tuple(shape) != tuple(shapes[name]):
                    raise ScheduleError(f"{self.source}: parameters['{name}'] has shape {list(shape)}, the model's is "
                                        f"{list(shapes[name])} (a schedule for another model?)")
        for i, ph in enumerate(self.phases):
            missing = [n for n in names if n not in ph.layers]
            extra = sorted(set(ph.layers) - known)
            if missing:
                raise ScheduleError(f"{self.source}: phases[{i}].layers lacks parameter(s) {missing[:5]}"
                                    f"{' ...' if len(missing) > 5 else ''} (every parameter must appear)")
            if extra:
                raise ScheduleError(f"{self.source}: phases[{i}].layers names unknown parameter(s) "
                                    f"{extra[:5]}; the model has {len(names)} parameters")

    def prediction_mismatches(self) -> List[Tuple[int, int, int]]:
        """(phase index, predicted, Σ wire bytes) for every phase of a format-2 schedule whose
        predicted.bytes_per_step differs from the sum of its wire plans."""
        out = []
        for i, ph in enumerate(self.phases):
            if ph.wire is not None and ph.predicted_bytes_per_step is not None:
                got = ph.bytes_per_step()
                if got != ph.predicted_bytes_per_step:
                    out.append((i, ph.predicted_bytes_per_step, got))
        return out


def validate_with_schema(doc: Any, source: str) -> bool:
    """Validates against schemas/schedule.schema.json when present; returns whether it ran."""
    if not SCHEMA_PATH.exists():
        return False
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc) if hasattr(
        jsonschema, "Draft202012Validator") else jsonschema.Draft7Validator(schema).iter_errors(doc),
        key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = "/".join(map(str, e.path)) or "(root)"
        raise ScheduleError(f"{source}: field '{where}': {e.message} (schema {SCHEMA_PATH.name})")
    return True


def read_json_file(path: pathlib.Path, what: str, error: type) -> Any:
    """The JSON document in `path`; any problem (unreadable, not UTF-8, malformed, nested too deep,
    an integer too long to convert) is `error` with one line starting with `what`."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{what}: no such file") from None
    except IsADirectoryError:
        raise error(f"{what}: is a directory, expected a JSON file") from None
    except OSError as e:
        raise error(f"{what}: cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{what}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise error(f"{what}: malformed JSON: nested too deeply") from None
    except ValueError as e:  # json.JSONDecodeError, or an integer of more digits than int() converts
        raise error(f"{what}: malformed JSON: {' '.join(str(e).split())}") from None


# What a wire plan (kernels/wire.hpp; schemas/schedule.schema.json, $defs/wire) may hold, and
# the check of each value; test_py_readers_fuzz.py holds the keys to the schema's $defs/wire.
_COUNT = (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "an integer >= 0")
_WIRE_FIELDS: Dict[str, Tuple[Any, str]] = {
    "bytes": _COUNT,
    "collective": (lambda v: v in ("allreduce", "allgather"), "'allreduce' or 'allgather'"),
    "rounds": (lambda v: isinstance(v, list) and len(v) == 2 and all(_COUNT[0](x) for x in v),
               "two integers >= 0"),
    "allgather_bytes": _COUNT,
    "k": _COUNT,
    "encoding": (lambda v: v in ("pairs", "bitmap", "delta"), "'pairs', 'bitmap' or 'delta'"),
    "code_bits": (lambda v: _COUNT[0](v) and v >= 1, "an integer >= 1"),
    "raw": (lambda v: v is True, "true"),
    "view": (lambda v: isinstance(v, dict) and set(v) == {"n", "m", "rank", "compressed"}
             and all(isinstance(v[k], int) and not isinstance(v[k], bool) for k in ("n", "m", "rank"))
             and isinstance(v["compressed"], bool), "an object {n, m, rank, compressed}"),
    "stages": (lambda v: isinstance(v, list), "an array"),
}
_WIRE_REQUIRED = ("bytes", "collective", "rounds", "allgather_bytes")
_STAGE_KEYS = {"from_step", "to_step", "plan"}


def _check_wire(plan: Any, where: str, stages: bool) -> None:
    """A wire plan as the DDP hook reads it; `stages` (DGC warm-up) only at the top level."""
    if not isinstance(plan, dict):
        raise ScheduleError(f"{where}: expected a wire plan object, got {_short(plan)}")
    for key in _WIRE_REQUIRED:
        if key not in plan:
            raise ScheduleError(f"{where}: wire plan lacks '{key}'")
    for key, v in plan.items():
        check = _WIRE_FIELDS.get(key)
        if check is None or (key == "stages" and not stages):
            raise ScheduleError(f"{where}: unknown key {key!r} in a wire plan")
        if not check[0](v):
            raise ScheduleError(f"{where}: '{key}' = {_short(v)}, expected {check[1]}")
    for i, stage in enumerate(plan.get("stages", ())):
        ws = f"{where}.stages[{i}]"
        if not isinstance(stage, dict) or set(stage) != _STAGE_KEYS:
            raise ScheduleError(f"{ws}: expected an object {{from_step, to_step, plan}}, got {_short(stage)}")
        lo = _int(where, f"stages[{i}].from_step", stage["from_step"])
        if stage["to_step"] is not None and _int(where, f"stages[{i}].to_step", stage["to_step"]) <= lo:
            raise ScheduleError(f"{ws}: to_step {stage['to_step']} is not after from_step {lo}")
        _check_wire(stage["plan"], f"{ws}.plan", stages=False)


def _short(v: Any) -> str:
    """A value for a one-line message: repr, newlines escaped, long ones cut."""
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."


def _parse_parameters(raw: Any, source: str) -> List[Tuple[str, Tuple[int, ...]]]:
    if not isinstance(raw, list):
        raise ScheduleError(f"{source}: field 'parameters' = {_short(raw)}, expected an array of {{name, shape}}")
    out = []
    for i, p in enumerate(raw):
        if not isinstance(p, dict) or set(p) != {"name", "shape"} or not isinstance(p["name"], str) \
                or not isinstance(p["shape"], list):
            raise ScheduleError(f"{source}: field 'parameters[{i}]' = {_short(p)}, expected {{name: string, shape: array}}")
        out.append((p["name"], tuple(_int(source, f"parameters[{i}].shape[{k}]", d) for k, d in enumerate(p["shape"]))))
    return out


def _int(source: str, where: str, v: Any, lo: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ScheduleError(f"{source}: field '{where}' = {_short(v)}, expected an integer >= {lo}")
    return v


def _parse_phases(doc: Mapping[str, Any], source: str) -> List[Phase]:
    if not isinstance(doc, dict):
        raise ScheduleError(f"{source}: expected a JSON object at the root")
    unknown = set(doc) - _TOP_KEYS
    if unknown:
        raise ScheduleError(f"{source}: unknown key(s) {sorted(unknown)}")
    version = doc.get("schema_version")
    if version not in (1, 2):
        raise ScheduleError(f"{source}: field 'schema_version' = {version!r}, expected 1 or 2")
    if version == 2 and not isinstance(doc.get("parameters"), list):
        raise ScheduleError(f"{source}: format 2 needs 'parameters' (every parameter's name and shape)")
    if doc.get("kind") != "lgreco-schedule":
        raise ScheduleError(f"{source}: field 'kind' = {doc.get('kind')!r}, expected 'lgreco-schedule'")
    if "seed" in doc:
        _int(source, "seed", doc["seed"])
    raw = doc.get("phases")
    if not isinstance(raw, list) or not raw:
        raise ScheduleError(f"{source}: field 'phases' must be a non-empty array")
    phases: List[Phase] = []
    for i, ph in enumerate(raw):
        phases.append(_parse_phase(ph, i, len(raw), phases[-1] if phases else None, version, source))
    return phases


def _parse_phase(ph: Any, i: int, count: int, prev: Optional[Phase], version: int, source: str) -> Phase:
    """Phase i of `count`, following `prev` (None for the first)."""
    w = f"phases[{i}]"
    if not isinstance(ph, dict):
        raise ScheduleError(f"{source}: field '{w}' must be an object")
    unknown = set(ph) - _PHASE_KEYS
    if unknown:
        raise ScheduleError(f"{source}: {w}: unknown key(s) {sorted(unknown)}")
    start = _int(source, f"{w}.start_step", ph.get("start_step"))
    end = ph.get("end_step")
    if end is not None:
        _int(source, f"{w}.end_step", end)
        if end <= start:
            raise ScheduleError(f"{source}: field '{w}.end_step' = {end}, expected > start_step {start}")
    elif i != count - 1:
        raise ScheduleError(f"{source}: field '{w}.end_step' is null but it is not the last phase")
    if prev is not None and start != prev.end_step:
        raise ScheduleError(f"{source}: field '{w}.start_step' = {start}, expected {prev.end_step} "
                            "(phases must be contiguous and in order)")
    layers = ph.get("layers")
    if not isinstance(layers, dict) or not layers:
        raise ScheduleError(f"{source}: field '{w}.layers' must be a non-empty object")
    parsed = {name: parse_method(m, f"{source}: {w}.layers['{name}']") for name, m in layers.items()}
    pred = ph.get("predicted") or {}
    if not isinstance(pred, dict):
        raise ScheduleError(f"{source}: field '{w}.predicted' must be an object")
    pb = pred.get("bytes_per_step")
    if isinstance(pb, float) and pb.is_integer():
        pb = int(pb)  # the schema types byte counts as JSON numbers; 77528.0 is 77528
    if pb is not None:
        _int(source, f"{w}.predicted.bytes_per_step", pb)
    label = ph.get("label", "")
    if not isinstance(label, str):
        raise ScheduleError(f"{source}: field '{w}.label' = {label!r}, expected a string")
    wire = ph.get("wire")
    if version == 2:
        if wire is not None and (not isinstance(wire, dict) or set(wire) != set(parsed)):
            raise ScheduleError(f"{source}: field '{w}.wire' must give the wire plan of every parameter of the phase")
        for name, plan in (wire or {}).items():
            _check_wire(plan, f"{source}: field '{w}.wire[{name!r}]'", stages=True)
    elif wire is not None:
        raise ScheduleError(f"{source}: field '{w}.wire' needs schema_version 2")
    return Phase(start, end, label, parsed, pb, wire)


def make_schedule(phases: Sequence[Tuple[int, Optional[int], str, Mapping[str, Mapping[str, Any]]]],
                  shapes: Mapping[str, Sequence[int]], *, model: str = "", world_size: int = 1,
                  family: str = "powersgd", engine: str = "uniform", seed: int = 0,
                  buckets: Optional[Sequence[Sequence[str]]] = None,
                  phase_errors: Optional[Sequence[Optional[float]]] = None,
                  uniform_bytes_per_step: Optional[int] = None, uniform_total_error: float = 0.0,
                  config: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Builds a format-2 schedule document (schemas/schedule.schema.json). Phases are given as
    (start, end, label, {name: method json}); every parameter's wire plan, and from them every
    phase's predicted.bytes_per_step, come from the C++ registry (native module); `shapes` lists the
    parameters in model order. The summary describes the last phase."""
    out_phases = []
    for k, (start, end, label, layers) in enumerate(phases):
        parsed = {n: parse_method(layers[n], f"phase '{label}' layer '{n}'") for n in shapes}
        wire = {}
        for n in shapes:
            w = native.wire_plan(parsed[n].to_json(), shapes[n], None)
            st = native.wire_stages(parsed[n].to_json(), shapes[n], start, end)
            if any(stage["plan"] != w for stage in st):
                w["stages"] = st
            wire[n] = w
        bps = sum(int(w["bytes"]) for w in wire.values())
        pred: Dict[str, Any] = {"bytes_per_step": bps}
        if phase_errors is not None and phase_errors[k] is not None:
            pred["total_error"] = float(phase_errors[k])
        out_phases.append({"start_step": start, "end_step": end, "label": label,
                           "layers": {n: native.method_json(parsed[n].to_json()) for n in shapes},
                           "predicted": pred, "wire": wire})
    unc = sum(4 * math.prod(s) for s in shapes.values())
    last = out_phases[-1]["predicted"]
    ub = uniform_bytes_per_step if uniform_bytes_per_step is not None else last["bytes_per_step"]
    predicted = {"bytes_per_step": last["bytes_per_step"], "uniform_bytes_per_step": ub,
                 "uncompressed_bytes_per_step": unc,
                 "compression_ratio": unc / last["bytes_per_step"] if last["bytes_per_step"] else None,
                 "uniform_compression_ratio": unc / ub if ub else None,
                 "total_error": float(last.get("total_error", 0.0)),
                 "uniform_total_error": float(uniform_total_error),
                 "step_time_s": None, "uniform_step_time_s": None, "uncompressed_step_time_s": None}
    bucket_docs = [{"index": i, "params": list(ns), "size_bytes": sum(4 * math.prod(shapes[n]) for n in ns)}
                   for i, ns in enumerate(buckets or [])]
    return {"schema_version": 2, "kind": "lgreco-schedule", "model": model, "world_size": world_size,
            "family": family, "engine": engine, "seed": seed,
            "parameters": [{"name": n, "shape": list(shapes[n])} for n in shapes],
            "phases": out_phases, "buckets": bucket_docs,
            "predicted": predicted, "config": dict(config or {}),
            "provenance": {"tool": "lgreco-python", "producer": "lgreco.make_schedule"}}
