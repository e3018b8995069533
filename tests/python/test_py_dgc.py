"""DGC's top-k parameters on the Python side: the registry accepts momentum and warmup_steps
(defaults 0, ranges checked with the field and value named) and prices a warm-up step by step; the
DDP hook accepts momentum correction and warm-up (tests in test_py_dgc_hook.py), and DGC selection and
delta encoding, whose payloads are padded to the fixed size of their wire plan."""
import gc
import json
import math

import pytest
import torch

from lgreco import ScheduleError, ScheduleHook, make_schedule, parse_method, wire_bytes


def test_topk_dgc_params_defaults_and_ranges():
    m = parse_method({"method": "topk", "params": {}})
    assert m.params["momentum"] == 0 and m.params["warmup_steps"] == 0
    m = parse_method({"method": "topk", "params": {"momentum": 0.9, "warmup_steps": 100, "selection": "dgc"}})
    assert m.params["momentum"] == 0.9 and m.params["warmup_steps"] == 100
    # Step-free bytes in the method table are the steady state: warm-up and momentum do not change them.
    assert wire_bytes(m, [1000]) == wire_bytes(parse_method({"method": "topk", "params": {}}), [1000])
    for key, value in [("momentum", 1), ("momentum", -0.5), ("momentum", "0.9"), ("momentum", True),
                       ("warmup_steps", -1), ("warmup_steps", 2.5), ("warmup_steps", "3")]:
        with pytest.raises(ScheduleError) as e:
            parse_method({"method": "topk", "params": {key: value}}, "layers['fc']")
        assert f"'{key}' = {value!r}" in str(e.value) and "layers['fc']" in str(e.value)


