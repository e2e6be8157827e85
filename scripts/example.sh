#!/usr/bin/env bash
# The main job on a fresh machine: installs what is missing (scripts/setup.sh), builds, and tunes the example problem,
# y = x·Wᵀ with x 4096x4096 and W 4096x4096 in bf16. Without a GPU it runs the compile-only dry run of the same problem
# (every candidate compiled by NVRTC: time, registers, spills, shared memory) and still exits 0.
# Extra arguments go to `gemmtune tune` / `gemmtune compile` (e.g. --top-k 4).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
scripts/setup.sh
BUILD_DIR=$BUILD_DIR scripts/build.sh

problem=(--m 4096 --n 4096 --k 4096 --A bf16:row --B bf16:col --D bf16:row)
echo "+ gemmtune tune ${problem[*]}${*:+ $*}"
rc=0
"$BUILD_DIR/gemmtune" tune "${problem[@]}" "$@" || rc=$?
if [ "$rc" = 3 ]; then  # the CLI's exit status for "no GPU", given before anything runs
  echo "no GPU on this machine: running the compile-only dry run of the same problem instead"
  echo "+ gemmtune compile ${problem[*]}${*:+ $*}"
  "$BUILD_DIR/gemmtune" compile "${problem[@]}" "$@"
  rc=0
fi
exit "$rc"
