#!/usr/bin/env bash
# Session 19 device call 1: gemmtune's large suite (cold caches) and PyTorch's peers on the same shapes:
# F.linear (cuBLAS) and torch.compile(max-autotune-no-cudagraphs), with Inductor's cold autotune time and pick.
# Torch compiles the first six shapes here (call 2: the other six), within the call's time limit.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name())'
GEMMTUNE_CACHE_DIR=/tmp/gtc_large timeout 200 build-lead/gemmtune bench --suite bench/suites/large.json \
  --json $O/large.json > $O/large.txt 2>$O/large.log
echo "gemmtune bench rc=$?"; cut -c1-200 $O/large.txt
timeout 330 python3 bench/torch_baseline.py --suite bench/suites/large.json --json $O/torch_large.json \
  --compile-filter qkv_proj_m2048,o_proj_m2048,gate_up_proj_m2048,down_proj_m2048,qkv_proj_m8192,o_proj_m8192 \
  --gemmtune-json $O/large.json > $O/torch_large.txt 2> $O/torch_large.log
echo "torch rc=$?"; cat $O/torch_large.txt; tail -5 $O/torch_large.log
gzip -f $O/large.log $O/torch_large.log
