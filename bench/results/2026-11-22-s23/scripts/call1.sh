#!/usr/bin/env bash
# Session 23 device call 1: HEAD (414f0c2) on the GPU. 1) the GPU tests that the last review mend (validate_canonical,
# gemv compile parsing its config once) touches: GemvGpu, TunerGpu, EpilogueGpu, the sm90 refusal / broadcast tests
# 2) the large suite with sm90 alone (the "geomean with the tuned sm90 winner") 3) the large suite with every
# backend (the done-when's sm90 picks).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 330 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='GemvGpu.*:TunerGpu.*:EpilogueGpu.*:Sm90Gpu.BroadcastC:Sm90Gpu.MisalignedPointerThrows' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "ms total|^\[  FAILED|Failure|Which is|threw" $O/tests.log | head -20
GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 120 build-lead/gemmtune bench --suite bench/suites/large.json --backends sm90 \
  --json $O/large_sm90.json > $O/large_sm90.txt 2> $O/large_sm90.log
echo "== large sm90 alone rc=$?"; cut -c1-175 $O/large_sm90.txt
GEMMTUNE_CACHE_DIR=/tmp/gtc_l timeout 120 build-lead/gemmtune bench --suite bench/suites/large.json \
  --json $O/large.json > $O/large.txt 2> $O/large.log
echo "== large rc=$?"; cut -c1-175 $O/large.txt
gzip -f $O/tests.log $O/large_sm90.log $O/large.log
