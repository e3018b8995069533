"""python/pyproject.toml: `pip install -e python/` makes `import lgreco` work in a user's environment
(here the README's Debian recipe: a venv that sees Debian's numpy/h5py/torch, no network)."""
import subprocess
import sys

from conftest import REPO


def test_editable_install_in_a_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
    pip = subprocess.run([venv / "bin" / "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
                          "-e", REPO / "python"], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    # From another folder and without PYTHONPATH: the package comes from the install.
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([venv / "bin" / "python", "-c", "import lgreco; print(lgreco.__file__); lgreco.read_trace"],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(REPO / "python" / "lgreco" / "__init__.py")
    assert not list((REPO / "python").glob("*.egg-info")), "the install left build metadata in the source tree"
