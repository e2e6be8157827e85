#!/usr/bin/env bash
# Session 22 device call 11: the review mends (the kernel-side ring size removed; no code path changes): GemvGpu and
# TunerGpu on the final build.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
timeout 300 build-lead/tests/gemmtune_gpu_tests --gtest_filter='GemvGpu.*:TunerGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw" $O/tests.log | head -20
gzip -f $O/tests.log
