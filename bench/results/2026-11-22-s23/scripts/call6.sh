#!/usr/bin/env bash
# Session 23 device call 6: would a K split across CTAs help the mma gemv at N = 4096? The same 117 MB of weights
# as 8 / 16 x 4096 x 14336, laid out as 2x / 4x / 8x the rows with 1/2-1/8 of K (the work split of a 2-8-way CTA
# split, without its reduction): whole gemv lists (top-k 0) plus cuBLASLt's default, one tune each.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
for t in 8 16; do
  for s in "4096 14336" "8192 7168" "16384 3584" "32768 1792"; do
    set -- $s
    L=$O/t${t}_$1x$2.log
    timeout 120 build-lead/gemmtune tune --m $t --n $1 --k $2 --backends gemv,cublaslt --top-k 0 --no-cache < /dev/null > $L.out 2> $L
    best=$(grep -E "^  gemv" $L | sed -E 's/ +/ /g' | awk '{for(i=1;i<=NF;i++) if($i=="us"){print $(i-1), $1; break}}' | sort -n | head -1)
    cub=$(grep -E "^  cublaslt:default" $L | head -1 | sed -E 's/ +/ /g' | awk '{for(i=1;i<=NF;i++) if($i=="us"){print $(i-1); break}}')
    echo "${t}x$1x$2: best gemv (first pass) $best | cublaslt:default $cub | $(grep -E '^winner|us,' $L.out | head -1)"
  done
done
tar czf $O/logs.tgz -C $O $(cd $O && ls *.log *.out) && rm -f $O/*.log $O/*.out
