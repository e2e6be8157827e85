#!/usr/bin/env bash
# session-10 device call 2: the tuner's first pass timed side by side (all verified candidates interleaved) instead of
# one at a time. (1) GPU tests (all; the new TunerGpu tests: crash while timing side by side -> one-at-a-time
# fallback; both timing modes). (2) The large suite with the new first pass, then with --one-at-a-time (the old
# behaviour), each in a fresh cache; llama3_8b with the new one. Everything is packed into one archive.
set -u
O=$1; B=build-lead; W=/tmp/c2; mkdir -p $W
export LD_LIBRARY_PATH=$B
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 300 $B/tests/gemmtune_gpu_tests > $W/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $W/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is" $W/gpu_tests.log | head -20
suite() {  # tag suite extra-args
  GEMMTUNE_CACHE_DIR=/tmp/gtc_$1 timeout 170 $B/gemmtune bench --suite bench/suites/$2.json --json $W/bench_$1.json $3 \
    > $W/bench_$1.txt 2> $W/bench_$1.log
  echo "== $1 rc=$?"; cat $W/bench_$1.txt | cut -c1-190
}
suite large_sbs large ""
suite large_seq large "--one-at-a-time"
suite llama_sbs llama3_8b ""
tar czf $O/call2.tgz -C $W .
