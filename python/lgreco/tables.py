"""Candidate tables in their HDF5 form (docs/tables-format.md, "HDF5 form").

The same document as the JSON form, stored column-wise so that tables of large models (millions
of candidates) stay small and load fast. `write_tables_h5(doc, path)` takes the JSON form as a dict
(what `json.load` gives for a tables file); `read_tables_h5(path)` gives it back.
"""
import json
import math
import os
import tempfile

import numpy as np


class TablesError(ValueError):
    """A tables file is unreadable or breaks docs/tables-format.md; one line naming the file and the member."""


_COLLECTIVE = {"allreduce": 0, "allgather": 1}
_COLLECTIVE_NAME = {v: k for k, v in _COLLECTIVE.items()}


def _strings(group, name, values):
    import h5py

    dt = h5py.string_dtype("utf-8")
    group.create_dataset(name, data=np.array(values, dtype=object), dtype=dt, **_chunking(len(values)))


def _chunking(n):
    return {"chunks": (min(n, 1 << 16),), "shuffle": True, "compression": "gzip", "compression_opts": 4} if n >= 4096 else {}


def _array(group, name, values, dtype):
    arr = np.asarray(values, dtype=dtype)
    group.create_dataset(name, data=arr, **_chunking(arr.size))


def write_tables_h5(doc, path):
    """Writes a tables document (JSON form, as a dict) as HDF5. Written to a temporary file in the
    same folder and renamed, so `path` is either the old file or the complete new one."""
    import h5py

    if doc.get("schema_version") != 1 or doc.get("kind") != "lgreco-tables":
        raise ValueError(f"{path}: not a tables document (schema_version 1, kind 'lgreco-tables')")
    settings, index = [], {}
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=folder)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs["schema_version"] = np.int64(1)
            f.attrs["kind"] = "lgreco-tables"
            f.attrs["model"] = doc["model"]
            f.attrs["world_size"] = np.int64(doc["world_size"])
            f.attrs["error_mode"] = doc["error_mode"]
            f.attrs["acc_steps"] = np.int64(doc["acc_steps"])
            f.attrs["provenance"] = json.dumps(doc.get("provenance", {}))
            wg = f.create_group("windows")
            for w, win in enumerate(doc["windows"]):
                g = wg.create_group(str(w))
                g.attrs["start_step"] = np.int64(win["start_step"])
                g.attrs["end_step"] = np.int64(win["end_step"])
                layers = win["layers"]
                cands = [c for layer in layers for c in layer["candidates"]]
                setting = []
                for c in cands:
                    key = (c["method"], json.dumps(c.get("params", {}), sort_keys=True))
                    if key not in index:
                        index[key] = len(settings)
                        settings.append(key)
                    setting.append(index[key])
                _strings(g, "layer_name", [layer["name"] for layer in layers])
                _strings(g, "layer_kind", [layer["kind"] for layer in layers])
                _array(g, "layer_ndim", [len(layer["shape"]) for layer in layers], np.int64)
                _array(g, "layer_shape", [d for layer in layers for d in layer["shape"]], np.int64)
                _array(g, "layer_numel", [layer["numel"] for layer in layers], np.int64)
                _array(g, "layer_bucket", [layer["bucket"] for layer in layers], np.int64)
                _array(g, "layer_backward_order", [layer["backward_order"] for layer in layers], np.int64)
                _array(g, "layer_compute_time_s",
                       [math.nan if layer.get("compute_time_s") is None else layer["compute_time_s"] for layer in layers],
                       np.float64)
                _array(g, "layer_default", [layer["default"] for layer in layers], np.int64)
                _array(g, "layer_candidates", [len(layer["candidates"]) for layer in layers], np.int64)
                _array(g, "candidate_setting", setting, np.int64)
                _array(g, "candidate_error", [c["error"] for c in cands], np.float64)
                _array(g, "candidate_bytes", [c["bytes"] for c in cands], np.float64)
                _array(g, "candidate_collective", [_COLLECTIVE[c["collective"]] for c in cands], np.uint8)
                _array(g, "candidate_kernel_time_s",
                       [math.nan if c.get("kernel_time_s") is None else c["kernel_time_s"] for c in cands], np.float64)
            sg = f.create_group("settings")
            _strings(sg, "method", [m for m, _ in settings])
            _strings(sg, "params", [p for _, p in settings])
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as a plainly created file (mkstemp makes it private)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read_tables_h5(path):
    """Reads the HDF5 form back into the JSON form (a dict), as written (parameters as stored, not
    resolved). With the native module the file is first checked by the C++ reader `lgreco plan
    --tables` uses (every check of docs/tables-format.md, in its words). Any problem is a
    TablesError of one line naming the file."""
    from . import native

    native.check_file("tables", path, TablesError)
    try:
        return _read_tables_h5py(path)
    except (OSError, KeyError, ValueError, TypeError, IndexError) as e:
        if isinstance(e, FileNotFoundError):
            raise TablesError(f"tables {os.fspath(path)}: no such file") from None
        raise TablesError(f"tables {os.fspath(path)}: cannot read ({' '.join(str(e).split()) or type(e).__name__})") from None


def _read_tables_h5py(path):
    import h5py

    def text(v):
        return v.decode("utf-8") if isinstance(v, bytes) else str(v)

    with h5py.File(path, "r") as f:
        a = f.attrs
        settings = [(text(m), json.loads(text(p))) for m, p in zip(f["settings/method"][()], f["settings/params"][()])]
        windows = []
        for w in range(len(f["windows"])):
            g = f["windows"][str(w)]
            names = [text(v) for v in g["layer_name"][()]]
            kinds = [text(v) for v in g["layer_kind"][()]]
            ndim, shape = g["layer_ndim"][()], g["layer_shape"][()]
            count = g["layer_candidates"][()]
            setting, error, size = g["candidate_setting"][()], g["candidate_error"][()], g["candidate_bytes"][()]
            coll, ktime = g["candidate_collective"][()], g["candidate_kernel_time_s"][()]
            compute = g["layer_compute_time_s"][()]
            numel, bucket = g["layer_numel"][()], g["layer_bucket"][()]
            order, default = g["layer_backward_order"][()], g["layer_default"][()]
            layers, s, c = [], 0, 0
            for i, name in enumerate(names):
                cands = []
                for _ in range(int(count[i])):
                    m, p = settings[int(setting[c])]
                    cand = {"method": m, "params": p, "error": float(error[c]), "bytes": float(size[c]),
                            "collective": _COLLECTIVE_NAME[int(coll[c])]}
                    if not math.isnan(ktime[c]):
                        cand["kernel_time_s"] = float(ktime[c])
                    cands.append(cand)
                    c += 1
                layer = {"name": name, "shape": [int(d) for d in shape[s:s + int(ndim[i])]],
                         "numel": int(numel[i]), "kind": kinds[i], "bucket": int(bucket[i]),
                         "backward_order": int(order[i]), "default": int(default[i]),
                         "candidates": cands}
                if not math.isnan(compute[i]):
                    layer["compute_time_s"] = float(compute[i])
                s += int(ndim[i])
                layers.append(layer)
            windows.append({"start_step": int(g.attrs["start_step"]), "end_step": int(g.attrs["end_step"]),
                            "layers": layers})
        return {"schema_version": int(a["schema_version"]), "kind": text(a["kind"]), "model": text(a["model"]),
                "world_size": int(a["world_size"]), "error_mode": text(a["error_mode"]), "acc_steps": int(a["acc_steps"]),
                "windows": windows, "provenance": json.loads(text(a.get("provenance", "{}")))}
