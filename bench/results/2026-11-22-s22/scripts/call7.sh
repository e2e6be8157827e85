#!/usr/bin/env bash
# Session 22 device call 7 (final build): the ring enumerated with one m-block and 4 stages, its registers in the
# ranking. 1) GemvGpu, EpilogueGpu, Sm90EpilogueGpu 2) default tunes at M = 8 / 16 (is the ring's best in the top 8?)
# 3) the decode suite.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 300 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='GemvGpu.*:EpilogueGpu.*:Sm90EpilogueGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw" $O/tests.log | head -20
for s in 8,28672,4096 16,4096,14336 8,4096,14336 16,4096,4096; do
  IFS=, read -r m n k <<<"$s"
  L=$O/all_${m}_${n}_${k}.log
  GEMMTUNE_CACHE_DIR=/tmp/gtc_l timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k --no-cache < /dev/null > $L.out 2> $L
  echo "== default ${m}x${n}x${k} rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-140)"
done
GEMMTUNE_CACHE_DIR=/tmp/gtc_d timeout 150 build-lead/gemmtune bench --suite bench/suites/decode.json --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode suite rc=$?"; cut -c1-175 $O/decode.txt
gzip -f $O/tests.log $O/decode.log
tar czf $O/logs.tgz -C $O $(cd $O && ls all_* tests.log.gz decode.log.gz) && (cd $O && rm -f all_* tests.log.gz decode.log.gz)
