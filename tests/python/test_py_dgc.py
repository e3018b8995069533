"""DGC's top-k parameters on the Python side: the method table accepts momentum and warmup_steps
(defaults 0, ranges checked with the field and value named), and the DDP hook refuses what it does
not implement (momentum correction, warm-up) instead of silently running plain top-k."""
import json

import pytest
import torch

from lgreco import ScheduleError, ScheduleHook, make_schedule, parse_method, wire_bytes


def test_topk_dgc_params_defaults_and_ranges():
    m = parse_method({"method": "topk", "params": {}})
    assert m.params["momentum"] == 0 and m.params["warmup_steps"] == 0
    m = parse_method({"method": "topk", "params": {"momentum": 0.9, "warmup_steps": 100, "selection": "dgc"}})
    assert m.params["momentum"] == 0.9 and m.params["warmup_steps"] == 100
    # Bytes in the method table are the steady state: warm-up and momentum do not change them.
    assert wire_bytes(m, [1000]) == wire_bytes(parse_method({"method": "topk", "params": {}}), [1000])
    for key, value in [("momentum", 1), ("momentum", -0.5), ("momentum", "0.9"), ("momentum", True),
                       ("warmup_steps", -1), ("warmup_steps", 2.5), ("warmup_steps", "3")]:
        with pytest.raises(ScheduleError) as e:
            parse_method({"method": "topk", "params": {key: value}}, "layers['fc']")
        assert f"'{key}' = {value!r}" in str(e.value) and "layers['fc']" in str(e.value)


@pytest.mark.parametrize("params,word", [({"momentum": 0.9}, "momentum"), ({"warmup_steps": 10}, "warmup_steps"),
                                         ({"selection": "dgc"}, "dgc")])
def test_hook_rejects_what_it_does_not_implement(tmp_path, params, word):
    model = torch.nn.Linear(8, 4)
    shapes = {n: list(p.shape) for n, p in model.named_parameters()}
    doc = make_schedule([(0, None, "uniform", {n: {"method": "topk", "params": params} for n in shapes})], shapes)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ScheduleError) as e:
        ScheduleHook(model, str(path))
    assert word in str(e.value) and "not supported by the DDP hook" in str(e.value)
    # The same schedule with the defaults is accepted.
    ok = make_schedule([(0, None, "uniform", {n: {"method": "topk", "params": {}} for n in shapes})], shapes)
    path.write_text(json.dumps(ok))
    ScheduleHook(model, str(path))


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
    assert p.returncode != 0 and "'momentum' = 1.5" in p.stderr and "[0, 1)" in p.stderr, p.stderr
