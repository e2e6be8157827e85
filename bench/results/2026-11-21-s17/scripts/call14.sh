#!/usr/bin/env bash
# Session 17 device call 14: every GPU test on the final build (the ranking changes after call 7 change which
# candidates the tuner tests time and verify).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 400 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
