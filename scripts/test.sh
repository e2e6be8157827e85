#!/usr/bin/env bash
# Builds gemmtune and runs the CPU tests (what CI runs). On a GPU host, `scripts/test.sh gpu` runs the GPU tests too.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build} scripts/build.sh
# Kernel caches of the tests go to a fresh directory, so a stale cache never hides a compile failure.
export GEMMTUNE_CACHE_DIR=${GEMMTUNE_CACHE_DIR:-$(mktemp -d /tmp/gemmtune-test-cache.XXXXXX)}
if [ "${1:-}" = "gpu" ]; then
  ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure
else
  ctest --test-dir "${BUILD_DIR:-build}" -LE gpu --output-on-failure
fi
