#!/usr/bin/env bash
# Session 21 device call 10: the GPU tests whose harness moved into tests/gpu/gpu_jobs.h (one compile-then-run job
# runner for the gemv and sm90 epilogue tests instead of two copies).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 500 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='GemvGpu.*:Sm90EpilogueGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw|spills|err=" $O/tests.log | head -20
gzip -f $O/tests.log
