#!/usr/bin/python3
"""Helpers of `make demo` (scripts/demo.sh).

  demo_report.py scale --topology-json T.json --fraction 0.4 -o scale.json
      measures this CPU's fp32 matrix-product throughput (torch, one thread, as the recorded job ran)
      and writes the factor that turns the trace's recorded CPU compute times into the topology GPU's:
      X = CPU FLOP/s / (fraction x GPU dense 16-bit peak); prints the formula in one line.
  demo_report.py summary --schedule S.json --whatif W.json [--exposed 0.5]
      prints what the plan and the what-if grid show: bytes per step at equal error, and the adaptive
      schedule's step-time gain over uniform where communication is exposed.

Exits 1 with a one-line message on bad input.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time


class DemoError(Exception):
    pass


def load_json(path, kind=None):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise DemoError(f"{path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise DemoError(f"{path}: not JSON ({e.msg}, line {e.lineno})") from None
    if kind is not None and (not isinstance(doc, dict) or doc.get("kind") != kind):
        raise DemoError(f"{path}: kind is {doc.get('kind') if isinstance(doc, dict) else None!r}, expected {kind!r}")
    return doc


def field(doc, path, keys):
    cur = doc
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            raise DemoError(f"{path}: lacks {'.'.join(keys)}")
        cur = cur[k]
    if isinstance(cur, bool) or not isinstance(cur, (int, float)):
        raise DemoError(f"{path}: {'.'.join(keys)} is {cur!r}, expected a number")
    return float(cur)


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(path, doc):
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".demo-", suffix=".json", dir=folder)
    os.chmod(tmp, 0o666 & ~current_umask())  # as open() would create it, not mkstemp's 0600
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def matmul_flops(n=512, seconds=1.0, repeats=3):
    """fp32 n x n x n products per second x 2n^3, one thread; the median of `repeats` timed runs. On
    a shared machine this is the throughput under the load of the moment, as the recorded compute
    times were: the ratio of the two is what the scale needs."""
    import torch
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g)
    b = torch.randn(n, n, generator=g)
    torch.mm(a, b)
    rates = []
    for _ in range(repeats):
        k, t0 = 0, time.perf_counter()
        while True:
            torch.mm(a, b)
            k += 1
            dt = time.perf_counter() - t0
            if dt >= seconds:
                break
        rates.append(2.0 * n ** 3 * k / dt)
    return statistics.median(rates)


def cmd_scale(a):
    if not 0 < a.fraction <= 1:
        raise DemoError(f"--fraction {a.fraction}: expected a number in (0, 1]")
    topo = load_json(a.topology_json, "lgreco-net-topology")
    peak = field(topo, a.topology_json, ["gpu", "dense_peak_tflops"]) * 1e12
    name = topo["gpu"].get("name", "GPU")
    if peak <= 0:
        raise DemoError(f"{a.topology_json}: gpu.dense_peak_tflops is {peak / 1e12}, expected > 0")
    cpu = matmul_flops()
    x = cpu / (a.fraction * peak)
    write_json(a.out, {"compute_scale": x, "cpu_matmul_flops": cpu, "gpu": name, "gpu_dense_peak_flops": peak,
                       "fraction": a.fraction, "matmul": "fp32 512x512x512, torch, 1 thread, median of 3 x 1 s"})
    print(f"compute scale X = CPU fp32 matmul {cpu / 1e9:.2f} GFLOP/s (measured, 1 thread) / ({a.fraction:g} x "
          f"{name} dense peak {peak / 1e12:g} TFLOP/s) = {x:.3g}: recorded CPU compute times x X = the {name}'s")


def fmt_bytes(b):
    return f"{b / 1024:.1f} KiB" if b < 1024 ** 2 else f"{b / 1024 ** 2:.2f} MiB"


def fmt_s(s):
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} us"


def cmd_summary(a):
    sched = load_json(a.schedule)
    pred = sched.get("predicted") if isinstance(sched, dict) else None
    if not isinstance(pred, dict):
        raise DemoError(f"{a.schedule}: lacks predicted (not a schedule written by lgreco plan?)")
    ub = field(sched, a.schedule, ["predicted", "uniform_bytes_per_step"])
    ab = field(sched, a.schedule, ["predicted", "bytes_per_step"])
    ue = field(sched, a.schedule, ["predicted", "uniform_total_error"])
    ae = field(sched, a.schedule, ["predicted", "total_error"])
    us = field(sched, a.schedule, ["predicted", "uniform_step_time_s"])
    ast = field(sched, a.schedule, ["predicted", "step_time_s"])
    if ab <= 0 or ast <= 0:
        raise DemoError(f"{a.schedule}: predicted bytes or step time is not > 0")
    topo = sched.get("config", {}).get("topology", {}).get("name", "the plan's topology")
    w = load_json(a.whatif, "lgreco-whatif")
    pts = w.get("points")
    if not isinstance(pts, list) or not pts:
        raise DemoError(f"{a.whatif}: no points")
    for i, p in enumerate(pts):
        for k in ("nodes", "bandwidth_Gbps", "uniform_step_s", "adaptive_step_s", "uniform_exposed_comm_s"):
            field({f"points[{i}]": p}, a.whatif, [f"points[{i}]", k])
        if p["adaptive_step_s"] <= 0:
            raise DemoError(f"{a.whatif}: points[{i}].adaptive_step_s is not > 0")
    verdict = "fewer" if ab < ub else ("the same" if ab == ub else "MORE")
    print(f"bytes per step at equal error (alpha = 1, the last window's plan): uniform {fmt_bytes(ub)}, adaptive "
          f"{fmt_bytes(ab)}: {ub / ab:.2f}x {verdict} bytes (planned total error {ae:.4g} vs uniform {ue:.4g})")
    print(f"step time on {topo}: uniform {fmt_s(us)}, adaptive {fmt_s(ast)}: adaptive gain {us / ast:.2f}x")
    exposed = [p for p in pts if p["uniform_exposed_comm_s"] >= a.exposed * p["uniform_step_s"]]
    hidden = [p for p in pts if p not in exposed]
    if exposed:
        g = [p["uniform_step_s"] / p["adaptive_step_s"] for p in exposed]
        best = max(exposed, key=lambda p: p["uniform_step_s"] / p["adaptive_step_s"])
        print(f"what-if, {len(exposed)} of {len(pts)} points where communication is exposed (>= {a.exposed:.0%} of "
              f"the uniform step): adaptive gain over uniform {min(g):.2f}x .. {max(g):.2f}x, median "
              f"{statistics.median(g):.2f}x (best: {best['nodes']} nodes at {best['bandwidth_Gbps']:.3g} Gb/s)")
    else:
        print(f"what-if: at no point is communication >= {a.exposed:.0%} of the uniform step")
    if hidden:
        g = [p["uniform_step_s"] / p["adaptive_step_s"] for p in hidden]
        print(f"what-if, the other {len(hidden)} points (communication mostly hidden or within one node): "
              f"{min(g):.2f}x .. {max(g):.2f}x")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("scale", help="compute scale from a measured CPU matmul throughput")
    s.add_argument("--topology-json", required=True, help="`lgreco net topology T --format json` output")
    s.add_argument("--fraction", type=float, default=0.4, help="achieved fraction of the GPU's dense peak")
    s.add_argument("-o", "--out", required=True)
    m = sub.add_parser("summary", help="what the plan and the what-if grid show")
    m.add_argument("--schedule", required=True)
    m.add_argument("--whatif", required=True, help="`lgreco whatif --format json` output")
    m.add_argument("--exposed", type=float, default=0.5,
                   help="a point counts as communication-exposed when the uniform schedule's exposed "
                        "communication is at least this fraction of its step (default 0.5)")
    a = ap.parse_args(argv)
    try:
        (cmd_scale if a.cmd == "scale" else cmd_summary)(a)
    except DemoError as e:
        print(f"demo_report: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
