#!/usr/bin/env python3
"""Writes the files generated from the method registry (kernels/registry.cpp), or checks them.

    generate_registry_files.py LGRECO_BIN [--check]

The registry document comes from `lgreco methods --format json`. Generated:
- python/lgreco/registry.json: the Python package's view of the registry when the native module is
  not built (methods, parameters, types, defaults, ranges, aliases);
- the method-name enums of schemas/schedule.schema.json and schemas/tables.schema.json.
With --check nothing is written; the exit code is 1 and each stale file is named.
"""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def registry(lgreco: str) -> dict:
    out = subprocess.run([lgreco, "methods", "--format", "json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def dump(doc) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def with_method_enum(path: pathlib.Path, names) -> str:
    text = path.read_text()
    doc = json.loads(text)
    if path.name == "schedule.schema.json":
        doc["$defs"]["method"]["properties"]["method"]["enum"] = names
        return json.dumps(doc, indent=2) + "\n"
    doc["$defs"]["candidate"]["properties"]["method"]["enum"] = names
    return json.dumps(doc, indent=2) + "\n"


def main() -> int:
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--check"):
        print(__doc__, file=sys.stderr)
        return 2
    reg = registry(sys.argv[1])
    names = [m["name"] for m in reg["methods"]]
    wanted = {ROOT / "python" / "lgreco" / "registry.json": dump(reg)}
    for schema in ("schedule.schema.json", "tables.schema.json"):
        path = ROOT / "schemas" / schema
        wanted[path] = with_method_enum(path, names)
    stale = [p for p, text in wanted.items() if not p.exists() or p.read_text() != text]
    if len(sys.argv) == 3:
        for p in stale:
            print(f"{p.relative_to(ROOT)} is not what the registry generates; run "
                  f"scripts/generate_registry_files.py {sys.argv[1]}", file=sys.stderr)
        return 1 if stale else 0
    for p in stale:
        p.write_text(wanted[p])
        print(f"wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
