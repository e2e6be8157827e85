#!/usr/bin/env bash
# Session 19 device call 2: PyTorch's peers on all 12 large shapes, eager and compiled alternating (3 rounds),
# Inductor default, then with its persistent TMA Triton template enabled; tables against call 1's gemmtune bench.
set -u
O=$1
G=bench/results/2026-11-22-s19/call1/large.json
timeout 260 python3 bench/torch_baseline.py --suite bench/suites/large.json --json $O/torch_large.json \
  --gemmtune-json $G > $O/torch_large.txt 2> $O/torch_large.log
echo "torch default rc=$?"; cat $O/torch_large.txt
timeout 300 python3 bench/torch_baseline.py --suite bench/suites/large.json --json $O/torch_large_tma.json \
  --inductor-option triton.enable_persistent_tma_matmul=True \
  --gemmtune-json $G > $O/torch_large_tma.txt 2> $O/torch_large_tma.log
echo "torch tma rc=$?"; cat $O/torch_large_tma.txt
gzip -f $O/torch_large.log $O/torch_large_tma.log
