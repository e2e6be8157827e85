#!/usr/bin/env bash
# Session 21 device call 7: the review mends (the two gemv kernels' output code in one Output helper,
# kernels/gemv/gemv_common.cuh; one jit_compile_result for the three JIT compile paths): the GPU tests they touch.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 400 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='GemvGpu.*:EpilogueGpu.*:TunerGpu.*:Sm90Gpu.BroadcastC:Sm90Gpu.MisalignedPointerThrows' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw|spills|err=" $O/tests.log | head -20
gzip -f $O/tests.log
