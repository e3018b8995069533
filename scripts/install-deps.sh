#!/usr/bin/env bash
# Installs the Debian packages lgreco needs, skipping those already present.
# Idempotent: a second run installs nothing and exits 0 quickly.
#   --fuzz  also Clang and its libFuzzer runtime (`make fuzz` only; `make demo`/`make test` need neither)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libhdf5-dev nlohmann-json3-dev libboost-graph-dev libfmt-dev
  catch2 libbenchmark-dev libeigen3-dev
  libopenmpi-dev openmpi-bin
  python3 python3-numpy python3-h5py python3-torch python3-matplotlib
  python3-pytest python3-pytest-xdist python3-pytest-timeout python3-hypothesis python3-jsonschema python3-dev pybind11-dev python3-venv python3-setuptools python3-sklearn
  jupyter-nbconvert python3-ipykernel python3-nbformat
)
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
