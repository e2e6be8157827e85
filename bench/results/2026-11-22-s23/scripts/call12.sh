#!/usr/bin/env bash
# Session 23 device call 12: the K split's CTAs as one cluster along z, meeting in distributed shared memory (no
# global workspace, no counts). 1) GemvGpu (CtaSplit: 19 jobs x 4 launches on 2 streams; the other gemv tests)
# 2) timing_probe beside the best plain config (call 11's pairs) 3) whole gemv lists with cuBLASLt's default
# 4) default tunes with --top-k 12.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 200 build-lead/tests/gemmtune_gpu_tests --gtest_filter='GemvGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs run|^\[  FAILED|Failure|Which is|threw|err=" $O/tests.log | head -20
export GEMMTUNE_CACHE_DIR=/tmp/gtc NOFLUSH=1 ROUNDS=150
P8="gemv:vec=m,warps=8,rows=32,ksplit=8,unroll=2,mma=1"
S8a="gemv:vec=m,warps=8,rows=32,ksplit=1,unroll=1,mma=1,csplit=8"
S8b="gemv:vec=m,warps=8,rows=16,ksplit=2,unroll=1,mma=1,csplit=4"
P16="gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1"
S16="gemv:vec=m,warps=8,rows=16,ksplit=1,unroll=2,mma=1,csplit=8"
echo "== probe 8x4096x14336 $P8 | $S8a | $S8b"
timeout 90 build-lead/timing_probe 8 4096 14336 "3" $P8 $S8a $S8b 2>&1 | grep -E "^rep|rror"
echo "== probe 16x4096x14336 $P16 | $S16"
timeout 90 build-lead/timing_probe 16 4096 14336 "3" $P16 $S16 2>&1 | grep -E "^rep|rror"
for pr in "8 4096 14336" "16 4096 14336"; do
  set -- $pr
  L=$O/all_$1x$2x$3.log
  timeout 90 build-lead/gemmtune tune --m $1 --n $2 --k $3 --backends gemv,cublaslt --top-k 0 --no-cache < /dev/null > $L.out 2> $L
  echo "== whole list $1x$2x$3 $(grep -E 'winner' $L.out | head -1)"
  grep -E "^  gemv" $L | sed -E 's/ +/ /g' | awk '{for(i=1;i<=NF;i++) if($i=="us"){print $(i-1), $1; break}}' | sort -n | head -5
  grep -E "^  cublaslt:default" $L | head -1 | cut -c1-80
  L=$O/tune12_$1x$2x$3.log
  timeout 90 build-lead/gemmtune tune --m $1 --n $2 --k $3 --top-k 12 --no-cache < /dev/null > $L.out 2> $L
  echo "== tune top-k 12 $1x$2x$3 $(grep -E 'winner' $L.out | head -1)"
  grep -A7 "runoff" $L | cut -c1-110
done
gzip -f $O/tests.log
tar czf $O/logs.tgz -C $O $(cd $O && ls all_* tune12_*) && rm -f $O/all_* $O/tune12_*
