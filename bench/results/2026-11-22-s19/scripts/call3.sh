#!/usr/bin/env bash
# Session 19 device call 3: the Llama-3-8B suite (M = 16 ... 8192): gemmtune bench (cold caches), then PyTorch's
# peers (Inductor default) on every shape, with the table against gemmtune.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_l8 timeout 260 build-lead/gemmtune bench --suite bench/suites/llama3_8b.json \
  --json $O/llama3_8b.json > $O/llama3_8b.txt 2>$O/llama3_8b.log
echo "gemmtune bench rc=$?"; cut -c1-200 $O/llama3_8b.txt
timeout 300 python3 bench/torch_baseline.py --suite bench/suites/llama3_8b.json --json $O/torch_llama3_8b.json \
  --gemmtune-json $O/llama3_8b.json > $O/torch_llama3_8b.txt 2> $O/torch_llama3_8b.log
echo "torch rc=$?"; cat $O/torch_llama3_8b.txt
gzip -f $O/llama3_8b.log $O/torch_llama3_8b.log
