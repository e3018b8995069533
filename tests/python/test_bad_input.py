"""Bad input corpus. Every case runs one lgreco command on a generated bad input and checks the
contract of README ("Exit codes"): exit 1 (input) or 2 (usage); stderr is exactly one line starting
`lgreco: error:` (one prefix) that names the file, field and value (the case's needles); nothing is
printed on standard output (except by the validators of `report=` cases, which list every problem
there); no output and no temporary file (`*.tmp.*`) appears in the case's folder; a pre-existing
output (`out=`) is byte-identical afterwards.

Adding a case is one line in CASES: C(id, [args with {d} for the case folder], [needles], code,
make=maker, out=name). Makers are in bad_inputs.py (generic files, edits of the session's valid
base files); nothing is committed, every file is generated. Interruption (SIGINT/SIGTERM, once and
twice) is in test_interrupt_signals.py.

Sections: options; JSON limits; each input format (traces, tables JSON and HDF5, schedules,
topologies, network fits, nccl-tests logs, kernel profiles, layers files) through the commands that
read it; then every range of the method registry, one step outside on each side, in a schedule read
by `schedule validate` and by `replay`, which must refuse it with the same line (and accept the
range's edges: test_validate_and_replay_accept_range_edges).

`make test-sanitize` runs this file against the AddressSanitizer + UBSan binary too: a sanitizer
report is extra stderr lines or a changed exit code, so it fails the case.
"""
import json
import os
import resource
import subprocess
from dataclasses import dataclass
from typing import Callable, List, Optional

import h5py
import numpy as np
import pytest

import bad_inputs as B
from bad_inputs import copy_of, cut, deep_json, h5_edit, json_edit, noise, sparse, text, text_edit
from conftest import lgreco_bin

TOPO = "2x8xA100-1x25G"
SENTINEL = b"the user's old output: must survive\n"


@dataclass
class C:
    id: str
    args: List[str]
    needles: List[str]
    code: int = 1
    make: Optional[Callable] = None
    out: Optional[str] = None  # existing output in the case folder that must stay byte-identical
    fsize: Optional[int] = None  # RLIMIT_FSIZE in bytes (`ulimit -f`): writes beyond it fail
    stdout: Optional[str] = None  # where standard output goes (default: a pipe)
    report: bool = False  # a validator that lists every problem on standard output (others print nothing)


def attr(path, key, value):
    """An h5py edit setting attribute `key` of the object at `path` ("/" for the root)."""
    return lambda f: f[path].attrs.__setitem__(key, value)


def layer_attr(i, key, value):
    return attr(f"layers/{i:06d}", key, value)


def layer_attrs(i, **values):
    return lambda f: f[f"layers/{i:06d}"].attrs.update(values)


def set_tables(path, value):
    """A JSON edit setting doc[path[0]][path[1]]... = value."""
    def edit(doc):
        for k in path[:-1]:
            doc = doc[k]
        doc[path[-1]] = value
    return edit


def replace_grad(i, data):
    def edit(f):
        del f[f"layers/{i:06d}/grad"]
        f[f"layers/{i:06d}/grad"] = data
    return edit


def replace_dataset(path, data):
    def edit(f):
        del f[path]
        f[path] = data
    return edit


def drop_layers(f):
    del f["layers"]
    f.create_group("layers")


U64, I64, F64 = np.uint64, np.int64, np.float64
NAN = float("nan")
TRACE = "{d}/trace.h5"
TABLES = "{d}/tables.json"
TABLES_H5 = "{d}/tables.h5"
TOPO_JSON = "{d}/topology.json"


def topo(edit):
    return json_edit("topology.json", edit)


def node(i, key, value):
    return topo(lambda doc: doc["nodes"][i].__setitem__(key, value))


def log_with(header="", row=None):
    body = B.nccl_log(extra_header=header)
    if row is not None:
        body += row + "\n"
    return text("sweep.log", body)


