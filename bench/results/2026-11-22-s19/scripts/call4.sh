#!/usr/bin/env bash
# Session 19 device call 4: PyTorch's peers timed as CUDA-graph replays (call 3 timed direct calls; at M = 16 the same
# cuBLAS kernel ran 8 us slower through torch.compile's wrapper), Llama-3-8B then large, against calls 3 and 1.
set -u
O=$1
timeout 280 python3 bench/torch_baseline.py --suite bench/suites/llama3_8b.json --json $O/torch_llama3_8b.json \
  --gemmtune-json bench/results/2026-11-22-s19/call3/llama3_8b.json > $O/torch_llama3_8b.txt 2> $O/torch_llama3_8b.log
echo "torch llama rc=$?"; cat $O/torch_llama3_8b.txt
timeout 280 python3 bench/torch_baseline.py --suite bench/suites/large.json --json $O/torch_large.json \
  --gemmtune-json bench/results/2026-11-22-s19/call1/large.json > $O/torch_large.txt 2> $O/torch_large.log
echo "torch large rc=$?"; cat $O/torch_large.txt
gzip -f $O/torch_llama3_8b.log $O/torch_large.log
