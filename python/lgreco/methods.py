"""The method table: names, parameters with defaults, wire bytes and collectives.

This mirrors the project's shared method contract (docs/design.md, "Methods"). Wire bytes are the
payload one worker contributes to the collective per step, for a gradient of N fp32 elements:

    none                4N                                   allreduce
    fp16, bf16          2N                                   allreduce
    powersgd            n = shape[0], m = N/n, r = min(n, m, rank);
                        compressible iff (n+m)·r·min_compression_rate < n·m;
                        then 4·r·n (P, round 0) + 4·r·m (Q, round 1), else 4N (round 0)   allreduce
    topk                k = N == 0 ? 0 : max(1, ceil(d·N)), d = the density (see warm-up below);
                        pairs 8k, bitmap ceil(N/8)+4k, auto = min (ties → pairs)         allgather
    randomk             4k (indices from the shared seed)                                  allreduce
    qsgd                s = levels or 2^(bits−1)−1; ceil(N·ceil(log2(2s+1))/8) + 4·ceil(N/bucket) allgather
    maxmin              N < 16: 4N raw; else ceil(bits·N/8) + 8·ceil(N/bucket)             allgather
    sign                ceil(N/8) + 4·ceil(N/bucket)                                        allgather
    terngrad            ceil(2N/8) + 4                                                      allgather
    nuqsgd              ceil(N·(1+ceil(log2(s+2)))/8) + 4·ceil(N/bucket)                    allgather

The top-k "delta" encoding (Elias-gamma gaps) has a data-dependent size; the DDP hook needs
equal-size allgather payloads known from shapes alone, so the hook rejects it (the planner may
still price it). Same for "dgc" selection, whose count is not exactly k.

DGC warm-up (top-k "warmup_steps" W > 0): at training step t the density is
    d(t) = max(density, 0.25·4^(−floor(t/W)))   (W = 0: d(t) = density)
(kernels/wire.hpp, topk_density_at), so k, the auto encoding and the bytes of a step follow d(t).
The step-free forms (`step=None`, the default) give the steady state at the target density: that is
what a schedule's phase "predicted.bytes_per_step" holds. Momentum correction never changes sizes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple


class ScheduleError(ValueError):
    """A schedule or method description is invalid; the message names the field and the value."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _ceil_log2(x: int) -> int:
    """ceil(log2(x)) for an integer x ≥ 1, exact (no floating point)."""
    return (x - 1).bit_length()


# name → {param: default}
DEFAULTS: Dict[str, Dict[str, Any]] = {
    "none": {},
    "fp16": {},
    "bf16": {},
    "powersgd": {"rank": 4, "power_iterations": 1, "min_compression_rate": 2, "warm_start": True,
                 "orthogonalization": "auto", "seed": 0},
    "topk": {"density": 0.01, "encoding": "auto", "selection": "exact", "momentum": 0, "warmup_steps": 0},
    "randomk": {"density": 0.01},
    "qsgd": {"bits": 4, "bucket_size": 512, "norm": "l2"},  # "levels" may replace "bits"
    "maxmin": {"bits": 4, "bucket_size": 1024, "rounding": "stochastic"},
    "sign": {"bucket_size": 1024},
    "terngrad": {},
    "nuqsgd": {"levels": 4, "bucket_size": 512},
}

ALLGATHER_METHODS = frozenset({"topk", "qsgd", "maxmin", "sign", "terngrad", "nuqsgd"})


