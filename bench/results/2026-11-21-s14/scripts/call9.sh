#!/usr/bin/env bash
# Session 14 call 9 (run twice: 64x176 first, refused for col-major C; then 64x128): Sm90Gpu.BroadcastC with a ping-pong config that takes C
# registers, so only its 4 coop cases ran), the other batched GPU tests again, memcheck on one broadcast-C run.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t build-lead/tests/gemmtune_gpu_tests --gtest_filter='Sm90Gpu.BroadcastC:TunerGpu.BatchedBetaAndF32Output:Sm90Gpu.ShapesLayoutsDtypesConfigs' > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
GEMMTUNE_CACHE_DIR=/tmp/gtc_t compute-sanitizer --tool memcheck --error-exitcode 9 build-lead/tests/gemmtune_gpu_tests --gtest_filter='Sm90Gpu.BroadcastC' > $O/memcheck.log 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $O/memcheck.log)"
