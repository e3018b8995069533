"""Access to lgreco's C++ native module (`lgreco._native`, pybind11): the method registry, the wire
plans, the candidate sets of a method family, the measurement of candidates on a matrix, and the
planner's engines on in-memory candidate tables: the same code the `lgreco` CLI runs (`lgreco plan
--tables` plans each window with the functions `plan_window` and `OnlinePlanner` call).

The module is built by the project's CMake for one Python interpreter (`make` builds it for
/usr/bin/python3). A job running another interpreter can still apply offline schedules (they carry
their wire plans); what needs the module raises NativeUnavailable saying how to build it there.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, List, Mapping, Optional, Sequence

import numpy as np

try:  # pragma: no cover - which branch runs depends on the build
    from . import _native as _mod
    _import_error: Optional[BaseException] = None
except ImportError as e:  # not built, or built for another Python
    _mod = None
    _import_error = e


class NativeUnavailable(RuntimeError):
    """The native module is not importable in this interpreter."""


def available() -> bool:
    return _mod is not None


def require(what: str):
    """The native module, or NativeUnavailable explaining how to build it for this interpreter."""
    if _mod is None:
        raise NativeUnavailable(
            f"{what} needs lgreco's native module, which is not importable in {sys.executable} "
            f"({_import_error}); build it for this interpreter: cmake -S <repo> -B build "
            f"-DLGRECO_PYTHON_EXECUTABLE={sys.executable} && cmake --build build --target lgreco_native "
            "(docs/python.md)")
    return _mod


def check_file(kind: str, path: Any, error: type) -> None:
    """When the module is built: opens `path` with lgreco's C++ reader of `kind` ("trace": what `lgreco
    trace info` checks; "tables": what `lgreco plan --tables` checks) and raises `error` with the C++
    reader's one line (file and field) if it refuses the file. Without the module it does nothing."""
    if _mod is None:
        return
    try:
        {"trace": _mod.check_trace, "tables": _mod.check_tables}[kind](os.fspath(path))
    except ValueError as e:  # LgrecoError
        raise error(" ".join(str(e).split())) from None


def registry() -> dict:
    return json.loads(require("the method registry").registry_json())


def method_json(method: Any) -> dict:
    """{"method", "params"} validated and resolved by the C++ registry (ValueError when invalid)."""
    return json.loads(require("resolving a method").method_json(json.dumps(method)))


def wire_plan(method: Any, shape: Sequence[int], step: Optional[int] = None) -> dict:
    return json.loads(require("a wire plan").wire_plan(json.dumps(method), [int(d) for d in shape], step))


def wire_stages(method: Any, shape: Sequence[int], from_step: int, to_step: Optional[int]) -> list:
    return json.loads(require("wire stages").wire_stages(json.dumps(method), [int(d) for d in shape], int(from_step),
                                                          None if to_step is None else int(to_step)))


def _text(obj: Any) -> str:
    return "" if obj is None else obj if isinstance(obj, str) else json.dumps(obj)


def family_names() -> List[str]:
    return list(require("method families").family_names())


def family_candidates(family: str, defaults: Optional[Mapping[str, Any]], shape: Sequence[int],
                      ranges: Optional[Mapping[str, Any]] = None) -> dict:
    """The candidate set of a tensor of `shape` in a method family (sim::make_candidates, what `lgreco
    plan --trace --family F --default K=V` measures): {"candidates": [{"method", "params"}],
    "default_index", "planned"}. `ranges`: {"rank_low", "rank_high", "min_numel"}."""
    return json.loads(require("candidate sets").family_candidates(family, _text(defaults or {}), [int(d) for d in shape],
                                                                   _text(ranges)))


def measure_candidates(a: np.ndarray, shape: Sequence[int], candidates: Sequence[Mapping[str, Any]], error_mode: str,
                       seed: int, iterations: int, layer_index: int, step: int, name: str) -> List[dict]:
    """Every candidate measured on the matrix A (fp32, any shape with the tensor's element count) as
    `lgreco replay` measures it (sim::measure_on_matrix, error mode "power" or "exact", seeded by (seed,
    step, layer_index)): the candidates in the tables' JSON form {"method", "params", "error", "bytes",
    "collective"}. Releases the GIL while it measures."""
    flat = np.ascontiguousarray(a, dtype=np.float32).reshape(-1)
    return json.loads(require("measuring candidates").measure_candidates(
        flat, [int(d) for d in shape], json.dumps(list(candidates)), error_mode, int(seed), int(iterations),
        int(layer_index), int(step), name))


def plan_options(options: Optional[Mapping[str, Any]] = None) -> dict:
    """Plan options validated and resolved (planner/plan_json.hpp: the form a schedule's "config" records)."""
    return json.loads(require("plan options").plan_options(_text(options or {})))


def plan_window(tables: Any, window: int, options: Optional[Mapping[str, Any]] = None) -> dict:
    """The plan of window `window` of candidate tables (a dict in the tables' JSON form, or its text)."""
    return json.loads(require("planning").plan_window(_text(tables), int(window), _text(options or {})))


def plan_tables(tables: Any, options: Optional[Mapping[str, Any]] = None, warmup_steps: Optional[int] = None,
                seed: int = 0) -> dict:
    """The phased schedule `lgreco plan --tables` writes for these tables and options (every window
    planned; a plan that misses its budget has status "infeasible" instead of failing)."""
    return json.loads(require("planning").plan_tables(_text(tables), _text(options or {}),
                                                       None if warmup_steps is None else int(warmup_steps), int(seed)))


class OnlinePlanner:
    """Candidate tables that grow one window at a time, each window planned as it is added (the C++
    planner; the same plan_window `lgreco plan --tables` calls per window)."""

    def __init__(self, header: Mapping[str, Any], options: Optional[Mapping[str, Any]] = None):
        self._p = require("online re-planning").OnlinePlanner(json.dumps(dict(header)), _text(options or {}))

    def add_window(self, window: Mapping[str, Any]) -> dict:
        """Validates a window (tables JSON form) against the earlier ones and plans it; the plan."""
        return json.loads(self._p.add_window(json.dumps(window)))

    def schedule(self, warmup_steps: Optional[int], seed: int = 0, extra_config: Optional[Mapping[str, Any]] = None) -> dict:
        """The phased schedule of every window so far (planner::build_schedule)."""
        return json.loads(self._p.schedule_json(None if warmup_steps is None else int(warmup_steps), int(seed),
                                                _text(extra_config)))

    def tables(self) -> dict:
        return json.loads(self._p.tables_json())

    def options(self) -> dict:
        return json.loads(self._p.options_json())

    @property
    def windows(self) -> int:
        return int(self._p.windows)
