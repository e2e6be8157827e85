#!/usr/bin/env bash
# session-9 device call 9: alpha == 1 specialised: the sm90 GEMM and epilogue GPU tests (alpha 1 rotated in).
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
timeout 170 $B/tests/gemmtune_gpu_tests --gtest_filter='Sm90Gpu.*:Sm90EpilogueGpu.*' > $O/gpu_sm90.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_sm90.log | tr '\n' ' ')"
grep -E "Which is|FAILED" $O/gpu_sm90.log | head -20
gzip -f $O/*.log
