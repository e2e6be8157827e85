#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh), builds gemmtune and runs the CPU tests (what CI runs): every ctest entry
# but those labelled `gpu` or `sweep`, in parallel, one line per test case. That includes the `package` entry, which
# installs gemmtune to a temporary prefix and builds examples/consumer against it.
# Then the Python package's tests (scripts/test_python.sh: `pip install .` into a virtual environment, pytest).
# Before the build, scripts/optional_deps.sh finds (or installs from PyPI into build-py/pyenv) Triton and the CUTLASS
# headers, so the tests of the optional `triton` and `cutlass` backends compile their kernels instead of skipping;
# GEMMTUNE_REQUIRE_OPTIONAL=1 (CI) makes a missing one an error, GEMMTUNE_OPTIONAL_INSTALL=0 installs nothing.
# `scripts/test.sh gpu` (on a GPU host) then runs the `gpu` tests too, one at a time, and the Python GPU tests.
# `scripts/test.sh sweep` (on a GPU host) builds and runs only the kernel sweep (ctest -L sweep: its shards one after
# another, docs/TESTING.md), then merges the shards' tables into $BUILD_DIR/sweep/sweep.md (and sweep.json); its exit
# status says whether every candidate passed or was refused with a reason.
# Neither `gpu` nor `sweep` entries run otherwise. Other arguments go to ctest (e.g. scripts/test.sh -L unit,
# scripts/test.sh -R Sm90).
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-build}
gpu=0
sweep=0
if [ "${1:-}" = gpu ]; then gpu=1; shift; fi
if [ "${1:-}" = sweep ]; then sweep=1; shift; fi
scripts/setup.sh
deps=$(scripts/optional_deps.sh)
eval "$deps"
scripts/build.sh

# Kernel caches of the tests go to a fresh directory, so a stale cache never hides a compile failure.
export GEMMTUNE_CACHE_DIR=${GEMMTUNE_CACHE_DIR:-$(mktemp -d /tmp/gemmtune-test-cache.XXXXXX)}
if [ "$sweep" = 1 ]; then
  out="$BUILD_DIR/sweep"
  mkdir -p "$out"
  rm -f "$out"/shard_*.json "$out"/shard_*.md "$out"/sweep.json "$out"/sweep.md
  rc=0
  ctest --test-dir "$BUILD_DIR" -L sweep --output-on-failure "$@" || rc=$?
  shopt -s nullglob
  parts=("$out"/shard_*.json)
  if [ ${#parts[@]} -gt 0 ]; then
    "$BUILD_DIR/tests/gemmtune_sweep" --merge "${parts[@]}" --json "$out/sweep.json" --markdown "$out/sweep.md" ||
      rc=$((rc ? rc : $?))
    echo "sweep: table in $out/sweep.md (paste it under \"Last sweep\" in docs/TESTING.md), every result in $out/sweep.json"
  else
    echo "sweep: no shard wrote results (no GPU? see the ctest output above)"
    rc=$((rc ? rc : 3))
  fi
  exit "$rc"
fi
ctest --test-dir "$BUILD_DIR" -LE 'gpu|sweep' -j "$(nproc)" --output-on-failure "$@"
if [ "$gpu" = 1 ]; then
  ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure "$@"
  scripts/test_python.sh gpu
else
  scripts/test_python.sh
fi
