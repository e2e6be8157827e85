#!/usr/bin/env bash
# session-12 device call 1: the whole GPU test suite on HEAD f5a4459 (build-lead) — the f32 tile-N-168 fix to the
# wide strips was not run on the GPU in session 11 — then the large suite as this session's baseline.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 330 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
GEMMTUNE_CACHE_DIR=/tmp/gtc_large timeout 150 build-lead/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json \
  > $O/bench_large.txt 2> $O/bench_large.log
echo "== large rc=$?"; cut -c1-175 $O/bench_large.txt
gzip -f $O/*.log
