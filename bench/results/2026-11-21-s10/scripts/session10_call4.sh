#!/usr/bin/env bash
# session-10 device call 4 (final): tile N = 168 limited to 112-byte strips (the 216 config of call 3 spilled 24 bytes
# with a fused chain + C); the GPU tests that cover it, then the large and llama3_8b suites with everything of this
# session (first pass side by side, 168 in the config space).
set -u
O=$1; B=build-lead; W=/tmp/c4; mkdir -p $W
export LD_LIBRARY_PATH=$B
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 200 $B/tests/gemmtune_gpu_tests \
  --gtest_filter='Sm90Gpu.ShapesLayoutsDtypesConfigs:Sm90Gpu.ManyTilesPerCta:Sm90EpilogueGpu.*' > $W/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $W/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $W/gpu_tests.log | head -20
suite() {  # tag suite
  GEMMTUNE_CACHE_DIR=/tmp/gtc_$1 timeout 170 $B/gemmtune bench --suite bench/suites/$2.json --json $W/bench_$1.json \
    > $W/bench_$1.txt 2> $W/bench_$1.log
  echo "== $1 rc=$?"; cut -c1-175 $W/bench_$1.txt
}
suite large large
suite llama llama3_8b
gzip -f $W/*.log
tar czf $O/call4.tgz -C $W .
