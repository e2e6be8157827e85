#!/usr/bin/env bash
# session-8 device call 7: gpc twins with band width 8 (the clusters of one GPC) instead of band_group's choice:
# both suites, and the Sm90 GPU tests (the enumeration changed only; the tuner's tests enumerate).
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
timeout 120 $B/tests/gemmtune_gpu_tests --gtest_filter='Sm90*:Tuner*:*Tune*' > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
timeout 240 $B/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json > $O/bench_large.txt 2> $O/bench_large.log
echo "bench large rc=$?"; tail -15 $O/bench_large.txt
timeout 180 $B/gemmtune bench --suite bench/suites/llama3_8b.json --json $O/bench_llama3_8b.json > $O/bench_llama3_8b.txt 2> $O/bench_llama3_8b.log
echo "bench llama rc=$?"; tail -3 $O/bench_llama3_8b.txt
cd $O && gzip -f gpu_tests.log && tar czf logs.tgz bench_large.log bench_llama3_8b.log && rm -f bench_large.log bench_llama3_8b.log
