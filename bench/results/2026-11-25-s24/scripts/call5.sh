#!/usr/bin/env bash
# Session 24 device call 5: the gemv changes on the GPU (occ key and its enumeration rule, vectors past T read as
# vector T - 1 instead of selected zeros, the shared-memory attribute for every ring): GemvGpu tests, then every gemv
# candidate (and cuBLASLt's list) timed side by side at 13 decode problems (rank survey for the gemv ranking).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 260 build-lead/tests/gemmtune_gpu_tests --gtest_filter='GemvGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "ms\)$|^\[  FAILED|Failure|Which is|threw|jobs" $O/tests.log | head -30
# The rule's configs at their default occupancy and at occ=3 side by side (call 4 ran them among 17 others; in
# session 22's whole lists the default ones ran 36.7 us at 8x4096x14336 where call 4 measured 42).
for shape in "8 4096 14336" "4 4096 14336" "2 4096 14336" "8 28672 4096" "8 4096 4096" "8 6144 4096"; do
  set -- $shape
  cfgs=(--config cublaslt:default --config 'gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4'
        --config 'gemv:vec=m,warps=4,rows=16,ksplit=1,unroll=1,mma=1,ring=4'
        --config 'gemv:vec=m,warps=8,rows=32,ksplit=8,unroll=2,mma=1')
  for b in "ksplit=8,unroll=1" "ksplit=8,unroll=2" "ksplit=4,unroll=1" "ksplit=4,unroll=2"; do
    for occ in "" ",occ=3"; do cfgs+=(--config "gemv:vec=m,warps=8,rows=16,$b,mma=1$occ"); done
  done
  GEMMTUNE_CACHE_DIR=/tmp/gtc_ab timeout 60 build-lead/gemmtune tune --m $1 --n $2 --k $3 --no-cache "${cfgs[@]}" \
    > $O/ab_${1}x${2}x${3}.txt 2> $O/ab_${1}x${2}x${3}.log
  echo "== ab $shape rc=$?"; grep -E "^  (gemv|cublaslt)\S* +[0-9.]+ us" $O/ab_${1}x${2}x${3}.log | head -12 | cut -c1-110
done
tar czf $O/ab.tgz -C $O $(cd $O && ls ab_*) && rm -f $O/ab_*
mkdir -p $O/survey
for shape in "8 4096 14336" "4 4096 14336" "2 4096 14336" "8 28672 4096" "4 28672 4096" "2 28672 4096" \
             "8 4096 4096" "4 4096 4096" "8 6144 4096" "5 14336 4096" "16 4096 14336" "16 28672 4096" "7 8192 8192"; do
  set -- $shape
  f=$O/survey/gemv_${1}x${2}x${3}
  GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 60 build-lead/gemmtune tune --m $1 --n $2 --k $3 --backends gemv,cublaslt \
    --top-k 0 --no-cache --min-time-ms 30 --min-iters 50 --json $f.json > $f.txt 2> $f.log
  echo "$shape rc=$? $(grep -E '^winner' $f.log | cut -c1-120) $(grep -E "^winner" $f.txt | cut -c1-120)"
done
tar czf $O/survey.tgz -C $O survey && rm -rf $O/survey
gzip -f $O/tests.log
