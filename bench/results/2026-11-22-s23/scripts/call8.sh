#!/usr/bin/env bash
# Session 23 device call 8: the gemv mma kernel with K split across CTAs (csplit = 2-8, enumerated where a config's
# row groups leave SMs without two CTAs, from 4 vectors). 1) GemvGpu.CtaSplit (correctness, 4 launches on 2 streams)
# 2) whole gemv lists with cuBLASLt's default at the N = 4096 / 8192 decode shapes 3) the decode suite.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 150 build-lead/tests/gemmtune_gpu_tests --gtest_filter='GemvGpu.CtaSplit' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw|err=" $O/tests.log | head -20
export GEMMTUNE_CACHE_DIR=/tmp/gtc
for pr in "8 4096 14336" "16 4096 14336" "16 8192 8192" "8 4096 4096"; do
  set -- $pr
  L=$O/all_$1x$2x$3.log
  timeout 90 build-lead/gemmtune tune --m $1 --n $2 --k $3 --backends gemv,cublaslt --top-k 0 --no-cache < /dev/null > $L.out 2> $L
  echo "== $1x$2x$3 $(grep -E 'winner' $L.out | head -1)"
  grep -E "^  gemv" $L | sed -E 's/ +/ /g' | awk '{for(i=1;i<=NF;i++) if($i=="us"){print $(i-1), $1; break}}' | sort -n | head -6
  grep -E "^  cublaslt:default" $L | head -1 | cut -c1-80
done
timeout 200 build-lead/gemmtune bench --suite bench/suites/decode.json --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode suite rc=$?"; cut -c1-175 $O/decode.txt
gzip -f $O/decode.log $O/tests.log
tar czf $O/logs.tgz -C $O $(cd $O && ls all_*) && rm -f $O/all_*