CASES = [
    # --- command-line options (usage errors, exit 2) ---------------------------------------------
    C("nodes-2^32+1", ["whatif", "--tables", "{d}/none.json", "--topology", TOPO, "--bandwidth", "10Gbps",
                       "--nodes", "4294967297"], ["--nodes", "4294967297", "out of range"], 2),
    C("synth-steps-2^32+1", ["trace", "synth", "--model", "resnet18", "--steps", "4294967297", "-o", "{d}/t.h5"],
      ["--steps", "4294967297", "out of range"], 2),
    C("synth-world-size-20-digits", ["trace", "synth", "--model", "resnet18", "--steps", "1", "--world-size",
                                     "99999999999999999999", "-o", "{d}/t.h5"], ["--world-size", "99999999999999999999"], 2),
    C("synth-seed-negative", ["trace", "synth", "--model", "resnet18", "--steps", "1", "--seed", "-1", "-o", "{d}/t.h5"],
      ["--seed", "-1", "out of range"], 2),
    C("synth-spacing-int64-max", ["trace", "synth", "--model", "resnet18", "--steps", "4", "--bursts", "2",
                                  "--burst-spacing", "9223372036854775807", "-o", "{d}/t.h5"], ["--burst-spacing"], 2),
    C("synth-steps-not-integer", ["trace", "synth", "--model", "resnet18", "--steps", "12x", "-o", "{d}/t.h5"],
      ["--steps", "'12x'"], 2),
    C("synth-tflops-nan", ["trace", "synth", "--model", "resnet18", "--steps", "1", "--compute-tflops", "nan",
                           "-o", "{d}/t.h5"], ["--compute-tflops", "'nan'"], 2),
    C("synth-empty-output", ["trace", "synth", "--model", "resnet18", "--steps", "1", "-o", ""], ["'-o/--output'", "non-empty"], 2),
    C("export-empty-output", ["export", "{d}/schedule.json", "--to", "csv", "-o", ""], ["'-o/--output'", "non-empty"], 2,
      make=copy_of("schedule.json")),
    C("export-unknown-option-one-prefix", ["export", "--bogus"], ["error: export: unknown option '--bogus'"], 2),
    C("ranks-beyond-range", ["net", "topology", TOPO, "--ranks", "99999999999"], ["--ranks", "99999999999"], 2),
    # The job's NCCL environment: NCCL's list syntax, strictly (a huge list is read, not hung on).
    C("nccl-env-unknown-algo", ["net", "predict", "--topology", TOPO, "--sizes", "1M", "--nccl-env", "NCCL_ALGO=Rnig"],
      ["--nccl-env", "Rnig"], 2),
    C("nccl-env-unfollowed-variable", ["simulate", "--model", "resnet18", "--topology", TOPO, "--nccl-env", "NCCL_IB_HCA=mlx5_0"],
      ["--nccl-env", "NCCL_IB_HCA"], 2),
    C("nccl-env-huge-list", ["net", "predict", "--topology", TOPO, "--sizes", "1M", "--nccl-env",
                             "NCCL_ALGO=" + "ring," * 20000 + "bogus"], ["--nccl-env", "bogus"], 2),
    C("nccl-env-leaves-nothing", ["net", "predict", "--topology", TOPO, "--sizes", "1M", "--nccl-env",
                                  "NCCL_ALGO=PAT"], ["no algorithm available", "NCCL_ALGO=PAT"], 1),
    C("nccl-env-function-as-protocol", ["whatif", "--tables", "{d}/none.json", "--topology", TOPO, "--nccl-env",
                                         "NCCL_PROTO=allreduce"], ["--nccl-env", "allreduce"], 2),
    C("unknown-command-newline", ["bad\ncommand"], ["unknown command 'bad\\ncommand'"], 2),
    C("empty-positional", ["schedule", "show", ""], ["argument", "empty"], 2),

    # --- JSON: depth, numbers, sizes, non-JSON files ---------------------------------------------
    C("deep-schedule", ["schedule", "show", "{d}/deep.json"], ["deep.json", "nested deeper than 512"], make=deep_json("deep.json")),
    C("deep-schedule-export", ["export", "{d}/deep.json", "--to", "csv", "-o", "{d}/out.csv", "--force"],
      ["deep.json", "512"], make=deep_json("deep.json"), out="out.csv"),
    C("deep-topology", ["net", "topology", "{d}/deep.json"], ["deep.json", "512"], make=deep_json("deep.json")),
    C("deep-fit", ["net", "predict", "--topology", TOPO, "--network-fit", "{d}/deep.json", "--sizes", "1M"],
      ["deep.json", "512"], make=deep_json("deep.json")),
    C("deep-tables-info", ["tables", "info", "{d}/deep.json"], ["deep.json", "512"], make=deep_json("deep.json")),
    C("deep-tables-convert", ["tables", "convert", "{d}/deep.json", "-o", "{d}/out.h5", "--force"], ["deep.json", "512"],
      make=deep_json("deep.json"), out="out.h5"),
    C("deep-provenance", ["schedule", "show", "{d}/schedule.json"], ["schedule.json", "512"],
      make=text("schedule.json", '{"schema_version": 1, "provenance": ' + "[" * B.DEEP + "]" * B.DEEP + "}")),
    C("number-1e400-schedule", ["schedule", "show", "{d}/n.json"], ["n.json", "1e400"], make=text("n.json", '{"a": 1e400}')),
    C("number-1e400-tables", ["tables", "info", "{d}/n.json"], ["n.json", "1e400"],
      make=text("n.json", '{"schema_version": 1, "world_size": -1e400}')),
    C("number-1e400-topology", ["net", "topology", "{d}/n.json"], ["n.json", "1e400"], make=text("n.json", "[1e400]")),
    C("number-1e400-fit", ["net", "predict", "--topology", TOPO, "--network-fit", "{d}/n.json", "--sizes", "1M"],
      ["n.json", "1e400"], make=text("n.json", '{"x": 1e400}')),
    C("dev-zero-schedule", ["schedule", "show", "/dev/zero"], ["/dev/zero", "not a regular file"]),
    C("dev-zero-tables", ["tables", "info", "/dev/zero"], ["/dev/zero", "not a regular file"]),
    C("dev-zero-trace", ["trace", "info", "/dev/zero"], ["/dev/zero", "not a regular file"]),
    C("dev-zero-nccl-log", ["net", "calibrate", "/dev/zero", "--topology", TOPO, "-o", "{d}/fit.json"],
      ["/dev/zero", "not a regular file"]),
    C("dev-zero-fit", ["net", "predict", "--topology", TOPO, "--network-fit", "/dev/zero", "--sizes", "1M"], ["/dev/zero"]),
    C("sparse-3GiB-schedule", ["schedule", "show", "{d}/huge.json"], ["huge.json", "3 GiB", "larger than"], make=sparse("huge.json")),
    C("sparse-3GiB-tables", ["tables", "convert", "{d}/huge.json", "-o", "{d}/out.json", "--force"], ["huge.json", "larger than"],
      make=sparse("huge.json"), out="out.json"),
    C("sparse-nccl-log", ["net", "calibrate", "{d}/huge.log", "--topology", TOPO, "-o", "{d}/fit.json"], ["huge.log", "larger than"],
      make=sparse("huge.log", 1 << 30)),
    C("hdf5-as-schedule", ["schedule", "show", "{d}/trace.h5"], ["trace.h5 is an HDF5 file, not JSON"], make=copy_of("trace.h5")),
    C("hdf5-as-topology", ["net", "topology", "{d}/trace.h5"], ["trace.h5 is an HDF5 file, not JSON"], make=copy_of("trace.h5")),
    C("hdf5-as-fit", ["net", "predict", "--topology", TOPO, "--network-fit", "{d}/t.h5", "--sizes", "1M"],
      ["t.h5 is an HDF5 file"], make=copy_of("trace.h5", "t.h5")),
    C("binary-as-schedule", ["schedule", "show", "{d}/b.json"], ["b.json is a binary file", "offset 2"],
      make=text("b.json", b'{"\x00\x01\xff')),
    C("control-bytes-in-json", ["schedule", "show", "{d}/c.json"], ["c.json", "malformed JSON"], make=text("c.json", b"{\x1b[2J\x07}")),
    C("schedule-version-2^32+1", ["schedule", "show", "{d}/schedule.json"], ["schema_version", "4294967297", "out of range"],
      make=json_edit("schedule.json", set_tables(["schema_version"], 2**32 + 1))),

    # --- tables (JSON) ----------------------------------------------------------------------------
    C("tables-world-size-2^32+8", ["tables", "info", TABLES], ["tables.json", "world_size", "4294967304", "out of range"],
      make=json_edit("tables.json", set_tables(["world_size"], 2**32 + 8))),
    C("tables-world-size-2^62", ["tables", "info", TABLES], ["world_size", "4611686018427387904"],
      make=json_edit("tables.json", set_tables(["world_size"], 2**62))),
    C("tables-version-2^32+1", ["tables", "convert", TABLES, "-o", "{d}/out.h5", "--force"], ["schema_version", "4294967297"],
      make=json_edit("tables.json", set_tables(["schema_version"], 2**32 + 1)), out="out.h5"),
    C("tables-bucket-2^32", ["tables", "info", TABLES], ["bucket", "4294967296"],
      make=json_edit("tables.json", set_tables(["windows", 0, "layers", 0, "bucket"], 2**32))),
    C("tables-shape-uint64", ["tables", "info", TABLES], ["shape", "18446744073709551615"],
      make=json_edit("tables.json", set_tables(["windows", 0, "layers", 0, "shape"], [2**64 - 1, 1]))),
    C("tables-unknown-key-newline", ["tables", "info", TABLES], ["'bad\\nkey'"],
      make=json_edit("tables.json", set_tables(["bad\nkey"], 1))),

    # --- tables (HDF5) ----------------------------------------------------------------------------
    C("tables-h5-world-size-2^32+8", ["tables", "info", TABLES_H5], ["tables.h5", "world_size", "4294967304"],
      make=h5_edit("tables.h5", attr("/", "world_size", I64(2**32 + 8)))),
    C("tables-h5-world-size-uint64-max", ["tables", "info", TABLES_H5], ["world_size", "18446744073709551615"],
      make=h5_edit("tables.h5", attr("/", "world_size", U64(2**64 - 1)))),
    C("tables-h5-version-2^32+1", ["tables", "info", TABLES_H5], ["schema_version", "4294967297"],
      make=h5_edit("tables.h5", attr("/", "schema_version", I64(2**32 + 1)))),
    C("tables-h5-deep-provenance", ["tables", "convert", TABLES_H5, "-o", "{d}/out.json", "--force"],
      ["tables.h5", "provenance", "nested deeper than 512"],
      make=h5_edit("tables.h5", attr("/", "provenance", "[" * B.DEEP + "]" * B.DEEP)), out="out.json"),
    C("tables-h5-1e400-provenance", ["tables", "info", TABLES_H5], ["provenance", "1e400"],
      make=h5_edit("tables.h5", attr("/", "provenance", '{"x": 1e400}'))),

    # --- traces (HDF5) ----------------------------------------------------------------------------
    C("trace-world-size-2^32+8", ["trace", "info", TRACE], ["trace.h5", "world_size", "4294967304", "expected 1 to 2147483647"],
      make=h5_edit("trace.h5", attr("/", "world_size", I64(2**32 + 8)))),
    C("trace-world-size-2^62", ["trace", "validate", TRACE], ["world_size", "4611686018427387904"],
      make=h5_edit("trace.h5", attr("/", "world_size", I64(2**62)))),
    C("trace-world-size-uint64-max", ["trace", "info", TRACE], ["world_size", "18446744073709551615", "int64"],
      make=h5_edit("trace.h5", attr("/", "world_size", U64(2**64 - 1)))),
    C("trace-version-2^32+1", ["trace", "info", TRACE], ["version 4294967297"],
      make=h5_edit("trace.h5", attr("/", "version", I64(2**32 + 1)))),
    C("trace-bucket-2^32", ["trace", "info", TRACE], ["emb.weight", "bucket", "4294967296"],
      make=h5_edit("trace.h5", layer_attr(0, "bucket", I64(2**32)))),
    C("trace-backward-order-2^40", ["trace", "validate", TRACE], ["backward_order", "1099511627776"],
      make=h5_edit("trace.h5", layer_attr(1, "backward_order", I64(2**40)))),
    C("trace-shape-wraps-to-numel", ["trace", "info", TRACE], ["shape", "6148914691236517206", "int64"],
      make=h5_edit("trace.h5", layer_attrs(0, shape=I64([3, 6148914691236517206]), numel=I64(2)))),
    C("trace-shape-2^32-squared", ["trace", "validate", TRACE], ["shape", "[4294967296, 4294967296]"],
      make=h5_edit("trace.h5", layer_attrs(1, shape=I64([2**32, 2**32]), numel=I64(0)))),
    C("trace-zero-layers", ["trace", "validate", TRACE], ["trace.h5", "no layer groups"], make=h5_edit("trace.h5", drop_layers)),
    C("trace-compute-time-nan", ["trace", "info", TRACE], ["fc.bias", "compute_time_s", "step index 1", "nan"],
      make=h5_edit("trace.h5", replace_dataset("layers/000002/compute_time_s", F64([1e-4, NAN, 1e-4])))),
    C("trace-compute-time-negative", ["trace", "validate", TRACE], ["head.weight", "compute_time_s", "-1"],
      make=h5_edit("trace.h5", replace_dataset("layers/000003/compute_time_s", F64([1e-4, 1e-4, -1.0])))),
    C("trace-layer-name-newline", ["trace", "info", TRACE], ["'fc\\nweight'", "numel"],
      make=h5_edit("trace.h5", layer_attrs(1, name="fc\nweight", numel=I64(5)))),
    C("trace-numel-contradicts-shape", ["trace", "info", "{d}/core.h5"], ["core.h5", "numel", "is 100", "24 elements"],
      make=h5_edit("core.h5", layer_attr(1, "numel", I64(100)))),
    C("trace-dtype-contradicts-dataset", ["trace", "info", "{d}/core.h5"], ["emb.weight", "float32", "float16"],
      make=h5_edit("core.h5", layer_attr(0, "dtype", "float16"))),
    C("trace-core-float64-grad", ["trace", "info", "{d}/core.h5"], ["head.weight", "float64", "no 'dtype' attribute"],
      make=h5_edit("core.h5", replace_grad(3, F64([[0.0] * 12] * 3)))),
    C("trace-not-hdf5", ["trace", "validate", "{d}/t.h5"], ["t.h5", "not an HDF5 file"], make=text("t.h5", "{}")),
    C("trace-directory", ["trace", "info", "{d}"], ["is a directory"]),
    C("trace-plan-bad-trace", ["trace", "info", "{d}/t.h5"], ["t.h5", "world_size", "expected 1 to"],
      make=h5_edit("trace.h5", attr("/", "world_size", I64(0)), "t.h5")),

    # --- topologies -------------------------------------------------------------------------------
    C("topology-host-int-max", ["net", "topology", TOPO_JSON], ["topology.json", "2147483648 hosts", "has host 2147483647", "1024 hosts"],
      make=node(2, "host", 2147483647)),
    C("topology-host-2^32+1", ["net", "topology", TOPO_JSON], ["nodes[2].host", "4294967297", "out of range"],
      make=node(2, "host", 2**32 + 1)),
    C("topology-2000-hosts", ["net", "topology", TOPO_JSON], ["2000 hosts", "has host 1999", "more than the 1024 hosts"],
      make=topo(lambda d: d.update(B.topology_doc(hosts=2000, gpus=1)))),
    C("topology-preset-100000-hosts", ["net", "topology", "100000x8xA100-1x25G"], ["100000x8xA100-1x25G", "65536"]),
    C("topology-preset-2000-hosts", ["net", "topology", "2000x8xA100-1x25G"], ["2000x8xA100-1x25G", "1024 hosts"]),
    C("topology-preset-2000-hosts-predict", ["net", "predict", "--topology", "2000x8xA100-1x25G", "--sizes", "1M"],
      ["1024 hosts"]),
    C("topology-200-gpus-per-host", ["net", "topology", TOPO_JSON], ["200 GPUs", "128"],
      make=topo(lambda d: d.update(B.topology_doc(hosts=1, gpus=200)))),
    C("topology-id-newline", ["net", "topology", TOPO_JSON], ["duplicate node id", "h0\\ngpu"],
      make=topo(lambda d: (d["nodes"][2].__setitem__("id", "h0\ngpu"), d["nodes"][3].__setitem__("id", "h0\ngpu")))),
    C("topology-bandwidth-1e400", ["net", "topology", "{d}/t.json"], ["t.json", "1e400"],
      make=text("t.json", '{"schema_version": 1, "links": [{"bandwidth_GBps": 1e400}]}')),

    # --- nccl-tests logs --------------------------------------------------------------------------
    C("nccl-g-huge", ["net", "calibrate", "{d}/sweep.log", "--topology", TOPO, "-o", "{d}/fit.json"],
      ["sweep.log:", "-g", "99999999999", "out of range"],
      make=log_with("# command: all_reduce_perf -b 8 -e 128M -g 99999999999\n")),
    C("nccl-nthread-huge", ["net", "calibrate", "{d}/sweep.log", "--topology", TOPO, "-o", "{d}/fit.json"],
      ["sweep.log:1", "nThread", "out of range"],
      make=text("sweep.log", B.nccl_log().replace("nThread 1", "nThread 123456789012345678901234567890"))),
    C("nccl-long-line", ["net", "calibrate", "{d}/sweep.log", "--topology", TOPO, "-o", "{d}/fit.json"],
      ["sweep.log:3", "bytes"], make=log_with("#" + "x" * 200000 + "\n")),
    C("nccl-control-chars-row", ["net", "calibrate", "{d}/sweep.log", "--topology", TOPO, "-o", "{d}/fit.json", "--force"],
      ["sweep.log:", "cannot parse", "\\x1B"], make=log_with(row="1024 \x1b[31m\rbad"), out="fit.json"),
    # --- failed writes and full outputs ----------------------------------------------------------
    C("ulimit-trace-synth", ["trace", "synth", "--model", "resnet18", "--steps", "1", "-o", "{d}/t.h5"],
      ["t.h5", "conv1.weight", "cannot write step index 0"], fsize=8192),
    C("ulimit-trace-synth-force", ["trace", "synth", "--model", "resnet18", "--steps", "1", "-o", "{d}/t.h5", "--force"],
      ["t.h5", "cannot write"], fsize=8192, out="t.h5"),
    C("ulimit-tables-convert-h5", ["tables", "convert", TABLES, "-o", "{d}/out.h5"], ["out.h5", "cannot"],
      make=copy_of("tables.json"), fsize=1024),
    C("ulimit-tables-convert-json", ["tables", "convert", TABLES_H5, "-o", "{d}/out.json"], ["out.json", "cannot write"],
      make=copy_of("tables.h5"), fsize=1024),
    C("ulimit-plan-tables-out-h5", ["plan", "--trace", TRACE, "--topology", TOPO, "-o", "{d}/s.json",
                                    "--tables-out", "{d}/t.h5"], ["t.h5"], make=copy_of("trace.h5"), fsize=1024),
    C("ulimit-schedule-export", ["export", "{d}/schedule.json", "--to", "torch-hook", "-o", "{d}/hook.json"],
      ["hook.json", "write failed"], make=copy_of("schedule.json"), fsize=64),
    C("stdout-full-models", ["models"], ["standard output"], stdout="/dev/full"),
    C("stdout-full-trace-info", ["trace", "info", TRACE, "--format", "json"], ["standard output"],
      make=copy_of("trace.h5"), stdout="/dev/full"),
    C("nccl-no-rows", ["net", "calibrate", "{d}/sweep.log", "--topology", TOPO, "-o", "{d}/fit.json"],
      ["sweep.log", "no nccl-tests result rows"], make=text("sweep.log", "# nothing here\n")),
]

