#!/usr/bin/env bash
# Session 20 device call 12: call 11's failures fixed (a fused chain under swap=1 now reads its residual at the
# tile's batch: EpiParams::at_batch), the residual edge-copy rule no longer refusing swap=1: the swap and epilogue
# GPU tests again: every GPU test.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 580 build-lead/tests/gemmtune_gpu_tests \
  > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills|err=" $O/tests.log | head -20
grep -A5 "Failure" $O/tests.log | grep -E "tile=" | cut -c1-300 | head -10
gzip -f $O/tests.log
