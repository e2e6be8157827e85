#!/usr/bin/env bash
# Session 21 device call 1: the new gemv backend (kernels/gemv/gemv_kmajor.cuh).
# 1) GPU tests: GemvGpu.* and the tuner's (the backend is in the default set now). 2) Every gemv candidate timed side
# by side with the top 8 of sm90 and cuBLASLt at decode problems (M = 1-8, one vec=n problem, a fused SwiGLU).
# 3) The decode suite with every backend (session 20: 1.021x cuBLASLt's default without gemv).
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
timeout 300 build-lead/tests/gemmtune_gpu_tests --gtest_filter='GemvGpu.*:TunerGpu.*' > $O/tests.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/tests.log | tr '\n' ' ')"
grep -E "jobs|^\[  FAILED|Failure|Which is|threw|spills|err=" $O/tests.log | head -30
P="1,4096,14336 1,4096,4096 1,6144,4096 1,28672,4096 2,4096,14336 4,4096,14336 8,4096,4096 8,4096,14336 4096,1,4096"
for s in $P; do
  IFS=, read -r m n k <<<"$s"
  L=$O/all_${m}_${n}_${k}.log
  timeout 200 build-lead/gemmtune tune --m $m --n $n --k $k --backends gemv,sm90,cublaslt --top-k 60 --no-cache \
    < /dev/null > $L.out 2> $L
  echo "== all ${m}x${n}x${k} rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-140)"
  awk '/side by side/{f=1;next} f&&/ us /{print} f&&!/ us /{f=0}' $L | \
    awk '{for(i=1;i<=NF;i++) if($i=="us"){print "   ", $(i-1), $1; break}}' | sort -n | head -12
done
L=$O/all_glu.log
timeout 200 build-lead/gemmtune tune --m 4 --n 28672 --k 4096 --epilogue silu_glu --backends gemv,sm90,cublaslt \
  --top-k 60 --no-cache < /dev/null > $L.out 2> $L
echo "== all 4x28672x4096 silu_glu rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-140)"
awk '/side by side/{f=1;next} f&&/ us /{print} f&&!/ us /{f=0}' $L | \
  awk '{for(i=1;i<=NF;i++) if($i=="us"){print "   ", $(i-1), $1; break}}' | sort -n | head -8
timeout 400 build-lead/gemmtune bench --suite bench/suites/decode.json --json $O/decode.json > $O/decode.txt 2> $O/decode.log
echo "== decode suite rc=$?"; tail -32 $O/decode.txt
tar czf $O/logs.tgz -C $O $(cd $O && ls all_*) && (cd $O && rm -f all_*)
gzip -f $O/tests.log $O/decode.log
