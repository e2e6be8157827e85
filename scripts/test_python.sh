#!/usr/bin/env bash
# The Python package's tests: `pip install .` into a virtual environment (build-py/pyenv, with the system's site
# packages visible, so an installed torch is used), then pytest over tests/python. Without a GPU the tests in
# tests/python/gpu skip; `scripts/test_python.sh gpu` fails instead when no GPU is there. Without torch, the tests of
# gemmtune.torch skip, unless GEMMTUNE_TEST_TORCH=1, which installs torch (from PyPI, a few GB) when it is missing.
# scripts/test.sh runs this after the C++ tests. Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
gpu=0
if [ "${1:-}" = gpu ]; then gpu=1; shift; fi
py=${PYTHON:-python3}
mkdir -p build-py
venv="$(pwd)/build-py/pyenv"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv --system-site-packages "$venv" || {
    echo "test_python: cannot create a virtual environment (Debian: apt-get install python3-venv)" >&2; exit 1; }
fi
vpy="$venv/bin/python"
"$vpy" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
"$vpy" -c "import pytest" 2>/dev/null || "$vpy" -m pip install -q --disable-pip-version-check pytest
# The torch the GPU host has (2.11), so that the CPU tests of the Inductor integration run against the Inductor the
# GPU tests run against: Inductor's internals move between releases (under 2.15 the forced-choice test saw ATen's addmm
# offered beside gemmtune's for a bias addmm). GEMMTUNE_TEST_TORCH_SPEC picks another.
torch_spec=${GEMMTUNE_TEST_TORCH_SPEC:-torch==2.11.*}
if [ "${GEMMTUNE_TEST_TORCH:-0}" = 1 ] && ! "$vpy" -c "import torch" 2>/dev/null; then
  echo "test_python: installing $torch_spec"
  "$vpy" -m pip install -q --disable-pip-version-check "$torch_spec"
fi
# A wheel build of the package from this tree, installed as a user would (`pip install .`).
echo "test_python: pip install ."
# Offline hosts that have scikit-build-core build without an isolated build environment (nothing to download).
iso=()
"$vpy" -c "import scikit_build_core" 2>/dev/null && iso=(--no-build-isolation)
"$vpy" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "${iso[@]}" .
# Run from outside the source tree, so `import gemmtune` is the installed package, not python/gemmtune.
export GEMMTUNE_CACHE_DIR=${GEMMTUNE_CACHE_DIR:-$(mktemp -d /tmp/gemmtune-pytest-cache.XXXXXX)}
export GEMMTUNE_REQUIRE_GPU=$gpu
cd build-py
"$vpy" -m pytest -q -p no:cacheprovider "$OLDPWD/tests/python" "$@"
