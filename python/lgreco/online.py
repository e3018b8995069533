"""Online L-GreCo inside the training job: OnlineHook re-plans per-layer compression while training,
with lgreco's C++ planner (the native module), and writes every decision so that `lgreco plan
--tables` reproduces it offline.

Timeline (docs/reference-lgreco.md, as `lgreco plan --trace` replays it): steps [0, N) uncompressed
(warm-up, N = warmup_steps); windows W_k = [N + k·P, N + (k+1)·P) of P = period steps; W_0 runs
the family's uniform default; during the last a = min(acc_steps, P) steps of W_k rank 0 adds up the
error-feedback-corrected gradient of every parameter (exactly the tensor about to be compressed);
when the first bucket of step W_k.end reaches the hook (every collective of W_k has completed),
rank 0 measures every candidate of the family on A = (1/a)·Σ (the C++ measurement, power or exact
mode, seeded by (seed, W_k.end − 1, parameter index)), appends the window to its candidate tables,
plans it with the C++ engine (`lgreco plan`'s plan options) and builds the phased schedule of all
windows so far (planner::build_schedule); the new phase plan-k (from W_k.end on) is broadcast as
its JSON text and every rank applies it from that very step. Rank 0 writes, atomically after every
re-plan, into `out_dir`:
  schedule.json                 the schedule of everything the job did so far (format 2; the last
                                phase open): warm-up, uniform, plan-0 ... plan-k
  tables.json                   the candidate tables of every planned window (format v1)
  windows/window-KKKK.tables.json   window k alone; windows/window-KKKK.plan.json its plan and timings
`lgreco plan --tables tables.json --warmup-steps N --seed S` plus the options (schedule.json's
config) writes the same phases; `lgreco plan --tables window-KKKK.tables.json` gives plan k as its
plan-0. A window whose accumulated gradient is not finite is skipped (its plan file says so): the
phase in force continues, which the schedule describes as it is (a phase ends where the next
planned window ends).
"""
from __future__ import annotations

import json
import math
import os
import pathlib
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np
import torch

from . import native
from .hook import ScheduleHook, TorchComm, _lanes, _unwrap
from .methods import ScheduleError
from .schedule import Schedule, make_schedule
from .trace import layer_kinds

ERROR_MODES = ("power", "exact")


def candidate_sets(shapes: Mapping[str, Sequence[int]], family: str, defaults: Optional[Mapping[str, Any]] = None,
                   ranges: Optional[Mapping[str, Any]] = None) -> Dict[str, dict]:
    """Per parameter, the family's candidate set (the C++ sim::make_candidates)."""
    return {n: native.family_candidates(family, defaults or {}, s, ranges) for n, s in shapes.items()}


