#!/usr/bin/env bash
# Session 23 device call 9: the csplit build's GPU tests: every gemv test (run_job now poisons D before each launch
# and runs launches 3-4 on a second stream), the sm90 tests of the per-stream scratch (now src/backends/
# stream_scratch.h: stream-K tail and split, the dynamic tile order on two streams), the sm90 epilogue tests (run_job),
# the tuner tests; a default tune at the two shapes csplit is for, and the Llama-3-8B suite.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 400 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='GemvGpu.*:Sm90Gpu.StreamKTail:Sm90Gpu.StreamKSplit:Sm90Gpu.TileOrdersRepeatedLaunches:Sm90EpilogueGpu.*:TunerGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "ms total|jobs run|^\[  FAILED|Failure|Which is|threw|err=" $O/tests.log | head -30
GEMMTUNE_CACHE_DIR=/tmp/gtc timeout 150 build-lead/gemmtune bench --suite bench/suites/llama3_8b.json --json $O/llama3_8b.json > $O/llama3_8b.txt 2> $O/llama3_8b.log
echo "== llama3_8b rc=$?"; cut -c1-175 $O/llama3_8b.txt
gzip -f $O/tests.log $O/llama3_8b.log