@dataclass(frozen=True)
class Method:
    """One resolved method: its name and every parameter (defaults filled in)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> Dict[str, Any]:
        return {"method": self.name, "params": dict(self.params)}

    @property
    def collective(self) -> str:
        return "allgather" if self.name in ALLGATHER_METHODS else "allreduce"


def _need_int(where: str, key: str, v: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ScheduleError(f"{where}: param '{key}' = {v!r}, expected an integer {rng}")
    return v


def _need_num(where: str, key: str, v: Any, lo_excl: float, hi_incl: float | None = None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= lo_excl \
            or (hi_incl is not None and v > hi_incl):
        rng = f"({lo_excl}, {hi_incl}]" if hi_incl is not None else f"> {lo_excl}"
        raise ScheduleError(f"{where}: param '{key}' = {v!r}, expected a number in {rng}")
    return float(v)


def _need_choice(where: str, key: str, v: Any, choices: Sequence[str]) -> str:
    if v not in choices:
        raise ScheduleError(f"{where}: param '{key}' = {v!r}, expected one of {list(choices)}")
    return v


def parse_method(obj: Any, where: str = "method") -> Method:
    """Validates {"method": name, "params": {...}} and returns it with defaults filled in."""
    if not isinstance(obj, dict):
        raise ScheduleError(f"{where}: expected an object {{\"method\", \"params\"}}, got {obj!r}")
    extra = set(obj) - {"method", "params"}
    if extra:
        raise ScheduleError(f"{where}: unknown key(s) {sorted(extra)}")
    name = obj.get("method")
    if name not in DEFAULTS:
        raise ScheduleError(f"{where}: unknown method {name!r}, expected one of {sorted(DEFAULTS)}")
    given = obj.get("params", {}) or {}
    if not isinstance(given, dict):
        raise ScheduleError(f"{where}: 'params' must be an object, got {given!r}")
    allowed = set(DEFAULTS[name]) | ({"levels"} if name == "qsgd" else set())
    unknown = set(given) - allowed
    if unknown:
        raise ScheduleError(f"{where}: method '{name}' has no param(s) {sorted(unknown)}; "
                            f"known: {sorted(allowed)}")
    p = dict(DEFAULTS[name])
    p.update(given)
    w = f"{where} ({name})"
    if name == "powersgd":
        _need_int(w, "rank", p["rank"], 0)
        _need_int(w, "power_iterations", p["power_iterations"], 1)
        if p["power_iterations"] > 16:
            raise ScheduleError(f"{w}: param 'power_iterations' = {p['power_iterations']}: expected 1..16")
        _need_num(w, "min_compression_rate", p["min_compression_rate"], 0.0)
        if not isinstance(p["warm_start"], bool):
            raise ScheduleError(f"{w}: param 'warm_start' = {p['warm_start']!r}, expected true/false")
        _need_choice(w, "orthogonalization", p["orthogonalization"], ["auto", "gram-schmidt", "qr"])
        _need_int(w, "seed", p["seed"], 0)
    elif name in ("topk", "randomk"):
        _need_num(w, "density", p["density"], 0.0, 1.0)
        if name == "topk":
            _need_choice(w, "encoding", p["encoding"], ["auto", "pairs", "bitmap", "delta"])
            _need_choice(w, "selection", p["selection"], ["exact", "dgc"])
            mo = p["momentum"]
            if isinstance(mo, bool) or not isinstance(mo, (int, float)) or not (0 <= mo < 1):
                raise ScheduleError(f"{w}: param 'momentum' = {mo!r}, expected a number in [0, 1)")
            _need_int(w, "warmup_steps", p["warmup_steps"], 0)
    elif name == "qsgd":
        _need_int(w, "bucket_size", p["bucket_size"], 1)
        _need_choice(w, "norm", p["norm"], ["l2", "max"])
        if "levels" in given:
            _need_int(w, "levels", p["levels"], 1, 32767)
            if "bits" in given and (1 << (p["bits"] - 1)) - 1 != p["levels"]:
                raise ScheduleError(f"{w}: 'bits' = {p['bits']} and 'levels' = {p['levels']} disagree "
                                    "(bits b means levels 2^(b-1)-1)")
            if "bits" not in given:
                p.pop("bits")
        else:
            _need_int(w, "bits", p["bits"], 2, 16)
    elif name == "maxmin":
        _need_int(w, "bits", p["bits"], 1, 8)
        _need_int(w, "bucket_size", p["bucket_size"], 1)
        _need_choice(w, "rounding", p["rounding"], ["stochastic", "nearest"])
    elif name in ("sign", "nuqsgd"):
        _need_int(w, "bucket_size", p["bucket_size"], 1)
        if name == "nuqsgd":
            _need_int(w, "levels", p["levels"], 1, 30)
    return Method(name, p)


def qsgd_levels(params: Mapping[str, Any]) -> int:
    """s: explicit "levels", else 2^(bits−1) − 1."""
    if "levels" in params:
        return int(params["levels"])
    return (1 << (int(params["bits"]) - 1)) - 1


def qsgd_code_bits(params: Mapping[str, Any]) -> int:
    """Bits per element: ceil(log2(2s+1))."""
    return _ceil_log2(2 * qsgd_levels(params) + 1)


def nuqsgd_code_bits(params: Mapping[str, Any]) -> int:
    """Bits per element: 1 sign bit + ceil(log2(s+2)) level bits."""
    return 1 + _ceil_log2(int(params["levels"]) + 2)


def matrix_view(shape: Sequence[int]) -> Tuple[int, int]:
    """PowerSGD's matrix view: n = shape[0], m = N/n (a 0-d tensor is 1×1)."""
    numel = math.prod(shape)
    n = int(shape[0]) if len(shape) > 0 else 1
    return n, (numel // n if n > 0 else 0)


def powersgd_geometry(shape: Sequence[int], params: Mapping[str, Any]) -> Tuple[bool, int, int, int]:
    """(compressible, n, m, r_eff) for a tensor of this shape under these PowerSGD params."""
    n, m = matrix_view(shape)
    r = min(n, m, int(params["rank"]))
    compressible = (n + m) * r * params["min_compression_rate"] < n * m
    return compressible, n, m, r


def topk_k(numel: int, density: float) -> int:
    """k = N == 0 ? 0 : max(1, ceil(density·N)) (ceil in double, as kernels/wire.hpp sparse_k)."""
    return 0 if numel == 0 else max(1, math.ceil(density * numel))


def topk_density_at(params: Mapping[str, Any], step: Optional[int] = None) -> float:
    """DGC's warm-up density at training step `step`: max(density, 0.25·4^(−floor(step/W))) for
    W = warmup_steps > 0 (the powers of 4 are exact), else density; `step=None` is the steady
    state (the target density). Mirrors kernels/wire.hpp topk_density_at."""
    density = float(params["density"])
    w = int(params.get("warmup_steps", 0))
    if step is None or w <= 0:
        return density
    if step < 0:
        raise ScheduleError(f"topk warm-up: step {step} is negative")
    stage = step // w
    if stage >= 600:  # 2^(−2−2·stage) would underflow; the target density has long been reached
        return density
    return max(density, math.ldexp(1.0, -2 - 2 * stage))


def topk_k_at(numel: int, params: Mapping[str, Any], step: Optional[int] = None) -> int:
    """k of top-k at `step` (warm-up density), or at the target density for `step=None`."""
    return topk_k(numel, topk_density_at(params, step))


def topk_encoding(numel: int, params: Mapping[str, Any], step: Optional[int] = None) -> str:
    """The encoding actually used at `step`: "auto" resolves to the cheaper of pairs and bitmap
    for that step's k (ties → pairs); `step=None` is the steady state."""
    enc = params["encoding"]
    if enc != "auto":
        return enc
    k = topk_k_at(numel, params, step)
    return "pairs" if 8 * k <= _ceil_div(numel, 8) + 4 * k else "bitmap"


def wire_bytes_rounds(method: Method, shape: Sequence[int], step: Optional[int] = None) -> Tuple[int, int, int]:
    """(allreduce round 0 bytes, allreduce round 1 bytes, allgather bytes) per worker at training
    step `step` (only top-k's warm-up depends on it); `step=None` is the steady state."""
    N = math.prod(shape)
    p = method.params
    name = method.name
    if name == "none":
        return 4 * N, 0, 0
    if name in ("fp16", "bf16"):
        return 2 * N, 0, 0
    if name == "powersgd":
        comp, n, m, r = powersgd_geometry(shape, p)
        it = p["power_iterations"]
        return (it * 4 * r * n, it * 4 * r * m, 0) if comp else (4 * N, 0, 0)
    if name == "randomk":
        return 4 * topk_k(N, p["density"]), 0, 0
    if name == "topk":
        k = topk_k_at(N, p, step)
        enc = topk_encoding(N, p, step)
        if enc == "delta":
            raise ScheduleError("topk encoding 'delta' has a data-dependent size; not predictable from shape")
        return 0, 0, (8 * k if enc == "pairs" else _ceil_div(N, 8) + 4 * k)
    if name == "qsgd":
        return 0, 0, _ceil_div(N * qsgd_code_bits(p), 8) + 4 * _ceil_div(N, p["bucket_size"])
    if name == "maxmin":
        if N < 16:
            return 0, 0, 4 * N
        return 0, 0, _ceil_div(p["bits"] * N, 8) + 8 * _ceil_div(N, p["bucket_size"])
    if name == "sign":
        return 0, 0, _ceil_div(N, 8) + 4 * _ceil_div(N, p["bucket_size"])
    if name == "terngrad":
        return 0, 0, _ceil_div(2 * N, 8) + 4
    if name == "nuqsgd":
        return 0, 0, _ceil_div(N * nuqsgd_code_bits(p), 8) + 4 * _ceil_div(N, p["bucket_size"])
    raise ScheduleError(f"unknown method {name!r}")


def wire_bytes(method: Method, shape: Sequence[int], step: Optional[int] = None) -> int:
    """Total bytes one worker contributes at training step `step` for a tensor of this shape;
    `step=None` (the default) is the steady state, which phase predictions use."""
    return sum(wire_bytes_rounds(method, shape, step))
