#!/usr/bin/env bash
# Session 21 device call 5: mma=1 with 64-k steps (a quad reads whole 128-byte lines of each weight row; call 4 had
# 32-k steps and half-lines). 1) GPU tests: GemvGpu.*.
# 2) Every gemv candidate (one process) and the default tune of sm90 + cuBLASLt (another) at M = 1-16.
# 3) The decode suite.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=build-lead
timeout 330 build-lead/tests/gemmtune_gpu_tests --gtest_filter='GemvGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw|spills|err=" $O/tests.log | head -30
P="1,4096,14336 4,4096,14336 8,4096,14336 16,4096,14336 4,4096,4096 16,4096,4096 8,28672,4096"
for s in $P; do
  IFS=, read -r m n k <<<"$s"
  L=$O/all_${m}_${n}_${k}.log
  timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k --backends gemv --top-k 0 --min-time-ms 30 --no-cache \
    < /dev/null > $L.out 2> $L
  echo "== gemv ${m}x${n}x${k} rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-140)"
  timeout 60 build-lead/gemmtune tune --m $m --n $n --k $k --backends sm90,cublaslt --no-cache \
    < /dev/null > $L.other.out 2> $L.other
  echo "   others rc=$? $(grep -m1 -o 'winner.*' $L.other.out | cut -c1-140)"
done
L=$O/all_glu.log
timeout 60 build-lead/gemmtune tune --m 16 --n 28672 --k 4096 --epilogue silu_glu --backends gemv --top-k 0 \
  --min-time-ms 30 --no-cache < /dev/null > $L.out 2> $L
echo "== gemv 16x28672x4096 silu_glu rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-140)"
timeout 60 build-lead/gemmtune tune --m 16 --n 28672 --k 4096 --epilogue silu_glu --backends sm90,cublaslt \
  --no-cache < /dev/null > $L.other.out 2> $L.other
echo "   others rc=$? $(grep -m1 -o 'winner.*' $L.other.out | cut -c1-140)"
timeout 150 build-lead/gemmtune bench --suite bench/suites/decode.json --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode suite rc=$?"; cut -c1-175 $O/decode.txt
tar czf $O/logs.tgz -C $O $(cd $O && ls all_*) && (cd $O && rm -f all_*)
gzip -f $O/tests.log $O/decode.log
