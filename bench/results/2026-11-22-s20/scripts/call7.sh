#!/usr/bin/env bash
# Session 20 device call 7 (decode tiles: swap=1 with the transposed store, tile N 16-64 without swap for a col-major
# D, up to 16 stages; split twins and spilling tail=sk configs refused): every GPU test.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 560 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills|err=" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
