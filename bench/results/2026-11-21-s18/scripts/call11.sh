#!/usr/bin/env bash
# Session 18 device call 11: every GPU test after the review mend of the strip control (strip_begin / strip_end share
# the owner's thread count and sync; no behaviour change intended).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 500 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
