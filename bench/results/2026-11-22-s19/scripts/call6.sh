#!/usr/bin/env bash
# Session 19 device call 6 (split twins only from 128 k-blocks, 2x1 ping-pong sk epi=warp at N 112/128 refused, the
# tail's partial count computed only for tails): every GPU test, then the Llama-3-8B suite (cold caches).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 420 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills" $O/gpu_tests.log | head -20
GEMMTUNE_CACHE_DIR=/tmp/gtc_l8 timeout 170 build-lead/gemmtune bench --suite bench/suites/llama3_8b.json \
  --json $O/llama3_8b.json > $O/llama3_8b.txt 2>$O/llama3_8b.log
echo "llama3_8b rc=$?"; cut -c1-200 $O/llama3_8b.txt
gzip -f $O/gpu_tests.log $O/llama3_8b.log
