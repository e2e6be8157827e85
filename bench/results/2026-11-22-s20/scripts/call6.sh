#!/usr/bin/env bash
# Session 20 device call 6: swap=1 (the other orientation for decode sizes, D stored transposed from registers).
# 1) GPU tests: the new Sm90Gpu.Swap and the stream-K ones. 2) Every candidate of the top 40 of both backends timed
# side by side at decode problems (how the ranking orders swap configs against what they measure). 3) Default tunes.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=build-lead
timeout 300 build-lead/tests/gemmtune_gpu_tests --gtest_filter='Sm90Gpu.Swap:Sm90Gpu.StreamK*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills|err=" $O/tests.log | head -20
P="16,4096,14336 1,4096,14336 32,4096,14336 16,4096,4096 16,6144,4096 16,28672,4096 64,8192,8192 48,5000,3000 8,8192,8192 16,14336,4096"
for s in $P; do
  IFS=, read -r m n k <<<"$s"
  L=$O/all_${m}_${n}_${k}.log
  timeout 150 build-lead/gemmtune tune --m $m --n $n --k $k --backends sm90,cublaslt --top-k 40 --no-cache \
    < /dev/null > $L.out 2> $L
  echo "== top40 ${m}x${n}x${k} rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-140)"
  awk '/side by side/{f=1;next} f&&/ us /{print} f&&!/ us /{f=0}' $L | \
    awk '{for(i=1;i<=NF;i++) if($i=="us"){print "   ", $(i-1), $1; break}}' | sort -n | head -8
done
for s in $P; do
  IFS=, read -r m n k <<<"$s"
  L=$O/def_${m}_${n}_${k}.log
  timeout 100 build-lead/gemmtune tune --m $m --n $n --k $k --backends sm90,cublaslt --no-cache < /dev/null > $L.out 2> $L
  echo "== default ${m}x${n}x${k} rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-160)"
done
tar czf $O/logs.tgz -C $O $(cd $O && ls all_* def_*) && (cd $O && rm -f all_* def_*)
gzip -f $O/tests.log
