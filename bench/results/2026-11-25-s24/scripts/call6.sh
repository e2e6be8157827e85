#!/usr/bin/env bash
# Session 24 device call 6: the final gemv ranking (occ=3 configs of K split 8 and 4 first from 4 vectors): GemvGpu
# tests (their configs are picked by list position, so the new order runs others), the decode suite (session 23:
# 1.052x) and the Llama-3-8B suite.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 200 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='GemvGpu.ShapesLayoutsConfigs:GemvGpu.Chains:TunerGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw" $O/tests.log | head -20
GEMMTUNE_CACHE_DIR=/tmp/gtc_d timeout 200 build-lead/gemmtune bench --suite bench/suites/decode.json \
  --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode rc=$?"; cut -c1-170 $O/decode.txt
GEMMTUNE_CACHE_DIR=/tmp/gtc_8 timeout 150 build-lead/gemmtune bench --suite bench/suites/llama3_8b.json \
  --json $O/llama3_8b.json > $O/llama3_8b.txt 2> $O/llama3_8b.log
echo "== llama3_8b rc=$?"; cut -c1-170 $O/llama3_8b.txt
gzip -f $O/tests.log $O/decode.log $O/llama3_8b.log
