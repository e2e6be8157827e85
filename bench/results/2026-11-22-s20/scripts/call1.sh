#!/usr/bin/env bash
# Session 20 device call 1: stream-K partials carry only the problem's rows (decode sizes).
# 1) The stream-K GPU tests on the new build. 2) The session-19 build (build-base) and this one alternated (base, new,
# base, new): plain and split at the same tiles with cuBLASLt's default, side by side, at skinny problems. 3) Default
# tunes at decode shapes (new build). 4) ncu: one launch each of the split 64x128, the plain 64x256 and cuBLASLt's
# default at 16x4096x14336 (new build).
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc
LD_LIBRARY_PATH=build-lead timeout 240 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='Sm90Gpu.StreamK*:Sm90EpilogueGpu.StreamK*' > $O/sk_tests.log 2>&1
echo "sk tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/sk_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills" $O/sk_tests.log | head -20
C=()
for t in "64x128x64,stages=7,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc" \
         "64x256x64,stages=4,cluster=1x1,sched=pingpong,raster=n,group=6" \
         "64x64x64,stages=7,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc" \
         "128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc"; do
  C+=("$t" "$t,tail=sk")
done
C+=("cublaslt:default")
P="16,4096,14336 1,4096,14336 32,4096,14336 48,4096,14336 16,4096,4096 16,6144,4096 16,4096,8192 64,8192,8192"
for rep in 1 2; do
  for B in build-base build-lead; do
    echo "#### $B rep $rep"
    scripts/sm90_dev/ab_configs.sh $O/ab_${B}_$rep $B "$P" "${C[@]}" 2>&1 | cut -c1-110
  done
done
export LD_LIBRARY_PATH=build-lead
for p in "16 6144 4096" "16 4096 4096" "16 28672 4096" "16 4096 14336" "1 4096 14336" "32 4096 14336" \
         "128 4096 14336" "37 1000 9000"; do
  set -- $p
  L=$O/tune_${1}_${2}_${3}.log
  timeout 90 build-lead/gemmtune tune --m $1 --n $2 --k $3 --backends sm90,cublaslt --no-cache < /dev/null > $L.out 2> $L
  echo "== ${1}x${2}x${3} rc=$? $(grep -m1 -o 'winner.*' $L.out | cut -c1-150)"
  awk '/side by side/{f=1;next} f&&/ us /{print} f&&!/ us /{f=0}' $L | \
    awk '{for(i=1;i<=NF;i++) if($i=="us"){print "   ", $(i-1), $1; break}}' | sort -n | head -6
done
scripts/sm90_dev/ncu_probe.sh $O/ncu build-lead "16 4096 14336" \
  "64x128x64,stages=7,cluster=1x2,sched=pingpong,raster=m,group=1,tiles=gpc,tail=sk" \
  "64x256x64,stages=4,cluster=1x1,sched=pingpong,raster=n,group=6" "cublaslt:default" 2>&1 | \
  grep -E "^==|Duration|SM Frequency|dram__bytes_read|lts__t_bytes|Memory Throughput|DRAM Throughput|inst_executed.sum"
tar czf $O/logs.tgz -C $O $(cd $O && ls -d ab_* tune_* ncu) && (cd $O && rm -rf ab_* tune_* ncu)
gzip -f $O/sk_tests.log
