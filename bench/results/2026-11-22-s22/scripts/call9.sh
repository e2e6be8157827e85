#!/usr/bin/env bash
# Session 22 device call 9: gemv for weights stored N-major (nmajor=1, kernels/gemv/gemv_nmajor.cuh). 1) GemvGpu.*
# (incl. NMajorWeights) 2) every nmajor config (one process) and the default tune of all backends (another) at
# decode problems with B row-major (A column-major with vec=n).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
timeout 240 build-lead/tests/gemmtune_gpu_tests --gtest_filter='GemvGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw|bad test|err=" $O/tests.log | head -30
for s in "1 4096 14336 row row" "1 28672 4096 row row" "1 4096 4096 row row" "4 4096 4096 row row" "8 14336 4096 row row" "4096 1 4096 col col" "4096 8 14336 col col"; do
  set -- $s
  L=$O/all_$1_$2_$3.log
  timeout 60 build-lead/gemmtune tune --m $1 --n $2 --k $3 --A bf16:$4 --B bf16:$5 --backends gemv --top-k 0 \
    --min-time-ms 30 --no-cache < /dev/null > $L.out 2> $L
  echo "== gemv $1x$2x$3 A $4 B $5 rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-120)"
  timeout 60 build-lead/gemmtune tune --m $1 --n $2 --k $3 --A bf16:$4 --B bf16:$5 --no-cache < /dev/null > $L.all.out 2> $L.all
  echo "   default rc=$? $(grep -m1 -o 'winner.*' $L.all.out | cut -c1-120)"
  grep -A7 runoff $L.all | tail -6 | awk '{print "     ", $2, $1}' | cut -c1-120
done
gzip -f $O/tests.log
tar czf $O/logs.tgz -C $O $(cd $O && ls all_* tests.log.gz) && (cd $O && rm -f all_* tests.log.gz)