SCHED = "{d}/trace_schedule.json"
FIT = "{d}/fit.json"
LAYERS = "{d}/layers.json"
PROFILE = "{d}/profile.json"
REPLAY = ["replay", "--trace", TRACE, "--schedule", SCHED, "--threads", "1"]
PLAN_TRACE = ["plan", "--trace", TRACE, "--topology", TOPO, "--period", "3", "--acc-steps", "3", "--threads", "1"]


def sched_edit(edit):
    return json_edit("trace_schedule.json", edit)


def trace_and(*makers):
    return B.both(copy_of("trace.h5"), *makers)


def sched_layer(setting, phase=-1, layer="fc.weight"):
    """The trace schedule with one parameter's setting replaced in one phase (its wire plans dropped,
    as a hand edit would)."""
    def edit(doc):
        ph = doc["phases"][phase]
        ph.pop("wire", None)
        ph["layers"][layer] = setting
    return sched_edit(edit)


def tables_layer(key, value, window=0, layer=0):
    return json_edit("tables.json", set_tables(["windows", window, "layers", layer, key], value))


def tables_cand(key, value, window=0, layer=0, cand=0):
    return json_edit("tables.json", set_tables(["windows", window, "layers", layer, "candidates", cand, key], value))


def h5_window(name, data, window=0):
    return h5_edit("tables.h5", replace_dataset(f"windows/{window}/{name}", data))


def fit_edit(edit):
    return json_edit("fit.json", edit)


def profile_edit(edit):
    return json_edit("profile.json", edit)


def layers_edit(edit):
    return json_edit("layers.json", edit)


def grad_values(i, values):
    """Layer i's first-step gradient with its first entries replaced."""
    def edit(f):
        g = f[f"layers/{i:06d}/grad"]
        row = g[0]
        row[: len(values)] = values
        g[0] = row
    return edit


def zero_layer(i):
    def edit(f):
        g = f[f"layers/{i:06d}/grad"]
        g[...] = 0
    return edit


def sweep(rows):
    """nccl-tests output whose result rows are `rows` (size, time in µs)."""
    body = B.nccl_log().split("#       size")[0] + "#       size    count   type  redop root   time  algbw  busbw #wrong   time  algbw  busbw #wrong\n"
    for size, t in rows:
        body += f"{size:>12} {max(1, int(size) // 4):>12} float sum -1 {t:>8} 1.00 1.00  0 {t:>8} 1.00 1.00  0\n"
    return text("sweep.log", body)


# A two-host corpus file: rows at 1 MiB (line 29) and 2 MiB (line 30).
CORPUS_FILE = (B.REPO / "tests" / "data" / "network" / "nebius-h100-2node-ib-nccltests.tsv").read_text()

CALIBRATE = ["net", "calibrate", "{d}/sweep.log", "--topology", TOPO, "-o", "{d}/fit.json"]
VALIDATE_NET = ["net", "validate", "{d}/sweep.log", "--topology", TOPO]

