#!/usr/bin/env bash
# Session 21 device call 9 (experiment): the weight loads with an L2 prefetch hint (ld.global.nc.L1::no_allocate
# .L2::256B; build-exp) against the landed build (build-lead), alternated, whole gemv lists at M = 1, 4, 8, 16.
# Hypothesis: mma=1 keeps 16 weight rows in flight per warp (the CUDA-core kernel 1-4), so DRAM sees many short
# streams; a 256-byte prefetch per request doubles each stream's burst.
set -u
O=$1
P="1,4096,14336 4,4096,14336 8,4096,14336 16,4096,14336 8,28672,4096"
for rep in 1 2; do
  for b in build-lead build-exp; do
    for s in $P; do
      IFS=, read -r m n k <<<"$s"
      L=$O/${b}_${rep}_${m}_${n}_${k}.log
      LD_LIBRARY_PATH=$b GEMMTUNE_CACHE_DIR=/tmp/gtc_$b timeout 60 $b/gemmtune tune --m $m --n $n --k $k \
        --backends gemv --top-k 0 --min-time-ms 20 --no-cache < /dev/null > $L.out 2> $L
      echo "$b rep $rep ${m}x${n}x${k}: $(grep -m1 -o 'winner.*' $L.out | cut -c1-120)"
    done
  done
done
tar czf $O/logs.tgz -C $O $(cd $O && ls build-*) && (cd $O && rm -f build-*)
