#!/usr/bin/env bash
# Configures and builds gemmtune into ${BUILD_DIR:-build} (Release, Ninja when available).
# Arguments are passed to the configure step (e.g. scripts/build.sh -DGEMMTUNE_BUILD_TESTS=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

# Configure when the build directory has no build system yet (a fresh one, or one whose last configure failed: CMake
# writes build.ninja / Makefile only when configure succeeds) or when configure arguments are given. A configured
# directory keeps its generator, and the build itself re-runs CMake when a CMakeLists.txt changes.
if [ $# -gt 0 ] || { [ ! -f "$BUILD_DIR/build.ninja" ] && [ ! -f "$BUILD_DIR/Makefile" ]; }; then
  args=(-DCMAKE_BUILD_TYPE=Release)
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] && command -v ninja >/dev/null; then args+=(-G Ninja); fi
  if [ -n "${CUDAToolkit_ROOT:-}" ]; then
    args+=(-DCUDAToolkit_ROOT="$CUDAToolkit_ROOT")
  elif [ -d /usr/local/cuda ]; then
    args+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
  fi
  cmake -S . -B "$BUILD_DIR" "${args[@]}" "$@"
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