def test_step_aware_wire_bytes_follow_the_warmup_density():
    """wire_bytes(method, shape, step): k at d(t) = max(density, 0.25·4^(−floor(t/W))), with the auto
    encoding re-chosen per step; written out here from docs/dgc.md."""
    N = 10_000
    m = parse_method({"method": "topk", "params": {"density": 0.001, "warmup_steps": 500, "momentum": 0.9}})
    stages = [0.25, 0.0625, 0.015625, 0.00390625, 0.001, 0.001]
    for j, d in enumerate(stages):
        k = max(1, math.ceil(d * N))
        want = min(8 * k, -(-N // 8) + 4 * k)
        for t in (500 * j, 500 * j + 499):
            assert wire_bytes(m, [N], t) == want, (t, d)
    assert wire_bytes(m, [N], 10**9) == wire_bytes(m, [N]) == 8 * 10  # steady state: k = 10, pairs
    assert wire_bytes(m, [N], 0) == N // 8 + 4 * 2500  # 25 %: bitmap is cheaper
    assert wire_bytes(m, [N], 1999) == 8 * 40 and wire_bytes(m, [N], 2000) == 8 * 10  # 0.390625 % → 0.1 %
    big = parse_method({"method": "topk", "params": {"density": 0.5, "warmup_steps": 3}})
    assert all(wire_bytes(big, [N], t) == wire_bytes(big, [N]) for t in range(10))  # target ≥ 25 %: no warm-up
    plain = parse_method({"method": "topk", "params": {"density": 0.001, "encoding": "pairs"}})
    assert all(wire_bytes(plain, [N], t) == 80 for t in range(0, 5000, 499))


def test_hook_accepts_momentum_and_warmup(tmp_path):
    model = torch.nn.Linear(8, 4)
    shapes = {n: list(p.shape) for n, p in model.named_parameters()}
    params = {"density": 0.1, "momentum": 0.9, "warmup_steps": 10, "encoding": "pairs"}
    doc = make_schedule([(0, None, "uniform", {n: {"method": "topk", "params": params} for n in shapes})], shapes)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    hook = ScheduleHook(model, str(path))
    # 32 + 4 elements: 25 % during the first 10 steps, then the 10 % target (pairs: 8k bytes)
    assert hook.predicted_bytes_per_step(0) == 8 * (8 + 1) and hook.predicted_bytes_per_step(9) == 8 * (8 + 1)
    assert hook.predicted_bytes_per_step(10) == 8 * (4 + 1) == doc["phases"][0]["predicted"]["bytes_per_step"]


@pytest.mark.parametrize("params", [{"selection": "dgc"}, {"encoding": "delta"},
                                    {"selection": "dgc", "momentum": 0.9, "warmup_steps": 5}])
def test_hook_sends_data_dependent_codes_at_their_fixed_wire_size(tmp_path, params):
    """DGC selection and delta codes have a data-dependent length; the hook pads them to the wire
    plan's worst case, so a single-process step sends exactly the predicted bytes."""
    import torch.distributed as dist
    model = torch.nn.Linear(64, 32)
    shapes = {n: list(p.shape) for n, p in model.named_parameters()}
    path = tmp_path / "s.json"
    doc = make_schedule([(0, None, "uniform", {n: {"method": "topk", "params": dict(params, density=0.05)}
                                              for n in shapes})], shapes)
    path.write_text(json.dumps(doc))
    # A file rendezvous: no TCP port that a test running in parallel (pytest -n) could also take.
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/rendezvous", rank=0, world_size=1)
    sent, predicted = [], []
    try:
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        hook = ScheduleHook(ddp, str(path)).register(ddp)
        for step in range(3):
            ddp(torch.randn(4, 64)).square().sum().backward()
            sent.append(hook.bytes_sent_per_step[step])
            predicted.append(hook.predicted_bytes_per_step(step))
        # Tear down in the order the spawned workers use (py_ddp_workers._entry): a gloo thread may
        # still be releasing the last step's Python callback, which needs the GIL; if DDP's Reducer
        # held the last reference to the group when it is freed, it would join that thread while
        # holding the GIL (a deadlock seen once under pytest -n 2). The barrier lets the thread
        # finish, and the DDP object goes while the group is still registered.
        dist.barrier()
        del hook, ddp
        gc.collect()
    finally:
        dist.destroy_process_group()
    assert sent == predicted


def test_hook_refuses_a_schedule_whose_wire_plans_contradict_its_prediction(tmp_path):
    model = torch.nn.Linear(8, 4)
    shapes = {n: list(p.shape) for n, p in model.named_parameters()}
    doc = make_schedule([(0, None, "uniform", {n: {"method": "topk", "params": {}} for n in shapes})], shapes)
    doc["phases"][0]["predicted"]["bytes_per_step"] += 1
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ScheduleError) as e:
        ScheduleHook(model, str(path))
    assert "phases[0].predicted.bytes_per_step" in str(e.value), str(e.value)


def test_plan_with_dgc_topk_and_bad_momentum_in_a_schedule(tmp_path, lgreco):
    """Planning a DGC top-k family runs (momentum correction in the replay's trajectory), every
    top-k setting of the schedule keeps the DGC params, and a schedule with momentum out of range
    is refused naming the parameter and the value."""
    from e2e_traces import tiny_model_trace

    trace, sched = tmp_path / "t.h5", tmp_path / "s.json"
    tiny_model_trace(trace, bursts=2, burst_length=12)
    lgreco("plan", "--trace", trace, "--family", "topk", "--error-mode", "trajectory", "--default",
           "density=0.01,selection=dgc,momentum=0.9,warmup_steps=3", "-o", sched, check=True)
    lgreco("schedule", "validate", sched, check=True)
    doc = json.loads(sched.read_text())
    topk = [m for ph in doc["phases"] for m in ph["layers"].values() if m["method"] == "topk"]
    assert topk and all(m["params"]["momentum"] == 0.9 and m["params"]["warmup_steps"] == 3
                        and m["params"]["selection"] == "dgc" for m in topk)
    topk[0]["params"]["momentum"] = 1.5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    p = lgreco("schedule", "validate", bad)
    assert p.returncode != 0 and "'momentum' = '1.5'" in p.stderr and "[0, 1)" in p.stderr, p.stderr
