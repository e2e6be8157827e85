#!/usr/bin/env bash
# session-10 device call 6: the GPU tests that calls 4-5 did not run, on the final build (with calls 4-5 every GPU test
# has run on the 168 code).
set -u
O=$1; B=build-lead
export LD_LIBRARY_PATH=$B GEMMTUNE_CACHE_DIR=/tmp/gtc_t
timeout 140 $B/tests/gemmtune_gpu_tests \
  --gtest_filter='-Sm90Gpu.ShapesLayoutsDtypesConfigs:Sm90Gpu.ManyTilesPerCta:Sm90Gpu.TileOrdersRepeatedLaunches:Sm90Gpu.StreamKTail:Sm90EpilogueGpu.TileN168Chains' \
  > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
