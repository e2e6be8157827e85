#!/usr/bin/env bash
# Session 21 device call 11: the last review mends (gemv launch parameters set once per executable, one
# epi::operands_aligned for the sm90 and gemv launches, one enumeration loop for both gemv kernels): the GPU tests
# of those launch paths.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 500 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='GemvGpu.*:Sm90EpilogueGpu.*:EpilogueGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw|spills|err=" $O/tests.log | head -20
gzip -f $O/tests.log
