#!/usr/bin/env bash
# Session 21 device call 2: the gemv ranking refitted to call 1's timings; every GPU test on this build.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 560 build-lead/tests/gemmtune_gpu_tests > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw|spills|err=" $O/tests.log | head -20
gzip -f $O/tests.log
