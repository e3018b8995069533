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
