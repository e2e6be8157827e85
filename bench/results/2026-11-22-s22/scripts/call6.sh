#!/usr/bin/env bash
# Session 22 device call 6: the ring enumerated at 4 stages only. 1) CublasLtGpu and TunerGpu tests (the harness
# change) and GemvGpu 2) the large suite twice (cold caches; the done-when's sm90 picks on the new harness) 3) the
# decode suite.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 280 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='*CublasLtGpu*:TunerGpu.*:GemvGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw" $O/tests.log | head -20
for rep in 1 2; do
  GEMMTUNE_CACHE_DIR=/tmp/gtc_large$rep timeout 170 build-lead/gemmtune bench --suite bench/suites/large.json \
    --json $O/large$rep.json > $O/large$rep.txt 2> $O/large$rep.log
  echo "large $rep rc=$?"; cut -c1-175 $O/large$rep.txt
  grep -A7 "runoff" $O/large$rep.log | grep -E "runoff|us$" | head -0
  gzip -f $O/large$rep.log
done
GEMMTUNE_CACHE_DIR=/tmp/gtc_d timeout 150 build-lead/gemmtune bench --suite bench/suites/decode.json --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode suite rc=$?"; cut -c1-175 $O/decode.txt
gzip -f $O/tests.log $O/decode.log
