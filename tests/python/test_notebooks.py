"""The analysis notebooks: committed clean, and each one executes headless on inputs the CLI writes.

Every execution test generates its inputs with the `lgreco` binary into a temporary folder (small
synthetic traces, few what-if points), executes the notebook with `jupyter nbconvert --execute`
(Debian's packages) with environment variables pointing at those files, then checks the JSON
summary the notebook wrote against the input data. A notebook whose subcommands are not built into
this `lgreco` is skipped, naming the missing subcommand.
"""
import json
import math
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import REPO

NOTEBOOKS = REPO / "notebooks"
NAMES = ["whatif-bandwidth", "layer-tradeoffs", "network-validation", "schedule-inspection"]
NCCL_FILE = pathlib.Path("data") / "nccl-tests" / "a100x8-nvswitch-allreduce.tsv"
EXEC_TIMEOUT_S = 300


def load_nb(name):
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())


def intro_commands(name):
    """The `lgreco ...` command lines of the notebook's first markdown cell (continuations joined)."""
    text = "".join(load_nb(name)["cells"][0]["source"]).replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip().startswith("lgreco ")]


def subcommand_of(command_line, known):
    """The longest registered subcommand that prefixes `lgreco WORDS...`; None when none matches."""
    words = command_line.split()[1:]
    best = None
    for n in range(1, min(3, len(words)) + 1):
        if " ".join(words[:n]) in known:
            best = " ".join(words[:n])
    return best


def wanted_subcommands(name):
    """Subcommands a notebook's intro uses: the first one or two words after `lgreco`."""
    out = []
    for line in intro_commands(name):
        words = [w for w in line.split()[1:3] if not w.startswith("-")]
        if words:
            out.append(words)
    return out


@pytest.fixture
def available(lgreco):
    return set(lgreco("--list-commands", check=True).stdout.split("\n")) - {""}


def require(name, available):
    """Skips unless every subcommand the notebook's intro names is built into lgreco."""
    missing = []
    for words in wanted_subcommands(name):
        if not (" ".join(words) in available or words[0] in available):
            missing.append(" ".join(words))
    if missing:
        pytest.skip(f"{name}.ipynb needs `lgreco {'`, `lgreco '.join(sorted(set(missing)))}`, "
                    "not in `lgreco --list-commands` of this build")


def execute(name, tmp_path, env_vars):
    """Executes the notebook headless; returns the summary JSON it wrote. Fails with the cell's error."""
    out = tmp_path / f"{name}-out"
    env = dict(os.environ, LGRECO_NB_OUT=str(out), MPLBACKEND="Agg", PYDEVD_DISABLE_FILE_VALIDATION="1",
               **{k: str(v) for k, v in env_vars.items()})
    proc = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
         f"--ExecutePreprocessor.timeout={EXEC_TIMEOUT_S}", "--ExecutePreprocessor.kernel_name=python3",
         "--output-dir", str(tmp_path), str(NOTEBOOKS / f"{name}.ipynb")],
        capture_output=True, text=True, env=env, timeout=EXEC_TIMEOUT_S + 60)
    assert proc.returncode == 0, f"{name}.ipynb failed (env {env_vars}):\n{proc.stderr[-4000:]}"
    executed = json.loads((tmp_path / f"{name}.ipynb").read_text())
    errors = [o for c in executed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    images = sum(1 for c in executed["cells"] for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
    assert images >= 1, f"{name}.ipynb displayed no figure"
    return json.loads((out / f"{name}.summary.json").read_text())


def nccl_tsv(shared_dir):
    """The nccl-tests sweep: under the shared folder, or in a `shared/` next to any parent of the repo."""
    for base in [shared_dir, *[p / "shared" for p in REPO.parents]]:
        if (base / NCCL_FILE).exists():
            return base / NCCL_FILE
    pytest.skip(f"{NCCL_FILE} not found (set LGRECO_SHARED_DIR)")


# ---------------------------------------------------------------- committed form


@pytest.mark.parametrize("name", NAMES)
def test_notebook_committed_without_outputs(name):
    nb = load_nb(name)
    assert nb["nbformat"] == 4
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{name}.ipynb cell {i} has outputs"
            assert cell["execution_count"] is None, f"{name}.ipynb cell {i} has an execution count"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_intro_names_inputs_and_commands(name):
    """First a markdown cell naming every LGRECO_NB_* variable the code reads and the commands; then code."""
    nb = load_nb(name)
    intro, first_code = nb["cells"][0], nb["cells"][1]
    assert intro["cell_type"] == "markdown" and first_code["cell_type"] == "code"
    code = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    used = set(re.findall(r'"(LGRECO_NB_[A-Z_]+)"', code))
    assert used, f"{name}.ipynb reads no LGRECO_NB_* variable"
    text = "".join(intro["source"])
    assert not (used - set(re.findall(r"LGRECO_NB_[A-Z_]+", text))), f"intro lacks {used - set(re.findall(r'LGRECO_NB_[A-Z_]+', text))}"
    assert intro_commands(name), f"{name}.ipynb intro shows no lgreco command"
    assert "matplotlib.use(\"Agg\")" in "".join(first_code["source"])


@pytest.mark.parametrize("name", NAMES)
def test_notebook_intro_commands_use_real_flags(name, lgreco, available):
    """Each `lgreco <sub> --flag` of the intro is a registered subcommand whose --help lists the flag."""
    require(name, available)
    for line in intro_commands(name):
        sub = subcommand_of(line, available)
        assert sub, f"{name}.ipynb: no registered subcommand in {line!r}"
        help_text = lgreco(*sub.split(), "--help", check=True).stdout
        for flag in re.findall(r"(?<!\S)(--[a-z][a-z0-9-]*)", line):
            assert flag in help_text, f"{name}.ipynb: `lgreco {sub}` has no {flag} (intro line {line!r})"