CASES += [
    # --- traces: truncated, random bytes, missing datasets, NaN/Inf, shapes, each command --------
    C("trace-truncated-info", ["trace", "info", TRACE], ["trace.h5"], make=cut("trace.h5")),
    C("trace-truncated-replay", REPLAY, ["trace.h5"], make=B.both(cut("trace.h5"), copy_of("trace_schedule.json"))),
    C("trace-truncated-plan", PLAN_TRACE + ["-o", "{d}/s.json", "--force"], ["trace.h5"], make=cut("trace.h5", 0.8),
      out="s.json"),
    C("trace-truncated-scaleout", ["scaleout", "--trace", TRACE], ["trace.h5"], make=cut("trace.h5", 0.3)),
    C("trace-signature-then-noise", ["trace", "info", "{d}/n.h5"], ["n.h5"], make=noise("n.h5", signature=True)),
    C("trace-noise-simulate", ["simulate", "--trace", "{d}/n.h5", "--topology", TOPO], ["n.h5", "not an HDF5 file"],
      make=noise("n.h5")),
    C("trace-empty-file-whatif", ["whatif", "--trace", "{d}/e.h5", "--topology", TOPO, "--bandwidth", "10Gbps", "--nodes", "2"],
      ["e.h5"], make=text("e.h5", b"")),
    C("trace-missing-steps-scaleout", ["scaleout", "--trace", TRACE], ["trace.h5", "/steps", "missing"],
      make=h5_edit("trace.h5", lambda f: f.__delitem__("steps"))),
    C("trace-missing-grad-plan", PLAN_TRACE + ["-o", "{d}/s.json"], ["trace.h5", "fc.bias", "grad", "missing"],
      make=h5_edit("trace.h5", lambda f: f.__delitem__("layers/000002/grad"))),
    C("trace-missing-layer-group-replay", REPLAY, ["trace.h5", "/layers/000001", "missing"],
      make=B.both(h5_edit("trace.h5", lambda f: f.__delitem__("layers/000001")), copy_of("trace_schedule.json"))),
    C("trace-nan-validate", ["trace", "validate", TRACE], ["trace.h5", "fc.weight", "NaN"],
      make=h5_edit("trace.h5", grad_values(1, [NAN])), report=True),
    C("trace-inf-plan", PLAN_TRACE + ["-o", "{d}/s.json"], ["trace.h5", "fc.weight", "step"],
      make=h5_edit("trace.h5", grad_values(1, [float("inf")]))),
    C("trace-nan-replay", REPLAY, ["trace.h5", "emb.weight", "step"],
      make=B.both(h5_edit("trace.h5", grad_values(0, [1.0, NAN])), copy_of("trace_schedule.json"))),
    C("trace-shape-negative", ["trace", "info", TRACE], ["emb.weight", "shape", "-10"],
      make=h5_edit("trace.h5", layer_attrs(0, shape=I64([-10, -4]), numel=I64(40)))),
    C("trace-shape-zero-dim", ["trace", "validate", TRACE], ["fc.weight", "shape", "[0, 4]"],
      make=h5_edit("trace.h5", layer_attrs(1, shape=I64([0, 4]), numel=I64(0)))),
    C("trace-shape-overflow-simulate", ["simulate", "--trace", TRACE, "--topology", TOPO], ["shape", "4294967296"],
      make=h5_edit("trace.h5", layer_attrs(1, shape=I64([2**32, 2**32]), numel=I64(0)))),
    C("trace-grad-rows-whatif", ["whatif", "--trace", TRACE, "--topology", TOPO, "--bandwidth", "10Gbps", "--nodes", "2"],
      ["trace.h5", "fc.bias", "/layers/000002/grad", "[2, 6]"], make=h5_edit("trace.h5", replace_grad(2, np.zeros((2, 6), np.float32)))),
    C("trace-bucket-negative", ["trace", "info", TRACE], ["trace.h5", "head.weight", "bucket", "-1"],
      make=h5_edit("trace.h5", layer_attr(3, "bucket", I64(-1)))),
    C("trace-steps-float", ["trace", "info", TRACE], ["trace.h5", "/steps"],
      make=h5_edit("trace.h5", replace_dataset("steps", F64([10.0, 11.0, 12.0])))),
    C("trace-steps-repeated-scaleout", ["scaleout", "--trace", TRACE], ["trace.h5", "/steps", "strictly increasing"],
      make=h5_edit("trace.h5", replace_dataset("steps", I64([10, 11, 11])))),
    C("trace-compute-time-short", ["simulate", "--trace", TRACE, "--topology", TOPO], ["fc.bias", "compute_time_s"],
      make=h5_edit("trace.h5", replace_dataset("layers/000002/compute_time_s", F64([1e-4])))),
    C("trace-dtype-unknown", ["trace", "info", TRACE], ["emb.weight", "dtype", "float8"],
      make=h5_edit("trace.h5", layer_attr(0, "dtype", "float8"))),
    C("trace-duplicate-names", ["trace", "validate", TRACE], ["fc.weight", "duplicate"],
      make=h5_edit("trace.h5", layer_attr(0, "name", "fc.weight"))),
    C("trace-format-other-plan", PLAN_TRACE + ["-o", "{d}/s.json"], ["trace.h5", "format", "lgreco-tables"],
      make=h5_edit("trace.h5", attr("/", "format", "lgreco-tables"))),
    C("trace-world-size-zero-whatif", ["whatif", "--trace", TRACE, "--topology", TOPO, "--bandwidth", "10Gbps", "--nodes", "2"],
      ["trace.h5", "world_size", "0"], make=h5_edit("trace.h5", attr("/", "world_size", I64(0)))),
    C("trace-as-schedule-replay", ["replay", "--trace", TRACE, "--schedule", TRACE], ["trace.h5 is an HDF5 file, not JSON"],
      make=copy_of("trace.h5")),
    C("trace-json-as-trace", ["trace", "info", "{d}/t.h5"], ["t.h5", "not an HDF5 file"], make=text("t.h5", '{"steps": []}')),

    # --- tables (JSON) -----------------------------------------------------------------------------
    C("tables-truncated-plan", ["plan", "--tables", TABLES, "--bandwidth", "10Gbps", "-o", "{d}/s.json"], ["tables.json"],
      make=text_edit("tables.json", lambda t: t[: len(t) // 2])),
    C("tables-candidates-empty", ["plan", "--tables", TABLES, "-o", "{d}/s.json"], ["tables.json", "candidates"],
      make=tables_layer("candidates", [])),
    C("tables-default-out-of-range", ["tables", "info", TABLES], ["tables.json", "default", "99"],
      make=tables_layer("default", 99)),
    C("tables-error-nan", ["plan", "--tables", TABLES, "-o", "{d}/s.json"], ["tables.json", "error", "NaN"],
      make=tables_cand("error", NAN)),
    C("tables-error-negative", ["tables", "convert", TABLES, "-o", "{d}/t.h5"], ["tables.json", "error", "-1"],
      make=tables_cand("error", -1.0)),
    C("tables-unknown-method", ["tables", "info", TABLES], ["tables.json", "'lowrank'"],
      make=tables_cand("method", "lowrank")),
    C("tables-param-out-of-range", ["plan", "--tables", TABLES, "-o", "{d}/s.json"], ["tables.json", "rank", "65537"],
      make=tables_cand("params", {"rank": 65537})),
    C("tables-bytes-disagree", ["tables", "info", TABLES], ["tables.json", "bytes", "12345"],
      make=tables_cand("bytes", 12345)),
    C("tables-windows-empty", ["plan", "--tables", TABLES, "-o", "{d}/s.json"], ["tables.json", "windows"],
      make=json_edit("tables.json", set_tables(["windows"], []))),
    C("tables-window-reversed", ["whatif", "--tables", TABLES, "--topology", TOPO, "--bandwidth", "10Gbps", "--nodes", "2"],
      ["tables.json", "window 0", "[100, 50)"], make=json_edit("tables.json", set_tables(["windows", 0, "end_step"], 50))),
    C("tables-numel-not-product", ["tables", "info", TABLES], ["tables.json", "numel", "7"], make=tables_layer("numel", 7)),
    C("tables-duplicate-layer", ["plan", "--tables", TABLES, "-o", "{d}/s.json"], ["tables.json", "fc3.weight", "listed twice"],
      make=json_edit("tables.json", lambda d: d["windows"][0]["layers"].append(dict(d["windows"][0]["layers"][0])))),
    C("tables-unknown-layer-key", ["tables", "info", TABLES], ["tables.json", "'colour'"], make=tables_layer("colour", 1)),
    C("tables-deep-whatif", ["whatif", "--tables", "{d}/deep.json", "--topology", TOPO, "--bandwidth", "10Gbps"],
      ["deep.json", "512"], make=deep_json("deep.json")),

    # --- tables (HDF5) -----------------------------------------------------------------------------
    C("tables-h5-truncated", ["tables", "info", TABLES_H5], ["tables.h5"], make=cut("tables.h5")),
    C("tables-h5-noise-plan", ["plan", "--tables", "{d}/t.h5", "-o", "{d}/s.json"], ["t.h5"],
      make=noise("t.h5", signature=True, seed=2)),
    C("tables-h5-missing-dataset", ["tables", "info", TABLES_H5], ["tables.h5", "candidate_error", "missing"],
      make=h5_edit("tables.h5", lambda f: f.__delitem__("windows/0/candidate_error"))),
    C("tables-h5-strings-for-numbers", ["tables", "convert", TABLES_H5, "-o", "{d}/t.json"], ["tables.h5", "layer_numel"],
      make=h5_window("layer_numel", np.array([b"x"] * 6))),
    C("tables-h5-setting-row", ["tables", "info", TABLES_H5], ["tables.h5", "candidate_setting", "1099511627776"],
      make=h5_edit("tables.h5", lambda f: f["windows/0/candidate_setting"].__setitem__(0, 2**40))),
    C("tables-h5-collective-code", ["tables", "info", TABLES_H5], ["tables.h5", "candidate_collective", "7"],
      make=h5_edit("tables.h5", lambda f: f["windows/0/candidate_collective"].__setitem__(0, 7))),
    C("tables-h5-candidate-counts-wrap", ["tables", "info", TABLES_H5], ["tables.h5", "layer_candidates"],
      make=h5_window("layer_candidates", I64([2**62] * 4 + [0, 0]))),
    C("tables-h5-ndim-33", ["tables", "info", TABLES_H5], ["tables.h5", "layer_ndim", "33"],
      make=h5_edit("tables.h5", lambda f: f["windows/0/layer_ndim"].__setitem__(0, 33))),
    C("tables-h5-error-inf", ["plan", "--tables", TABLES_H5, "-o", "{d}/s.json"], ["tables.h5", "candidate 1", "Infinity"],
      make=h5_edit("tables.h5", lambda f: f["windows/0/candidate_error"].__setitem__(1, np.inf))),

    # --- schedules (JSON) --------------------------------------------------------------------------
    C("schedule-unknown-top-key", ["schedule", "validate", SCHED], ["trace_schedule.json", "'comment'"],
      make=sched_edit(set_tables(["comment"], "hi"))),
    C("schedule-unknown-phase-key", ["export", SCHED, "--to", "csv"], ["trace_schedule.json", "'note'"],
      make=sched_edit(lambda d: d["phases"][0].__setitem__("note", 1))),
    C("schedule-unknown-setting-key", ["schedule", "show", SCHED], ["trace_schedule.json", "'rate'"],
      make=sched_layer({"method": "none", "params": {}, "rate": 1})),
    C("schedule-unknown-method-replay", REPLAY, ["trace_schedule.json", "'lowrank'"],
      make=trace_and(sched_layer({"method": "lowrank", "params": {}}))),
    C("schedule-unknown-param-simulate", ["simulate", "--trace", TRACE, "--topology", TOPO, "--schedule", SCHED],
      ["trace_schedule.json", "'rnak'"], make=trace_and(sched_layer({"method": "powersgd", "params": {"rnak": 2}}))),
    C("schedule-param-type", ["schedule", "validate", SCHED], ["trace_schedule.json", "rank", '"four"'],
      make=sched_layer({"method": "powersgd", "params": {"rank": "four"}})),
    C("schedule-params-not-object", ["schedule", "validate", SCHED], ["trace_schedule.json", "params"],
      make=sched_layer({"method": "powersgd", "params": [4]})),
    C("schedule-truncated", ["schedule", "validate", SCHED], ["trace_schedule.json"],
      make=text_edit("trace_schedule.json", lambda t: t[: len(t) * 2 // 3])),
    C("schedule-truncated-export", ["export", SCHED, "--to", "torch-hook", "-o", "{d}/hook.json", "--force"],
      ["trace_schedule.json"], make=text_edit("trace_schedule.json", lambda t: t[:100]), out="hook.json"),
    C("schedule-phases-overlap", ["schedule", "validate", SCHED], ["trace_schedule.json", "invalid schedule"],
      make=sched_edit(lambda d: d["phases"][-1].__setitem__("start_step", 0)), report=True),
    C("schedule-wire-disagrees", ["schedule", "show", SCHED], ["trace_schedule.json", "wire"],
      make=sched_edit(lambda d: d["phases"][-1]["layers"].__setitem__(
          "emb.weight", {"method": "maxmin", "params": {"bits": 2}}))),
    C("schedule-deep-replay", ["replay", "--trace", TRACE, "--schedule", "{d}/deep.json"], ["deep.json", "512"],
      make=B.both(copy_of("trace.h5"), deep_json("deep.json"))),
    C("schedule-deep-simulate", ["simulate", "--model", "resnet18", "--topology", TOPO, "--schedule", "{d}/deep.json"],
      ["deep.json", "512"], make=deep_json("deep.json")),
    C("schedule-diff-phase-unknown", ["schedule", "diff", SCHED, SCHED, "--phase", "plan-99"],
      ["plan-99", "trace_schedule.json: uniform"], make=copy_of("trace_schedule.json")),
    C("schedule-diff-second-bad", ["schedule", "diff", SCHED, "{d}/b.json"], ["b.json"],
      make=B.both(copy_of("trace_schedule.json"), text("b.json", "{"))),
    C("schedule-layer-not-in-trace", REPLAY, ["trace_schedule.json", "ghost.weight", "not in the trace"],
      make=trace_and(sched_edit(lambda d: [ph["layers"].__setitem__("ghost.weight", {"method": "none", "params": {}})
                                           for ph in d["phases"]]))),
    C("schedule-replay-unknown-phase", REPLAY + ["--phase", "plan-99"], ["plan-99"],
      make=trace_and(copy_of("trace_schedule.json"))),
    C("schedule-simulate-phase-index", ["simulate", "--trace", TRACE, "--topology", TOPO, "--schedule", SCHED, "--phase", "99"],
      ["--phase", "99"], 2, make=trace_and(copy_of("trace_schedule.json"))),
    C("export-cgx-powersgd", ["export", SCHED, "--to", "cgx", "-o", "{d}/cgx.json"], ["fc.weight", "CGX"],
      make=sched_layer({"method": "powersgd", "params": {"rank": 2}})),
    C("export-unknown-target", ["export", SCHED, "--to", "onnx"], ["--to", "onnx"], 2, make=copy_of("trace_schedule.json")),

    # --- topologies --------------------------------------------------------------------------------
    C("topology-link-unknown-node", ["net", "topology", TOPO_JSON], ["topology.json", "h9.gpu0"],
      make=topo(lambda d: d["links"][0].__setitem__("a", "h9.gpu0"))),
    C("topology-bandwidth-negative", ["net", "predict", "--topology", TOPO_JSON, "--sizes", "1M"],
      ["topology.json", "bandwidth_GBps", "-5"], make=topo(lambda d: d["links"][0].__setitem__("bandwidth_GBps", -5))),
    C("topology-bandwidth-zero", ["simulate", "--model", "resnet18", "--topology", TOPO_JSON],
      ["topology.json", "bandwidth_GBps", "0"], make=topo(lambda d: d["links"][1].__setitem__("bandwidth_GBps", 0))),
    C("topology-no-gpus", ["net", "topology", TOPO_JSON], ["topology.json", "GPU"],
      make=topo(lambda d: d.update(nodes=[n for n in d["nodes"] if n["kind"] != "gpu"],
                                   links=[l for l in d["links"] if "gpu" not in l["a"] + l["b"]]))),
    C("topology-disconnected", ["net", "predict", "--topology", TOPO_JSON, "--sizes", "1M"], ["topology.json", "h0.gpu1"],
      make=topo(lambda d: d.update(links=[l for l in d["links"] if l["a"] != "h0.gpu1"]))),
    C("topology-unknown-kind", ["net", "topology", TOPO_JSON], ["topology.json", "quantum"],
      make=node(1, "kind", "quantum")),
    C("topology-transport-plugin", ["net", "topology", TOPO_JSON], ["topology.json", "transport", "plugin", "efa", "tcpxo"],
      make=topo(lambda d: d.update(transport="plugin"))),
    C("topology-efa-generation-9", ["net", "predict", "--topology", TOPO_JSON, "--sizes", "1M"],
      ["topology.json", "efa_generation", "9"], make=topo(lambda d: d.update(transport="efa", efa_generation=9))),
    C("topology-efa-generation-overflow", ["net", "topology", TOPO_JSON], ["topology.json", "efa_generation", "4294967297"],
      make=topo(lambda d: d.update(transport="efa", efa_generation=4294967297))),
    C("topology-efa-generation-on-rdma", ["net", "topology", TOPO_JSON], ["topology.json", "efa_generation", "efa"],
      make=topo(lambda d: d.update(efa_generation=2))),
    C("topology-socket-without-gpudirect", ["net", "topology", TOPO_JSON], ["topology.json", "gpudirect"],
      make=topo(lambda d: d.update(transport="socket", gpudirect=False))),
    C("cluster-efa-unknown-generation", ["net", "topology", "2x2xL40S-1x100G-efa"], ["2x2xL40S-1x100G-efa", "L40S", "-efa1"]),
    C("cluster-sockets-nogdr", ["net", "topology", "2x8xA100-1x25GbE-nogdr"], ["2x8xA100-1x25GbE-nogdr", "-nogdr"]),
    C("topology-unknown-gpu", ["whatif", "--tables", TABLES, "--topology", TOPO_JSON, "--bandwidth", "10Gbps", "--nodes", "2"],
      ["topology.json", "gpu", "Z999"], make=B.both(copy_of("tables.json"), topo(lambda d: d.__setitem__("gpu", "Z999")))),
    C("topology-truncated", ["net", "topology", TOPO_JSON], ["topology.json"],
      make=text_edit("topology.json", lambda t: t[:-20])),
    C("topology-preset-no-bandwidth", ["net", "topology", "2x8xA100-1x"], ["unknown topology", "2x8xA100-1x"]),
    C("topology-preset-unknown-gpu", ["net", "predict", "--topology", "2x8xZ999-1x25G", "--sizes", "1M"],
      ["2x8xZ999-1x25G", "unknown GPU", "Z999"]),
    C("topology-file-name-too-long", ["simulate", "--model", "resnet18", "--topology", "{d}/" + "t" * 300 + ".json"],
      ["unknown topology", "..."]),
    C("trace-file-name-too-long", ["trace", "info", "{d}/" + "t" * 300 + ".h5"], ["cannot open (File name too long)"]),
    C("schedule-file-name-too-long", ["schedule", "show", "{d}/" + "s" * 300 + ".json"], ["cannot open (File name too long)"]),
    C("topology-argument-too-long", ["net", "topology", "1" * 100_000 + "x8xA100-1x25G"], ["unknown topology", "..."]),
    C("topology-preset-zero-bandwidth", ["simulate", "--model", "resnet18", "--topology", "2x8xA100-1x0G"],
      ["2x8xA100-1x0G", "0 Gb/s per NIC"]),
    C("topology-preset-zero-hosts", ["plan", "--tables", TABLES, "--topology", "0x8xA100-1x25G", "-o", "{d}/s.json"],
      ["0x8xA100-1x25G", "positive"], make=copy_of("tables.json")),

    # --- network fits ------------------------------------------------------------------------------
    C("fit-wrong-kind", ["net", "predict", "--topology", TOPO, "--network-fit", FIT, "--sizes", "1M"],
      ["fit.json", "kind", "lgreco-schedule"], make=fit_edit(set_tables(["kind"], "lgreco-schedule"))),
    C("fit-missing-parameters", ["simulate", "--model", "resnet18", "--topology", TOPO, "--network-fit", FIT],
      ["fit.json", "parameters"], make=fit_edit(lambda d: d.pop("parameters"))),
    C("fit-parameter-out-of-range", ["net", "predict", "--topology", TOPO, "--network-fit", FIT, "--sizes", "1M"],
      ["fit.json", "-1"], make=fit_edit(lambda d: d["parameters"].__setitem__(next(iter(d["parameters"])), -1.0))),
    C("fit-other-topology", ["whatif", "--tables", TABLES, "--topology", "4x8xA100-1x25G", "--network-fit", FIT,
                             "--bandwidth", "10Gbps", "--nodes", "4"], ["fit.json", "2x8xA100-1x25G"],
      make=B.both(copy_of("tables.json"), copy_of("fit.json"))),
    C("fit-truncated-plan", PLAN_TRACE + ["--network-fit", FIT, "-o", "{d}/s.json"], ["fit.json"],
      make=B.both(copy_of("trace.h5"), text_edit("fit.json", lambda t: t[: len(t) // 2]))),
    C("fit-version-1", ["net", "validate", "{d}/sweep.log", "--topology", TOPO, "--network-fit", FIT],
      ["fit.json", "schema_version 1"], make=B.both(copy_of("sweep.log"), fit_edit(set_tables(["schema_version"], 1)))),
    C("fit-protocol-unknown", ["net", "predict", "--topology", TOPO, "--network-fit", FIT, "--sizes", "1M"],
      ["fit.json", "pipelined_protocols", "LL256"], make=fit_edit(set_tables(["pipelined_protocols"], ["LL256"]))),

    # --- nccl-tests logs ---------------------------------------------------------------------------
    C("nccl-empty-file", CALIBRATE, ["sweep.log"], make=text("sweep.log", "")),
    # Times that fall as the size grows: no model fits them, and no calibration of them is written.
    C("nccl-calibrate-poor-fit", CALIBRATE, ["sweep.log", "typical factor", "--allow-poor-fit"],
      make=sweep([(2**k, round(1e7 / 2**k, 3)) for k in range(10, 30, 2)])),
    C("nccl-time-negative", CALIBRATE, ["sweep.log", "-3"], make=sweep([(1024, 20), (4096, -3), (16384, 30), (65536, 40)])),
    C("nccl-time-zero", CALIBRATE, ["sweep.log", "time"], make=sweep([(1024, 20), (4096, 0), (16384, 30), (65536, 40)])),
    C("nccl-size-fraction", VALIDATE_NET, ["sweep.log:4", "size", "1.5"], make=sweep([(1.5, 20), (4096, 25)])),
    C("nccl-time-nan", CALIBRATE, ["sweep.log", "nan"], make=sweep([(1024, 20), (4096, "nan"), (16384, 30), (65536, 40)])),
    C("nccl-binary", CALIBRATE, ["sweep.log"], make=noise("sweep.log", 4096)),
    C("nccl-validate-dev-zero", ["net", "validate", "/dev/zero", "--topology", TOPO], ["/dev/zero", "not a regular file"]),
    C("nccl-validate-sparse", ["net", "validate", "{d}/huge.log", "--topology", TOPO], ["huge.log", "larger than"],
      make=sparse("huge.log", 1 << 30)),
    C("nccl-validate-ngpus-huge", VALIDATE_NET, ["sweep.log", "99999999999"],
      make=text("sweep.log", B.nccl_log().replace("nGpus 16", "nGpus 99999999999"))),
    C("nccl-validate-no-rows", VALIDATE_NET, ["sweep.log", "no nccl-tests result rows"], make=text("sweep.log", "# x\n")),
    C("nccl-size-beyond-2^64", VALIDATE_NET, ["sweep.log:4", "184467440737095516160", "1.8e+19"],
      make=sweep([(184467440737095516160, 20), (4096, 25)])),
    # Corpus files (format in docs/network-model.md): a size no command accepts; more ranks than the file's
    # topology has, refused with the row's line before any row is printed.
    C("corpus-size-beyond-2^64", ["net", "validate", "{d}/c.tsv"], ["c.tsv:29", "size_bytes", "184467440737095516160"],
      make=text("c.tsv", CORPUS_FILE.replace("\t1048576\t", "\t184467440737095516160\t", 1))),
    C("corpus-ranks-beyond-topology", ["net", "validate", "{d}/c.tsv"], ["c.tsv:30", "17 ranks", "2x8xH100-8x400G"],
      make=text("c.tsv", CORPUS_FILE.replace("allreduce\t16\t2097152", "allreduce\t17\t2097152", 1))),
    C("nccl-validate-missing", VALIDATE_NET, ["sweep.log"]),
    C("nccl-unknown-collective", CALIBRATE + ["--collective", "alltoall"], ["--collective", "alltoall"], 2, make=copy_of("sweep.log")),
    C("nccl-ranks-zero", CALIBRATE + ["--ranks", "0"], ["--ranks", "0"], 2, make=copy_of("sweep.log")),

    # --- kernel profiles ---------------------------------------------------------------------------
    C("profile-missing", ["whatif", "--tables", TABLES, "--topology", TOPO, "--bandwidth", "10Gbps", "--nodes", "2",
                          "--kernel-profile", "{d}/none.json"], ["none.json"], make=copy_of("tables.json")),
    C("profile-malformed", ["simulate", "--model", "resnet18", "--topology", TOPO, "--method", "topk",
                            "--kernel-profile", PROFILE], ["profile.json"], make=text("profile.json", '{"kind": ')),
    C("profile-wrong-kind", ["simulate", "--model", "resnet18", "--topology", TOPO, "--kernel-profile", PROFILE],
      ["profile.json", "kind"], make=profile_edit(set_tables(["kind"], "lgreco-tables"))),
    C("profile-negative-bandwidth", ["simulate", "--model", "resnet18", "--topology", TOPO, "--kernel-profile", PROFILE],
      ["profile.json", "methods.topk.effective_bandwidth_GBps", "-1"],
      make=profile_edit(lambda d: d["methods"]["topk"].__setitem__("effective_bandwidth_GBps", -1))),
    C("profile-unknown-method", ["simulate", "--model", "resnet18", "--topology", TOPO, "--kernel-profile", PROFILE],
      ["profile.json", "methods.lowrank", "unknown compression method"], make=profile_edit(lambda d: d["methods"].__setitem__("lowrank", d["methods"]["none"]))),
    C("profile-deep", ["whatif", "--tables", TABLES, "--topology", TOPO, "--bandwidth", "10Gbps", "--kernel-profile",
                       "{d}/deep.json"], ["deep.json", "512"], make=B.both(copy_of("tables.json"), deep_json("deep.json"))),
    C("profile-dev-zero", ["simulate", "--model", "resnet18", "--topology", TOPO, "--kernel-profile", "/dev/zero"],
      ["/dev/zero", "not a regular file"]),
    C("profile-and-no-kernel-time", ["simulate", "--model", "resnet18", "--topology", TOPO, "--kernel-profile", PROFILE,
                                     "--no-kernel-time"], ["--kernel-profile", "--no-kernel-time"], 2, make=copy_of("profile.json")),

    # --- layers files (simulate --layers) ----------------------------------------------------------
    C("layers-missing-tensors", ["simulate", "--layers", LAYERS, "--topology", TOPO], ["layers.json", "tensors"],
      make=layers_edit(lambda d: d.pop("tensors"))),
    C("layers-empty-tensors", ["simulate", "--layers", LAYERS, "--topology", TOPO], ["layers.json", "tensors"],
      make=layers_edit(set_tables(["tensors"], []))),
    C("layers-shape-zero", ["simulate", "--layers", LAYERS, "--topology", TOPO], ["layers.json", "shape", "0"],
      make=layers_edit(lambda d: d["tensors"][0].__setitem__("shape", [0, 32]))),
    C("layers-shape-overflow", ["simulate", "--layers", LAYERS, "--topology", TOPO], ["layers.json", "tensors[0].shape", "4294967296"],
      make=layers_edit(lambda d: d["tensors"][0].__setitem__("shape", [2**32, 2**32]))),
    C("layers-batch-zero", ["simulate", "--layers", LAYERS, "--topology", TOPO], ["layers.json", "batch_per_gpu", "0"],
      make=layers_edit(set_tables(["batch_per_gpu"], 0))),
    C("layers-unknown-key", ["simulate", "--layers", LAYERS, "--topology", TOPO], ["layers.json", "'dtype'"],
      make=layers_edit(lambda d: d["tensors"][1].__setitem__("dtype", "float16"))),
    C("layers-duplicate-names", ["simulate", "--layers", LAYERS, "--topology", TOPO], ["layers.json", "tensors[1].name", "'fc1.weight'", "listed twice"],
      make=layers_edit(lambda d: d["tensors"][1].__setitem__("name", "fc1.weight"))),
    C("layers-uses-negative", ["simulate", "--layers", LAYERS, "--topology", TOPO], ["layers.json", "uses_per_sample"],
      make=layers_edit(lambda d: d["tensors"][2].__setitem__("uses_per_sample", -4))),
    C("layers-name-number", ["simulate", "--layers", LAYERS, "--topology", TOPO], ["layers.json", "name"],
      make=layers_edit(lambda d: d["tensors"][0].__setitem__("name", 7))),
    C("layers-deep", ["simulate", "--layers", "{d}/deep.json", "--topology", TOPO], ["deep.json", "512"],
      make=deep_json("deep.json")),
    C("layers-hdf5", ["simulate", "--layers", "{d}/trace.h5", "--topology", TOPO], ["trace.h5 is an HDF5 file"],
      make=copy_of("trace.h5")),

    # --- commands and options ----------------------------------------------------------------------
    C("methods-format-xml", ["methods", "--format", "xml"], ["--format", "xml"], 2),
    C("models-unknown-option", ["models", "--all"], ["'--all'"], 2),
    C("info-extra-argument", ["info", "now"], ["'now'"], 2),
    C("scaleout-steps-huge", ["scaleout", "--model", "resnet18", "--steps", "99999999999"],
      ["--steps", "99999999999", "from 1 to 10000000"], 2),
    C("scaleout-unknown-model", ["scaleout", "--model", "resnet19", "--steps", "4"], ["--model", "resnet19"], 2),
    C("scaleout-steps-2^31", ["scaleout", "--model", "resnet18", "--steps", "2147483647"], ["--steps", "2147483647"], 2),
    C("scaleout-ranks-zero", ["scaleout", "--model", "resnet18", "--steps", "4", "--ranks", "1,0"], ["--ranks", "0"], 2),
    C("scaleout-rate-negative", ["scaleout", "--model", "resnet18", "--steps", "4", "--rate", "-1e-9"], ["--rate"], 2),
    C("simulate-method-out-of-range", ["simulate", "--model", "resnet18", "--topology", TOPO, "--method", "powersgd:rank=99999999"],
      ["--method", "rank", "99999999"], 2),
    C("simulate-unknown-model", ["simulate", "--model", "resnet19", "--topology", TOPO], ["--model", "resnet19"], 2),
    C("plan-include-bad-regex", ["plan", "--tables", TABLES, "--include", "fc(", "-o", "{d}/s.json"], ["--include", "fc("], 2,
      make=copy_of("tables.json")),
    C("plan-include-deep-regex", ["plan", "--tables", TABLES, "--include", "(" * 30000 + ")" * 30000, "-o", "{d}/s.json"],
      ["--include", "60000 characters", "at most 1024"], 2, make=copy_of("tables.json")),
    C("plan-exclude-long-regex", ["plan", "--tables", TABLES, "--exclude", "f" * 120000, "-o", "{d}/s.json"],
      ["--exclude", "120000 characters"], 2, make=copy_of("tables.json")),
    C("plan-include-long-name", ["plan", "--tables", TABLES, "--include", ".*", "-o", "{d}/s.json"],
      ["tables.json", "parameter name of 100000 bytes", "include"], make=tables_layer("name", "a" * 100_000)),
    C("plan-pin-out-of-range", ["plan", "--tables", TABLES, "--pin", "fc1.weight=powersgd:rank=-1", "-o", "{d}/s.json"],
      ["--pin", "fc1.weight", "rank", "-1"], 2, make=copy_of("tables.json")),
    C("plan-trace-and-tables", ["plan", "--trace", TRACE, "--tables", TABLES, "-o", "{d}/s.json"], ["--trace", "--tables"], 2),
    C("plan-trace-family-unknown", PLAN_TRACE + ["--family", "lowrank", "-o", "{d}/s.json"], ["--family", "lowrank"], 2,
      make=copy_of("trace.h5")),
    C("plan-trace-default-out-of-range", PLAN_TRACE + ["--default", "rank=0.5", "-o", "{d}/s.json"], ["--default", "rank", "0.5"],
      2, make=copy_of("trace.h5")),
    C("replay-phase-unknown", REPLAY + ["--phase", "plan-99"], ["trace_schedule.json", "plan-99", "phases: uniform", "scheduled, last, all"],
      make=trace_and(copy_of("trace_schedule.json"))),
    C("replay-seed-negative", REPLAY + ["--seed", "-1"], ["--seed", "-1", "out of range"], 2, make=trace_and(copy_of("trace_schedule.json"))),
    C("replay-memory-limit-garbage", REPLAY + ["--memory-limit", "lots"], ["--memory-limit", "lots"], 2,
      make=trace_and(copy_of("trace_schedule.json"))),
    C("whatif-bandwidth-zero", ["whatif", "--tables", TABLES, "--bandwidth", "0Gbps"], ["--bandwidth", "0Gbps"], 2,
      make=copy_of("tables.json")),
    C("whatif-nodes-zero", ["whatif", "--tables", TABLES, "--nodes", "0"], ["--nodes", "0"], 2, make=copy_of("tables.json")),
    # The what-if grid is checked before the replay: each point's cluster must be one the model builds.
    C("whatif-bandwidth-1e-9", ["whatif", "--trace", TRACE, "--nodes", "2", "--bandwidth", "1e-9Gbps"],
      ["--bandwidth", "1e-09 Gb/s per NIC", "1e-06"], 2, make=copy_of("trace.h5")),
    C("whatif-hosts-times-gpus", ["whatif", "--trace", TRACE, "--nodes", "1024", "--gpus-per-node", "128"],
      ["--nodes 1024", "65536"], 2, make=copy_of("trace.h5")),
    C("whatif-nodes-twice", ["whatif", "--tables", TABLES, "--nodes", "2,4,2"], ["--nodes", "2", "twice"], 2,
      make=copy_of("tables.json")),
    C("whatif-bandwidth-twice", ["whatif", "--tables", TABLES, "--bandwidth", "10Gbps,25Gbps,10Gbps"],
      ["--bandwidth", "10Gbps", "twice"], 2, make=copy_of("tables.json")),
    C("net-predict-sizes-reversed", ["net", "predict", "--topology", TOPO, "--sizes", "1G:1K"], ["--sizes", "1G:1K"], 2),
    C("net-topology-ranks-zero", ["net", "topology", TOPO, "--ranks", "0"], ["--ranks", "0"], 2),
    C("net-topology-ranks-beyond-gpus", ["net", "topology", TOPO, "--ranks", "17"], ["--ranks 17", TOPO, "16 GPUs"], 2),
    C("net-predict-ranks-beyond-gpus", ["net", "predict", "--topology", TOPO, "--sizes", "1M", "--ranks", "17"],
      ["--ranks 17", TOPO, "16 GPUs"], 2),
    C("simulate-ranks-zero", ["simulate", "--model", "resnet18", "--topology", TOPO, "--ranks", "0"], ["--ranks", "0"], 2),
    C("simulate-ranks-beyond-gpus", ["simulate", "--model", "resnet18", "--topology", TOPO, "--ranks", "17"],
      ["--ranks 17", TOPO, "16 GPUs"], 2),
    # The error-bands source is refused before the held-out fits: an existing file stays, a missing folder is named.
    C("error-bands-out-exists", ["net", "validate", str(B.REPO / "tests" / "data" / "network"), "--holdout",
                                 "--write-error-bands", "{d}/bands.cpp"], ["bands.cpp", "exists", "--force"], out="bands.cpp"),
    C("error-bands-folder-missing", ["net", "validate", str(B.REPO / "tests" / "data" / "network"), "--holdout",
                                     "--write-error-bands", "{d}/no/such/bands.cpp"], ["no/such", "does not exist"]),
    # An output is never one of the command's inputs, --force or not (core/atomic_file.hpp): the input stays.
    C("export-output-is-input", ["export", "{d}/s.json", "--to", "csv", "-o", "{d}/s.json", "--force"], ["s.json", "is the input"], 2,
      out="s.json"),
    C("tables-convert-output-is-input", ["tables", "convert", "{d}/t.json", "-o", "{d}/./t.json", "--force"], ["t.json", "is the input"],
      2, out="t.json"),
    C("calibrate-output-is-input", ["net", "calibrate", "{d}/sweep.log", "--topology", TOPO, "-o", "{d}/sweep.log", "--force"],
      ["sweep.log", "is the input"], 2, out="sweep.log"),
    C("whatif-plot-is-trace", ["whatif", "--trace", "{d}/trace.h5", "--plot", "{d}/trace.h5", "--force"], ["trace.h5", "is the input"], 2,
      out="trace.h5"),
    C("error-bands-over-corpus-file", ["net", "validate", "{d}", "--holdout", "--write-error-bands", "{d}/x.tsv", "--force"],
      ["x.tsv", "is the input"], 2, out="x.tsv"),
    C("plan-two-outputs-one-file", ["plan", "--trace", TRACE, "-o", "{d}/o.json", "--tables-out", "{d}/./o.json"], ["o.json", "same file"],
      2, make=copy_of("trace.h5")),
    C("trace-synth-unknown-model", ["trace", "synth", "--model", "resnet19", "--steps", "1", "-o", "{d}/t.h5"], ["resnet19"], 2),
    C("trace-synth-dtype", ["trace", "synth", "--model", "resnet18", "--steps", "1", "--dtype", "float8", "-o", "{d}/t.h5"],
      ["--dtype", "float8"], 2),
    C("replay-threads-negative", ["replay", "--trace", TRACE, "--schedule", SCHED, "--threads", "-5"], ["--threads", "-5"], 2,
      make=trace_and(copy_of("trace_schedule.json"))),
]

# --- method parameters: every range of the registry (kernels/registry.cpp), out of range by one
# step on each side, in a schedule read by `schedule validate` and by `replay` (the same reader:
# both must refuse it with the same message). REGISTRY is checked against `lgreco methods`.
I64_MAX = 2**63 - 1
REGISTRY = {  # method: {parameter: ("int", lo, hi) | ("real", lo, lo_open, hi, hi_open) | ("bool",) | ("choice", ...)}
    "powersgd": {"rank": ("int", 0, 65536), "power_iterations": ("int", 1, 16),
                 "min_compression_rate": ("real", 0.0, True, 1e12, False), "warm_start": ("bool",),
                 "orthogonalization": ("choice", "auto", "gram-schmidt", "qr"), "seed": ("int", 0, I64_MAX)},
    "topk": {"density": ("real", 0.0, True, 1.0, False), "encoding": ("choice", "auto", "pairs", "bitmap", "delta"),
             "selection": ("choice", "exact", "dgc"), "momentum": ("real", 0.0, False, 1.0, True),
             "warmup_steps": ("int", 0, I64_MAX)},
    "randomk": {"density": ("real", 0.0, True, 1.0, False), "scaled": ("bool",)},
    "qsgd": {"levels": ("int", 1, 32767), "bucket_size": ("int", 1, 2**30), "norm": ("choice", "l2", "max"),
             "encoding": ("choice", "fixed", "elias"), "bits": ("int", 2, 16)},
    "maxmin": {"bits": ("int", 1, 8), "bucket_size": ("int", 1, 2**30), "rounding": ("choice", "stochastic", "nearest")},
    "sign": {"bucket_size": ("int", 1, 2**30)},
    "nuqsgd": {"levels": ("int", 1, 30), "bucket_size": ("int", 1, 2**30)},
}


def out_of_range(spec):
    """Values just outside a parameter's range (JSON values), with the text the error shows."""
    kind = spec[0]
    if kind == "int":
        _, lo, hi = spec
        return [(lo - 1, str(lo - 1)), (hi + 1, str(hi + 1)), (lo + 0.5, "")]
    if kind == "real":
        _, lo, lo_open, hi, hi_open = spec
        below = lo if lo_open else lo - 0.25
        above = hi if hi_open else (hi * 1.5 if hi > 1 else hi + 0.25)
        return [(below, ""), (above, "")]
    if kind == "bool":
        return [("yes", '"yes"'), (1, "1")]
    return [("bogus", "'bogus'")]


def in_range(spec):
    """The edges of a parameter's range and every choice (all accepted)."""
    kind = spec[0]
    if kind == "int":
        return [spec[1], spec[2]]
    if kind == "real":
        _, lo, lo_open, hi, hi_open = spec
        return [lo * 1.000001 + 1e-9 if lo_open else lo, hi * (1 - 1e-9) if hi_open else hi]
    if kind == "bool":
        return [True, False]
    return list(spec[1:])


RANGE_VALUES = [(m, p, v, shown) for m, params in REGISTRY.items() for p, spec in params.items()
                for v, shown in out_of_range(spec)]
RANGE_EDGES = [(m, p, v) for m, params in REGISTRY.items() for p, spec in params.items() for v in in_range(spec)]


def range_id(m, p, v):
    return f"{m}-{p}={json.dumps(v)}"


for _m, _p, _v, _shown in RANGE_VALUES:
    _needles = ["trace_schedule.json", f"method '{_m}'", f"'{_p}'"] + ([_shown] if _shown else [])
    _make = sched_layer({"method": _m, "params": {_p: _v}})
    CASES.append(C("range-validate-" + range_id(_m, _p, _v), ["schedule", "validate", SCHED], _needles, make=_make))
    CASES.append(C("range-replay-" + range_id(_m, _p, _v), REPLAY, _needles, make=trace_and(_make)))


def run_case(case, folder, base):
    folder.mkdir(parents=True, exist_ok=True)
    if case.make:
        case.make(folder, base) if getattr(case.make, "needs_base", False) else case.make(folder)
    if case.out:
        (folder / case.out).write_bytes(SENTINEL)
    before = sorted(os.listdir(folder))
    args = [a.replace("{d}", str(folder)) for a in case.args]
    limit = (lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (case.fsize, case.fsize))) if case.fsize else None
    with open(case.stdout, "wb") if case.stdout else open(os.devnull, "wb") as sink:
        proc = subprocess.run([lgreco_bin(), *args], stdout=sink if case.stdout else subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=300, preexec_fn=limit)
    return proc, before


@pytest.fixture(scope="session")
def base(tmp_path_factory, request):
    from lgreco.tables import write_tables_h5
    from test_plan_cli import make_tables

    def lgreco(*args, check=False):
        proc = subprocess.run([lgreco_bin(), *map(str, args)], capture_output=True, text=True)
        assert not check or proc.returncode == 0, proc.stderr
        return proc

    return B.Base(tmp_path_factory.mktemp("base"), lgreco, make_tables, write_tables_h5)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path, base):
    folder = tmp_path / "case"
    proc, before = run_case(case, folder, base)
    err = proc.stderr.decode("utf-8", "replace")
    shown = f"case {case.id}: lgreco {' '.join(case.args)}\nexit {proc.returncode}\nstderr: {err!r}"
    assert proc.returncode == case.code, shown
    assert err.endswith("\n") and err.count("\n") == 1, shown  # exactly one line
    assert err.startswith("lgreco: error: ") and err.count("lgreco: error:") == 1, shown
    for needle in case.needles:
        assert needle in err, f"{shown}\nmissing: {needle!r}"
    assert B.tmp_files(folder) == [], shown
    assert sorted(os.listdir(folder)) == before, shown  # no output appeared
    if case.stdout is None and not case.report:
        assert proc.stdout == b"", f"{shown}\nstdout: {proc.stdout[:300]!r}"  # nothing half-printed either
    if case.out:
        assert (folder / case.out).read_bytes() == SENTINEL, shown


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


def test_corpus_size():
    assert len(CASES) >= 120


def test_registry_table_is_the_binary_registry():
    """REGISTRY above lists every parameter range of `lgreco methods` (so that every range has cases)."""
    doc = json.loads(subprocess.run([lgreco_bin(), "methods", "--format", "json"], capture_output=True, text=True,
                                    check=True).stdout)
    listed = {}
    for m in doc["methods"]:
        params = {}
        for p in m["params"]:
            if p["type"] == "int":
                params[p["name"]] = ("int", p["min"], p["max"])
            elif p["type"] == "real":
                params[p["name"]] = ("real", p["min"], p["min_open"], p["max"], p["max_open"])
            elif p["type"] == "bool":
                params[p["name"]] = ("bool",)
            else:
                params[p["name"]] = ("choice", *p["choices"])
        if params:
            listed[m["name"]] = params
    assert listed == REGISTRY


@pytest.mark.parametrize("method,param,value,shown", RANGE_VALUES, ids=[range_id(*v[:3]) for v in RANGE_VALUES])
def test_validate_and_replay_refuse_alike(method, param, value, shown, tmp_path, base):
    """`schedule validate` and `replay` give the same error for a parameter out of its range."""
    make = sched_layer({"method": method, "params": {param: value}})
    errs = []
    for cmd, m in ((["schedule", "validate", SCHED], make), (REPLAY, trace_and(make))):
        proc, _ = run_case(C("x", cmd, [], make=m), tmp_path / cmd[0], base)
        assert proc.returncode == 1, proc.stderr
        errs.append(proc.stderr.decode().replace(str(tmp_path / cmd[0]), "DIR"))
    assert errs[0] == errs[1]


@pytest.mark.parametrize("method,param,value", RANGE_EDGES, ids=[range_id(*v) for v in RANGE_EDGES])
def test_validate_and_replay_accept_range_edges(method, param, value, tmp_path, base):
    """The edges of every range (and every choice) are accepted by both, and replay runs them."""
    make = sched_layer({"method": method, "params": {param: value}})
    for cmd, m in ((["schedule", "validate", SCHED], make), (REPLAY, trace_and(make))):
        proc, _ = run_case(C("x", cmd, [], make=m), tmp_path / cmd[0], base)
        assert proc.returncode == 0, (cmd, proc.stderr)
        assert proc.stderr == b"", proc.stderr


def test_all_zero_layers_are_valid_input(tmp_path, base):
    """A trace whose gradients are all zero (a frozen model) is not bad input: validate warns per
    layer, plan keeps the uniform setting (nothing to trade) and replay measures zero error."""
    trace = tmp_path / "zero.h5"
    B.write_trace(trace)
    with h5py.File(trace, "r+") as f:
        for i in range(len(B.LAYERS)):
            f[f"layers/{i:06d}/grad"][...] = 0

    def run(*args):
        proc = subprocess.run([lgreco_bin(), *map(str, args)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (args, proc.stderr)
        return proc

    warn = run("trace", "validate", trace).stdout
    assert warn.count("gradient is all zero at 3 of 3 steps") == len(B.LAYERS)
    sched = tmp_path / "s.json"
    run(*PLAN_TRACE[:2], trace, *PLAN_TRACE[3:], "--warmup-steps", "0", "--family", "all", "--min-numel", "1", "-o", sched)
    doc = json.loads(sched.read_text())
    assert doc["predicted"]["status"] == "uniform" and doc["predicted"]["total_error"] == 0
    rep = json.loads(run("replay", "--trace", trace, "--schedule", sched, "--format", "json").stdout)
    assert all(ph["error_per_step"] == 0 for ph in rep["phases"])
