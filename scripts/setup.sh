#!/usr/bin/env bash
# Makes this machine ready to build gemmtune: installs the Debian/Ubuntu packages it needs that are missing (apt-get,
# through sudo when not root) and checks that a CUDA toolkit (12.8+: NVRTC, cuBLASLt, cuda.h) is there.
# scripts/example.sh and scripts/test.sh run it first; on a machine that has everything it only checks.
set -euo pipefail

pkgs=(cmake ninja-build g++ libgtest-dev libfmt-dev nlohmann-json3-dev libcli11-dev)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

if command -v dpkg-query >/dev/null && command -v apt-get >/dev/null; then
  missing=()
  for p in "${pkgs[@]}"; do installed "$p" || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo=()
    if [ "$(id -u)" != 0 ]; then
      command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
      sudo=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    # The package lists of a fresh machine (or container) may be empty or stale: update once if the install fails.
    "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" ||
      { "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; }
  fi
else
  echo "setup: not a Debian/Ubuntu system; make sure these (or their equivalents) are installed: ${pkgs[*]}"
fi

# The CUDA toolkit comes from NVIDIA's repositories, not the distribution: check for it, do not install it.
cuda_root=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [ ! -f "$cuda_root/include/cuda.h" ] && command -v nvcc >/dev/null; then
  cuda_root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
fi
if [ ! -f "$cuda_root/include/cuda.h" ] || [ ! -f "$cuda_root/include/nvrtc.h" ]; then
  echo "setup: no CUDA toolkit found (looked in ${CUDAToolkit_ROOT:-/usr/local/cuda} and for nvcc on PATH)." >&2
  echo "setup: install CUDA 12.8 or newer (https://developer.nvidia.com/cuda-downloads) or set CUDAToolkit_ROOT." >&2
  exit 1
fi
echo "setup: ok (CUDA toolkit in $cuda_root)"
