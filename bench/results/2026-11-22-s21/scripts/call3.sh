#!/usr/bin/env bash
# Session 21 device call 3 (same build as call 2): the GPU tests call 2's time limit cut (TunerGpu, CublasLtGpu);
# a random sweep of skinny problems through every backend; the decode suite (cold caches) and Inductor on it.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 200 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='TunerGpu.*:CublasLtGpu*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills|err=" $O/tests.log | head -20
GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 170 python3 bench/results/2026-11-22-s21/scripts/sweep_skinny.py \
  build-lead/gemmtune $O/sweep 40 21 > $O/sweep.txt 2>&1
echo "sweep rc=$?"; grep -E "BAD|REFUSED|FLAG|problems" $O/sweep.txt | head -20
GEMMTUNE_CACHE_DIR=/tmp/gtc_d timeout 150 build-lead/gemmtune bench --suite bench/suites/decode.json \
  --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "decode rc=$?"; cut -c1-175 $O/decode.txt
timeout 230 python3 bench/torch_baseline.py --suite bench/suites/decode.json --json $O/torch_decode.json \
  --gemmtune-json $O/decode.json > $O/torch_decode.txt 2> $O/torch_decode.log
echo "torch decode rc=$?"; sed -n '/x inductor/,$p' $O/torch_decode.txt | cut -c1-175
tar czf $O/sweep.tgz -C $O sweep && rm -rf $O/sweep
gzip -f $O/tests.log $O/decode.log $O/torch_decode.log
