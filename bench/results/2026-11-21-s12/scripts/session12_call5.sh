#!/usr/bin/env bash
# session-12 device call 5: the committed build 6bd539a (build-lead: strip_begin / strip_end, same semantics as call
# 4's put_strip, different register allocation) — the sm90 and epilogue GPU tests (the device budget left no room for
# the whole suite; call 4 ran all 151 on the put_strip build).
set -u
O=$1
LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 250 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='Sm90Gpu.*:Sm90EpilogueGpu.*:EpilogueGpu.*' > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
