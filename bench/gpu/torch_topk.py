#!/usr/bin/env python3
"""Times torch.topk on the GPU for the sizes of lgreco_bench_gpu (k = max(1, ceil(0.01·n))) and
writes JSON, so that the CUDA radix select can be compared with PyTorch on the same machine.

Two variants per size, both with CUDA-event timing, warm-up and the median of repeats:
  topk_abs       torch.topk(x.abs(), k, sorted=False)   (what selecting by |x| costs in PyTorch)
  topk_prepared  torch.topk(a, k, sorted=False) with a = x.abs() computed outside the timing
Each result is checked before timing: the k-th largest |x| equals the one torch.kthvalue finds.
Usage: torch_topk.py --out FILE [--min-log2 12] [--max-log2 25] [--repeats 15] [--warmup 3]
"""
import argparse
import datetime
import json
import math
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-log2", type=int, default=12)
    ap.add_argument("--max-log2", type=int, default=25)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    import torch  # imported here so that --help works without torch

    if not torch.cuda.is_available():
        print("torch_topk.py: no CUDA device visible to PyTorch", file=sys.stderr)
        return 77
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(20261202)

    def median_time(fn):
        for _ in range(a.warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(a.repeats):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1e-3)
        times.sort()
        m = len(times) // 2
        return times[m] if len(times) % 2 else 0.5 * (times[m - 1] + times[m])

    points = []
    for l in range(a.min_log2, a.max_log2 + 1):
        n = 1 << l
        k = max(1, math.ceil(0.01 * n))
        x = torch.randn(n, device=dev, dtype=torch.float32, generator=gen)
        ab = x.abs()
        vals, _ = torch.topk(ab, k, sorted=False)
        kth = torch.kthvalue(ab.cpu(), n - k + 1).values.item()
        if vals.min().item() != kth:
            print(f"torch_topk.py: validation failed at n={n}", file=sys.stderr)
            return 1
        t_abs = median_time(lambda: torch.topk(x.abs(), k, sorted=False))
        t_prep = median_time(lambda: torch.topk(ab, k, sorted=False))
        points.append({"n": n, "k": k, "topk_abs_us": t_abs * 1e6, "topk_prepared_us": t_prep * 1e6,
                       "topk_abs_input_GBps": 4 * n / t_abs / 1e9, "topk_prepared_input_GBps": 4 * n / t_prep / 1e9})
        print(f"torch.topk n=2^{l} k={k}: {t_abs*1e6:.1f} us (with abs), {t_prep*1e6:.1f} us (prepared)", file=sys.stderr)
    doc = {"schema_version": 1, "kind": "lgreco-torch-topk-bench",
           "context": {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0),
                       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "command": " ".join(sys.argv), "repeats": a.repeats, "warmup": a.warmup, "statistic": "median"},
           "definitions": {"k": "max(1, ceil(0.01*n))", "input_GBps": "4*n/time", "data": "torch.randn fp32"},
           "points": points}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
