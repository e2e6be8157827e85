#!/usr/bin/env bash
# The optional backends' dependencies: Triton for the `triton` backend (a Python that can `import triton`) and the
# CUTLASS headers for the `cutlass` backend (the `nvidia-cutlass` PyPI package ships them under
# cutlass_library/source/include). What is already there is used as it is; what is missing is installed from PyPI
# into the virtual environment scripts/test_python.sh uses (build-py/pyenv, system site packages visible), never into
# the system's Python. Idempotent: a second run finds everything and installs nothing.
#
# stdout: `export GEMMTUNE_PYTHON=...` and `export CUTLASS_DIR=...` (the CUTLASS root, include/ under it) for the
# caller to eval; progress and where the headers are go to stderr:
#   deps=$(scripts/optional_deps.sh) && eval "$deps"
# scripts/test.sh does that before it builds and runs the tests, so the tests that compile Triton and CUTLASS kernels
# run instead of skipping.
#
# Environment:
#   GEMMTUNE_PYTHON / PYTHON   the Python to look in first (default python3); PYTHON also makes the environment
#   CUTLASS_DIR                CUTLASS headers already there: used when $CUTLASS_DIR/include/cutlass/cutlass.h exists
#   GEMMTUNE_REQUIRE_OPTIONAL  1: a dependency that cannot be found or installed is an error (CI); default: a warning,
#                              and that backend reports itself unavailable
#   GEMMTUNE_OPTIONAL_INSTALL  0: look only, install nothing (an offline host)
# An offline host with a downloaded wheel: PIP_NO_INDEX=1 PIP_FIND_LINKS=DIR scripts/optional_deps.sh (pip reads both).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${GEMMTUNE_PYTHON:-${PYTHON:-python3}}
base=${PYTHON:-python3}  # the virtual environment's interpreter, as scripts/test_python.sh creates it
require=${GEMMTUNE_REQUIRE_OPTIONAL:-0}
install=${GEMMTUNE_OPTIONAL_INSTALL:-1}
venv="$(pwd)/build-py/pyenv"
# The versions the backends are written and tested against (the GPU host has triton 3.6).
triton_req='triton==3.6.*'
cutlass_req='nvidia-cutlass==4.2.*'

say() { echo "optional_deps: $*" >&2; }
missing() {
  if [ "$require" = 1 ]; then
    say "error: $*"
    exit 1
  fi
  say "warning: $* (that backend will report itself unavailable)"
}
# A failing PyPI fails fast: one retry, not pip's five with back-off.
pip_install() { "$1" -m pip install -q --disable-pip-version-check --retries 1 --timeout 30 "${@:2}" >&2; }

venv_python() {
  if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$(dirname "$venv")"
    "$base" -m venv --system-site-packages "$venv" >&2 ||
      { say "cannot create a virtual environment in $venv (Debian: apt-get install python3-venv)"; return 1; }
  fi
  echo "$venv/bin/python"
}

# The interpreters to look in: the given one, then the virtual environment when it exists.
pythons=("$py")
[ -x "$venv/bin/python" ] && pythons+=("$venv/bin/python")

has() { "$1" -c "import $2" >/dev/null 2>&1; }

# --- Triton
tpy=""
for p in "${pythons[@]}"; do
  if has "$p" triton; then tpy=$p; break; fi
done
if [ -z "$tpy" ]; then
  if [ "$install" = 1 ]; then
    say "installing $triton_req into $venv"
    if vpy=$(venv_python) && pip_install "$vpy" "$triton_req" && has "$vpy" triton; then
      tpy=$vpy
      pythons+=("$vpy")
    else
      missing "cannot install $triton_req"
    fi
  else
    missing "no Python here can import triton (tried ${pythons[*]}; GEMMTUNE_OPTIONAL_INSTALL=0)"
  fi
fi
if [ -n "$tpy" ]; then
  exe=$("$tpy" -c "import sys; print(sys.executable)")
  say "triton $("$tpy" -c "import triton; print(triton.__version__)") in $exe"
  printf 'export GEMMTUNE_PYTHON=%q\n' "$exe"
fi

# --- CUTLASS headers
cutlass_root() {  # the nvidia-cutlass package's CUTLASS root in Python $1 ("" when it has none)
  "$1" -c "import os, cutlass_library as c; r = c.source_path
print(r if os.path.isfile(os.path.join(r, 'include', 'cutlass', 'cutlass.h')) else '')" 2>/dev/null || true
}
root=""
if [ -n "${CUTLASS_DIR:-}" ]; then
  if [ -f "$CUTLASS_DIR/include/cutlass/cutlass.h" ]; then
    root=$CUTLASS_DIR
  else
    say "CUTLASS_DIR=$CUTLASS_DIR has no include/cutlass/cutlass.h: looking for the nvidia-cutlass package instead"
  fi
fi
if [ -z "$root" ]; then
  for p in ${tpy:+"$tpy"} "${pythons[@]}"; do
    root=$(cutlass_root "$p")
    [ -n "$root" ] && break
  done
fi
if [ -z "$root" ]; then
  if [ "$install" = 1 ]; then
    # Only the headers are wanted: the package's Python dependencies (cuda-python, scipy, ...) serve its Python
    # emitter, which gemmtune does not use, and `import cutlass_library` needs none of them.
    say "installing $cutlass_req (headers) into $venv"
    if vpy=$(venv_python) && pip_install "$vpy" --no-deps "$cutlass_req"; then
      root=$(cutlass_root "$vpy")
    fi
    [ -n "$root" ] || missing "cannot install $cutlass_req"
  else
    missing "no CUTLASS headers (neither CUTLASS_DIR nor the nvidia-cutlass package; GEMMTUNE_OPTIONAL_INSTALL=0)"
  fi
fi
if [ -n "$root" ]; then
  say "CUTLASS headers in $root/include"
  printf 'export CUTLASS_DIR=%q\n' "$root"
fi
