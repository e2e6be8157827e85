#!/usr/bin/env bash
# Configures and builds gemmtune into ${BUILD_DIR:-build} (Release, Ninja when available).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
    -DCUDAToolkit_ROOT=${CUDAToolkit_ROOT:-/usr/local/cuda}
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
