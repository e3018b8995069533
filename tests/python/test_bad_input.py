"""Bad input corpus. Every case runs one lgreco command on a generated bad input and checks the
contract of README ("Exit codes"): exit 1 (input) or 2 (usage); stderr is exactly one line starting
`lgreco: error:` (one prefix) that names the file, field and value (the case's needles); no output
and no temporary file (`*.tmp.*`) appears in the case's folder; a pre-existing output (`out=`) is
byte-identical afterwards.

Adding a case is one line in CASES: C(id, [args with {d} for the case folder], [needles], code,
make=maker, out=name). Makers are in bad_inputs.py (generic files, edits of the session's valid
base files). Interruption (SIGINT/SIGTERM, once and twice) is in test_interrupt_signals.py.
"""
import os
import resource
import subprocess
from dataclasses import dataclass
from typing import Callable, List, Optional

import numpy as np
import pytest

import bad_inputs as B
from bad_inputs import copy_of, deep_json, h5_edit, json_edit, sparse, text
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
    if case.out:
        assert (folder / case.out).read_bytes() == SENTINEL, shown


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