def uniform_schedule(shapes: Mapping[str, Sequence[int]], sets: Mapping[str, dict], warmup_steps: int = 0, *,
                     seed: int = 0, model: str = "", world_size: int = 1, family: str = "",
                     config: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The schedule [0, warmup) uncompressed, then every parameter at its candidate set's default
    (open): a format-2 document (make_schedule; wire plans from the C++ registry)."""
    phases = []
    if warmup_steps > 0:
        phases.append((0, warmup_steps, "warmup", {n: {"method": "none"} for n in shapes}))
    phases.append((warmup_steps, None, "uniform",
                   {n: sets[n]["candidates"][sets[n]["default_index"]] for n in shapes}))
    return make_schedule(phases, shapes, model=model, world_size=world_size, family=family, engine="uniform",
                         seed=seed, config=config)


def tables_header(model: str, world_size: int, error_mode: str, acc_steps: int, producer: str) -> Dict[str, Any]:
    """A tables document (format v1) without windows."""
    return {"schema_version": 1, "kind": "lgreco-tables", "model": model, "world_size": int(world_size),
            "error_mode": error_mode, "acc_steps": int(acc_steps), "provenance": {"producer": producer}}


def measure_layer(a: np.ndarray, name: str, shape: Sequence[int], cset: Mapping[str, Any], error_mode: str, seed: int,
                  iterations: int, layer_index: int, step: int) -> List[dict]:
    """Every candidate of `cset` measured on A (native measure_candidates: the C++ measurement),
    in the tables' JSON form."""
    return native.measure_candidates(a, shape, cset["candidates"], error_mode, seed, iterations, layer_index, step, name)


def table_layer(name: str, shape: Sequence[int], kind: str, bucket: int, backward_order: int, cset: Mapping[str, Any],
                candidates: List[dict]) -> Dict[str, Any]:
    """One layer of a tables window."""
    return {"name": name, "shape": [int(d) for d in shape], "numel": int(math.prod(shape)), "kind": kind,
            "bucket": int(bucket), "backward_order": int(backward_order), "default": int(cset["default_index"]),
            "candidates": candidates}


def _write_json(path: pathlib.Path, doc: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, path)


class OnlineHook(ScheduleHook):
    """A ScheduleHook that plans its own schedule while training (see the module docstring).

    family, defaults, ranges: the candidates, as `lgreco plan --trace --family F --default K=V
    --rank-low/--rank-high/--min-numel` (e.g. "powersgd", {"rank": 4}); warmup_steps, period,
    acc_steps: the timeline; error_mode "power" (measure_iterations subspace iterations from a
    seeded start) or "exact" (singular values); plan: plan options in the form schedules record as
    "config" (planner/plan_json.hpp: engine reference|exact|time|dual, budget, network, ...; default
    the reference DP at α = 1); seed: measurement seed and the schedule's seed; out_dir: where rank 0
    writes (None: nothing written; the decisions are still in `decisions`); asynchronous, lanes, comm:
    as ScheduleHook's.
    Needs the native module on every rank."""

    def __init__(self, model: torch.nn.Module, *, family: str = "powersgd",
                 defaults: Optional[Mapping[str, Any]] = None, ranges: Optional[Mapping[str, Any]] = None,
                 warmup_steps: int = 0, period: int = 1000, acc_steps: int = 10, error_mode: str = "power",
                 measure_iterations: int = 5, plan: Optional[Mapping[str, Any]] = None, seed: int = 0,
                 out_dir: Optional[str | os.PathLike] = None, overwrite: bool = False, model_name: str = "model",
                 process_group=None, asynchronous: bool = True, comm: Optional[TorchComm | Sequence[TorchComm]] = None,
                 lanes: int = 1, log_path: Optional[str] = None):
        native.require("online re-planning (OnlineHook)")
        for key, v, lo in (("warmup_steps", warmup_steps, 0), ("period", period, 1), ("acc_steps", acc_steps, 1),
                           ("measure_iterations", measure_iterations, 1), ("seed", seed, 0)):
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ScheduleError(f"OnlineHook: {key} = {v!r}, expected an integer >= {lo}")
        if error_mode not in ERROR_MODES:
            raise ScheduleError(f"OnlineHook: error_mode = {error_mode!r}, expected one of {list(ERROR_MODES)}")
        comm = _lanes(comm, lanes, process_group)
        inner = _unwrap(model)
        shapes = {n: tuple(p.shape) for n, p in inner.named_parameters()}
        self.family, self.defaults, self.ranges = family, dict(defaults or {}), dict(ranges or {}) or None
        self.sets = candidate_sets(shapes, family, self.defaults, self.ranges)
        self.plan_options = native.plan_options(plan or {})  # the same check on every rank
        self.warmup_steps, self.period, self.error_mode = warmup_steps, period, error_mode
        self.acc_steps = min(acc_steps, period)
        self.measure_iterations, self.model_name = measure_iterations, model_name
        self.online_config = {"family": family, "defaults": self.defaults, "ranges": self.ranges,
                              "warmup_steps": warmup_steps, "period": period, "acc_steps": self.acc_steps,
                              "error_mode": error_mode, "measure_iterations": measure_iterations, "seed": seed}
        world = comm[0].world_size()
        doc = uniform_schedule(shapes, self.sets, warmup_steps, seed=seed, model=model_name, world_size=world,
                               family=family, config={**self.plan_options, "warmup_steps": warmup_steps,
                                                      "online": self.online_config})
        super().__init__(model, Schedule(doc, "online schedule"), process_group=process_group, log_path=log_path,
                         asynchronous=asynchronous, comm=comm)
        self.kinds = layer_kinds(inner)
        self.decisions: List[Dict[str, Any]] = []   # every rank: what was applied, from which step
        self.replans: List[Dict[str, Any]] = []     # timings (rank 0: measure/plan/write; all: broadcast)
        self.control_bytes_per_step: Dict[int, int] = {}
        self.is_planner = self.comm.rank() == 0
        self._acc: Dict[str, torch.Tensor] = {}
        self._acc_steps_seen: set = set()
        self.out_dir = pathlib.Path(out_dir) if out_dir is not None else None
        self.planner: Optional[native.OnlinePlanner] = None
        if self.is_planner:
            header = tables_header(model_name, world, error_mode, self.acc_steps,
                                   f"lgreco.OnlineHook (python, torch {torch.__version__})")
            self.planner = native.OnlinePlanner(header, self.plan_options)
            self._observe = self._accumulate
            if self.out_dir is not None:
                if (self.out_dir / "schedule.json").exists() and not overwrite:
                    raise FileExistsError(f"OnlineHook: {self.out_dir / 'schedule.json'} exists "
                                          "(pass overwrite=True to replace it)")
                (self.out_dir / "windows").mkdir(parents=True, exist_ok=True)
                _write_json(self.out_dir / "schedule.json", doc)

    # ------------------------------------------------------------------ timeline
    def window_of(self, step: int) -> Optional[int]:
        """The window holding `step` (None during the warm-up)."""
        return None if step < self.warmup_steps else (step - self.warmup_steps) // self.period

    def _measured(self, step: int) -> bool:
        return step >= self.warmup_steps and (step - self.warmup_steps) % self.period >= self.period - self.acc_steps

    def _accumulate(self, step: int, name: str, acc: torch.Tensor) -> None:
        if not self._measured(step):
            return
        buf = self._acc.get(name)
        if buf is None:
            buf = self._acc[name] = torch.zeros(acc.numel(), dtype=torch.float32)
        buf.add_(acc.detach().view(-1).to(torch.float32))
        self._acc_steps_seen.add(step)

    def _before_step(self, step: int) -> None:
        if step > self.warmup_steps and (step - self.warmup_steps) % self.period == 0:
            self._replan((step - self.warmup_steps) // self.period - 1, step)

    # ------------------------------------------------------------------ one re-plan
    def _bucket_layout(self) -> Dict[str, tuple]:
        """(bucket, backward order) per parameter from the buckets DDP built; parameters DDP never
        handed to the hook come last."""
        out, order = {}, 0
        for b in sorted(self.bucket_names):
            for n in self.bucket_names[b]:
                out[n] = (b, order)
                order += 1
        last = max(self.bucket_names, default=-1) + 1
        for n in self.names:
            if n not in out:
                out[n] = (last, order)
                order += 1
        return out

    def _measure_window(self, k: int) -> tuple:
        """(window document, None) or (None, reason to skip)."""
        start = self.warmup_steps + k * self.period
        end = start + self.period
        want = set(range(end - self.acc_steps, end))
        if not want <= self._acc_steps_seen:
            return None, f"steps {sorted(want - self._acc_steps_seen)} of the measurement never reached the hook"
        inv = torch.tensor(np.float32(1) / np.float32(self.acc_steps))
        layout = self._bucket_layout()
        layers = []
        for i, name in enumerate(self.names):
            shape = self.shapes[name]
            buf = self._acc.get(name)
            if buf is None:
                buf = torch.zeros(math.prod(shape), dtype=torch.float32)
            a = buf * inv  # as replay: Σ acc in fp32, times the fp32 1/a
            if not bool(torch.isfinite(a).all()):
                return None, f"the accumulated gradient of '{name}' is not finite"
            cands = measure_layer(a.numpy(), name, shape, self.sets[name], self.error_mode, self.schedule.seed,
                                  self.measure_iterations, i, end - 1)
            b, order = layout[name]
            layers.append(table_layer(name, shape, self.kinds.get(name, "weight"), b, order, self.sets[name], cands))
        return {"start_step": start, "end_step": end, "layers": layers}, None

    def _plan_on_rank0(self, k: int, step: int, info: Dict[str, Any]) -> bytes:
        t0 = time.perf_counter()
        window, skip = self._measure_window(k)
        self._acc.clear()
        self._acc_steps_seen.clear()
        t1 = time.perf_counter()
        info["measure_s"] = t1 - t0
        if window is None:
            info["skipped"] = skip
            if self.out_dir is not None:
                _write_json(self.out_dir / "windows" / f"window-{k:04d}.plan.json",
                            {"window": k, "applied_from_step": None, "skipped": skip})
            return b"S" + skip.encode()
        plan = self.planner.add_window(window)
        t2 = time.perf_counter()
        sched = self.planner.schedule(self.warmup_steps, self.schedule.seed, {"online": self.online_config})
        t3 = time.perf_counter()
        info.update(plan_s=t2 - t1, schedule_s=t3 - t2, status=plan["status"])
        phase = sched["phases"][-1]
        if phase["start_step"] != step or phase["end_step"] is not None:
            raise RuntimeError(f"OnlineHook: the planner's last phase covers [{phase['start_step']}, "
                               f"{phase['end_step']}), expected [{step}, open) (a defect: please report it)")
        self._check_history(sched)
        if self.out_dir is not None:
            wdir = self.out_dir / "windows"
            _write_json(wdir / f"window-{k:04d}.tables.json", {**self.planner.tables(), "windows": [window]})
            _write_json(wdir / f"window-{k:04d}.plan.json",
                        {"window": k, "applied_from_step": step, "label": phase["label"], "plan": plan,
                         "timings": {key: info[key] for key in ("measure_s", "plan_s", "schedule_s")}})
            _write_json(self.out_dir / "tables.json", self.planner.tables())
            _write_json(self.out_dir / "schedule.json", sched)
            info["write_s"] = time.perf_counter() - t3
        return b"P" + json.dumps(phase).encode()

    def _check_history(self, sched: Mapping[str, Any]) -> None:
        """The planner's schedule repeats, before its new phase, exactly the phases this hook applied."""
        mine = self.schedule.phases
        theirs = sched["phases"][:-1]
        ok = len(mine) == len(theirs)
        for i, (a, b) in enumerate(zip(mine, theirs)):
            end = b["end_step"] if i == len(theirs) - 1 else a.end_step  # the open phase ends now
            ok = ok and (a.start_step, end, a.label) == (b["start_step"], b["end_step"], b["label"]) and all(
                a.layers[n].to_json() == b["layers"][n] for n in self.names)
        if not ok:
            raise RuntimeError("OnlineHook: the planner's schedule disagrees with the phases this job applied "
                               "(a defect: please report it)")

    def _replan(self, k: int, step: int) -> None:
        info: Dict[str, Any] = {"window": k, "step": step}
        t0 = time.perf_counter()
        payload = b""
        if self.is_planner:
            try:
                payload = self._plan_on_rank0(k, step, info)
            except Exception as e:  # every rank must leave the broadcast with the same outcome
                payload = b"E" + f"{type(e).__name__}: {e}".encode()
        t1 = time.perf_counter()
        size = torch.tensor([len(payload)], dtype=torch.int64)
        self.comm.broadcast(size, 0).wait()
        data = torch.zeros(int(size.item()), dtype=torch.uint8)
        if self.is_planner:
            data.copy_(torch.frombuffer(bytearray(payload), dtype=torch.uint8))
        self.comm.broadcast(data, 0).wait()
        payload = bytes(data.numpy())
        info["broadcast_s"] = time.perf_counter() - t1
        self.control_bytes_per_step[step] = 8 + len(payload)
        kind, body = payload[:1], payload[1:].decode()
        if kind == b"E":
            raise RuntimeError(f"OnlineHook: re-plan of window {k} (at step {step}) failed on rank 0: {body}")
        if kind == b"S":
            self.decisions.append({"window": k, "step": step, "skipped": body})
        else:
            phase = json.loads(body)
            new = self.schedule.with_phase(phase)
            self._check_predictions(new)
            self.schedule = new
            self.decisions.append({"window": k, "step": step, "label": new.phases[-1].label, "layers": phase["layers"]})
        info["total_s"] = time.perf_counter() - t0
        self.replans.append(info)
