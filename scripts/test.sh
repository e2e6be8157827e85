#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh), builds gemmtune and runs the CPU tests (what CI runs): every ctest entry
# but those labelled `gpu`, in parallel, one line per test case. That includes the `package` entry, which installs
# gemmtune to a temporary prefix and builds examples/consumer against it.
# Then the Python package's tests (scripts/test_python.sh: `pip install .` into a virtual environment, pytest).
# Before the build, scripts/optional_deps.sh finds (or installs from PyPI into build-py/pyenv) Triton and the CUTLASS
# headers, so the tests of the optional `triton` and `cutlass` backends compile their kernels instead of skipping;
# GEMMTUNE_REQUIRE_OPTIONAL=1 (CI) makes a missing one an error, GEMMTUNE_OPTIONAL_INSTALL=0 installs nothing.
# `scripts/test.sh gpu` (on a GPU host) then runs the `gpu` tests too, one at a time, and the Python GPU tests.
# Other arguments go to ctest (e.g. scripts/test.sh -L unit, scripts/test.sh -R Sm90).
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-build}
gpu=0
if [ "${1:-}" = gpu ]; then gpu=1; shift; fi
scripts/setup.sh
deps=$(scripts/optional_deps.sh)
eval "$deps"
scripts/build.sh

# Kernel caches of the tests go to a fresh directory, so a stale cache never hides a compile failure.
export GEMMTUNE_CACHE_DIR=${GEMMTUNE_CACHE_DIR:-$(mktemp -d /tmp/gemmtune-test-cache.XXXXXX)}
ctest --test-dir "$BUILD_DIR" -LE gpu -j "$(nproc)" --output-on-failure "$@"
if [ "$gpu" = 1 ]; then
  ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure "$@"
  scripts/test_python.sh gpu
else
  scripts/test_python.sh
fi
