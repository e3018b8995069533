"""Compression methods as schedules name them: {"method": name, "params": {...}}.

There is no method table here: the names, parameters, types, defaults, ranges and aliases come from
lgreco's one registry (kernels/registry.cpp), through the native module when it is built, else
from python/lgreco/registry.json, which is generated from the registry and checked by a test
(scripts/generate_registry_files.py). Wire sizes likewise: `wire(...)` asks the C++ registry
(native module); a schedule carries the wire plan of every parameter (lgreco.schedule), so the DDP
hook applies offline schedules without the native module.
"""
from __future__ import annotations

import json
import math
import pathlib
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence

from . import native


class ScheduleError(ValueError):
    """A schedule or method description is invalid; the message names the field and the value."""


_REGISTRY_FILE = pathlib.Path(__file__).resolve().parent / "registry.json"


def _load_registry() -> dict:
    if native.available():
        return native.registry()
    return json.loads(_REGISTRY_FILE.read_text())


REGISTRY: dict = _load_registry()
METHODS: Dict[str, dict] = {m["name"]: m for m in REGISTRY["methods"]}
ALLGATHER_METHODS = frozenset(n for n, m in METHODS.items() if m["collective"] == "allgather")


@dataclass(frozen=True)
class Method:
    """One resolved method: its name and every parameter (defaults filled in, aliases resolved)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> Dict[str, Any]:
        return {"method": self.name, "params": dict(self.params)}

    @property
    def collective(self) -> str:
        return METHODS[self.name]["collective"]


def _value(where: str, key: str, v: Any, p: dict) -> Any:
    """Checks one value against the registry entry `p`; returns it in canonical type."""
    t = p["type"]
    if t == "int":
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int) or not p["min"] <= v <= p["max"]:
            raise ScheduleError(f"{where}: param '{key}' = {v!r}, expected an integer in [{p['min']}, {p['max']}]")
        return v
    if t == "real":
        ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
        if ok:
            lo_ok = v > p["min"] if p["min_open"] else v >= p["min"]
            hi_ok = v < p["max"] if p["max_open"] else v <= p["max"]
            ok = lo_ok and hi_ok
        if not ok:
            rng = f"{'(' if p['min_open'] else '['}{p['min']}, {p['max']}{')' if p['max_open'] else ']'}"
            raise ScheduleError(f"{where}: param '{key}' = {v!r}, expected a number in {rng}")
        return v
    if t == "bool":
        if not isinstance(v, bool):
            raise ScheduleError(f"{where}: param '{key}' = {v!r}, expected true or false")
        return v
    if v not in p["choices"]:
        raise ScheduleError(f"{where}: param '{key}' = {v!r}, expected one of {p['choices']}")
    return v


def parse_method(obj: Any, where: str = "method") -> Method:
    """Validates {"method": name, "params": {...}} against the registry and returns it with every
    parameter resolved (defaults filled, input aliases such as qsgd "bits" turned into their target)."""
    if not isinstance(obj, dict):
        raise ScheduleError(f"{where}: expected an object {{\"method\", \"params\"}}, got {obj!r}")
    extra = set(obj) - {"method", "params"}
    if extra:
        raise ScheduleError(f"{where}: unknown key(s) {sorted(extra)}")
    name = obj.get("method")
    if not isinstance(name, str) or name not in METHODS:
        raise ScheduleError(f"{where}: unknown method {name!r}, expected one of {sorted(METHODS)}")
    given = obj.get("params", {}) or {}
    if not isinstance(given, dict):
        raise ScheduleError(f"{where}: 'params' must be an object, got {given!r}")
    info = {p["name"]: p for p in METHODS[name]["params"]}
    unknown = set(given) - set(info)
    if unknown:
        raise ScheduleError(f"{where}: method '{name}' has no param(s) {sorted(unknown)}; known: {sorted(info)}")
    w = f"{where} ({name})"
    out: Dict[str, Any] = {p["name"]: p["default"] for p in METHODS[name]["params"] if "default" in p}
    for key, v in given.items():
        p = info[key]
        v = _value(w, key, v, p)
        if "alias_for" in p:
            if p["alias_for"] in given:
                raise ScheduleError(f"{w}: give either '{key}' or '{p['alias_for']}', not both")
            out[p["alias_for"]] = p["alias_values"][str(v)]
        else:
            out[key] = v
    return Method(name, out)


def wire(method: Method, shape: Sequence[int], step: Optional[int] = None) -> dict:
    """The registry's wire plan of `method` on a tensor of `shape` at training step `step` (None: the
    steady state): bytes, collective, rounds, allgather bytes, and k / encoding / matrix view / code
    width where the method has them (kernels/wire.hpp). Needs the native module."""
    return native.wire_plan(method.to_json(), shape, step)


def wire_bytes(method: Method, shape: Sequence[int], step: Optional[int] = None) -> int:
    """Bytes one worker sends per step for this tensor (the registry's figure; native module)."""
    return int(wire(method, shape, step)["bytes"])
