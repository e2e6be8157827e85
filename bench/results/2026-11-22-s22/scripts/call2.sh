#!/usr/bin/env bash
# Session 22 device call 2: the timing's buffer sets (ceil: >= 2x L2 of other sets between two reads of one set,
# never one set). 1) TunerGpu.* 2) whole gemv lists and default tunes at M = 1 (first pass vs runoff)
# 3) the decode suite.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=build-lead
timeout 200 build-lead/tests/gemmtune_gpu_tests --gtest_filter='TunerGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw" $O/tests.log | head -20
for s in 1,4096,14336 1,28672,4096 1,4096,4096; do
  IFS=, read -r m n k <<<"$s"
  L=$O/all_${m}_${n}_${k}.log
  timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k --backends gemv --top-k 0 --min-time-ms 30 --no-cache \
    < /dev/null > $L.out 2> $L
  echo "== gemv ${m}x${n}x${k} rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-140)"
  timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k --no-cache < /dev/null > $L.all.out 2> $L.all
  echo "   default rc=$? $(grep -m1 -o 'winner.*' $L.all.out | cut -c1-140)"
done
timeout 200 build-lead/gemmtune bench --suite bench/suites/decode.json --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode suite rc=$?"; cut -c1-175 $O/decode.txt
tar czf $O/logs.tgz -C $O $(cd $O && ls all_*) && (cd $O && rm -f all_*)
gzip -f $O/tests.log $O/decode.log
