"""Python fallback planner: a PowerSGD schedule (per-layer ranks, or uniform) from a recorded trace.

    /usr/bin/python3 examples/plan_from_trace.py --trace T.h5 --rank 4 --warmup 30 -o schedule.json [--uniform]
"""
import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from lgreco.planning import plan_powersgd  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--uniform", action="store_true")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    out = pathlib.Path(a.output)
    if out.exists() and not a.force:
        sys.exit(f"plan_from_trace: error: {out} exists (use --force)")
    doc = plan_powersgd(a.trace, rank=a.rank, warmup=a.warmup, alpha=a.alpha, uniform=a.uniform)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(out)
    p = doc["predicted"]
    print(f"{out}: bytes/step {p['bytes_per_step']} (uniform {p['uniform_bytes_per_step']}, "
          f"uncompressed {p['uncompressed_bytes_per_step']}), error {p['total_error']:.4g} "
          f"(uniform {p['uniform_total_error']:.4g})")


if __name__ == "__main__":
    main()
