"""Access to lgreco's C++ native module (`lgreco._native`, pybind11): the method registry, the wire
plans and the planner, the same code the `lgreco` CLI runs.

The module is built by the project's CMake for one Python interpreter (`make` builds it for
/usr/bin/python3). A job running another interpreter can still apply offline schedules (they carry
their wire plans); what needs the module raises NativeUnavailable saying how to build it there.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Optional, Sequence

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
