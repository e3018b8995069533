"""One step-time prediction: for the same trace, schedule and topology, `plan --trace`, `simulate`
and `whatif` give the same step time (they all call planner::predict_step with the compute model
of pipeline/predict.hpp), with recorded compute times and with the documented estimate for a trace
that has none — and each says so in one line when it estimates."""
import json

import pytest

TOPO = "4x8xA100-1x25G"


@pytest.mark.parametrize("compute", ["recorded", "estimated"])
def test_plan_simulate_whatif_agree(lgreco, tmp_path, compute):
    trace = tmp_path / "r18.h5"
    extra = ["--compute-tflops", "50"] if compute == "recorded" else []
    lgreco("trace", "synth", "--model", "resnet18", "--steps", "4", "--seed", "1", "--rank-terms", "4", "-o", trace, *extra,
           check=True)
    sched, tables = tmp_path / "s.json", tmp_path / "t.json"
    p = lgreco("plan", "--trace", trace, "--warmup-steps", "0", "--period", "2", "--acc-steps", "2", "--topology", TOPO,
               "-o", sched, "--tables-out", tables, "--format", "json", check=True)
    notes = [l for l in p.stderr.splitlines() if l.startswith("lgreco: note:")]
    assert len(notes) == (1 if compute == "estimated" else 0), p.stderr
    if compute == "estimated":
        assert "resnet18 preset's FLOPs" in notes[0] and "A100" in notes[0]
    planned = json.loads(p.stdout)["predicted"]
    plan_step = planned["step_time_s"]

    sim = lgreco("simulate", "--trace", trace, "--schedule", sched, "--topology", TOPO, "--format", "json", check=True)
    assert len([l for l in sim.stderr.splitlines() if l.startswith("lgreco: note:")]) == len(notes)
    sim_doc = json.loads(sim.stdout)
    assert sim_doc["step_s"] == pytest.approx(plan_step, rel=1e-12)
    assert sim_doc["uncompressed_step_s"] == pytest.approx(planned["uncompressed_step_time_s"], rel=1e-12)
    expected = json.loads(p.stdout)["expected_network_error"]
    assert list(expected["classes"]) == ["rdma"] and sim_doc["expected_network_error"] == expected

    # whatif at the base cluster's own point (4 nodes, 25 Gb/s per node), from the closed loop and
    # from the tables it wrote.
    for source in (["--trace", trace, "--warmup-steps", "0", "--period", "2", "--acc-steps", "2"], ["--tables", tables]):
        w = lgreco("whatif", *source, "--topology", TOPO, "--nodes", "4", "--bandwidth", "25Gbps", "--format", "json",
                   check=True)
        pt = json.loads(w.stdout)["points"][0]
        assert pt["adaptive_step_s"] == pytest.approx(plan_step, rel=1e-12), source
        assert pt["uniform_step_s"] == pytest.approx(planned["uniform_step_time_s"], rel=1e-12), source
        assert pt["uncompressed_step_s"] == pytest.approx(planned["uncompressed_step_time_s"], rel=1e-12), source
        # ... and the same word on how far off its network times may be (the presets' held-out bands of the class).
        assert json.loads(w.stdout)["expected_network_error"] == expected, source
        # ... and the same speedup ranges if the network times were off by the 80 % held-out factor.
        ranges = json.loads(p.stdout)["speedup_range_p80"]
        assert pt["adaptive_speedup_range_p80"] == pytest.approx(ranges["adaptive"], rel=1e-12), source
        assert pt["uniform_speedup_range_p80"] == pytest.approx(ranges["uniform"], rel=1e-12), source
        assert ranges["adaptive"][0] < planned["uncompressed_step_time_s"] / plan_step < ranges["adaptive"][1]


def test_compute_scale_multiplies_recorded_times_and_says_so(lgreco, tmp_path):
    """--compute-scale X: recorded compute times × X (a CPU recording predicted on GPUs), in every command."""
    trace = tmp_path / "r18.h5"
    lgreco("trace", "synth", "--model", "resnet18", "--steps", "2", "--compute-tflops", "50", "-o", trace, check=True)
    base = json.loads(lgreco("simulate", "--trace", trace, "--topology", TOPO, "--format", "json", check=True).stdout)
    p = lgreco("simulate", "--trace", trace, "--topology", TOPO, "--compute-scale", "0.5", "--format", "json", check=True)
    half = json.loads(p.stdout)
    assert "scaled by 0.5" in p.stderr
    # Uncompressed: compute halves, communication (kernel-time free) is the same.
    assert half["config"]["compute"]["forward_s"] == pytest.approx(base["config"]["compute"]["forward_s"] / 2, rel=1e-12)
    assert half["compute_s"] < base["compute_s"]
    assert lgreco("simulate", "--trace", trace, "--topology", TOPO, "--compute-scale", "0").returncode == 2
