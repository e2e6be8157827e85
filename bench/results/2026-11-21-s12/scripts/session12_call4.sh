#!/usr/bin/env bash
# session-12 device call 4: the final build (build-lead: one put_strip for both epilogues with HEAD's two barriers per
# strip, the barrier id from the warpgroup; the drain waits for the strips to be read, not for the writes) — the whole
# GPU test suite, side by side against HEAD f5a4459 (build-head) on the shapes where the kernel's end matters most,
# then the large suite.
set -u
O=$1
LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 310 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
P128="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P128M="tile=128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=m,group=8,tiles=gpc"
P176="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  for b in build-head build-lead; do
    export GEMMTUNE_CACHE_DIR=/tmp/gtc_ab_$b
    echo "#### rep $rep $b"
    TIMEOUT=30 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "4096,4096,4096 2048,4096,4096" "$CB128" "$P128" "$P128M"
    TIMEOUT=30 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "8192,6144,4096" "$CB176" "$P176"
  done
done
for f in $O/ab_*/*.log; do gzip -f $f; done
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_large timeout 140 build-lead/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json \
  > $O/bench_large.txt 2> $O/bench_large.log
echo "== large rc=$?"; cut -c1-175 $O/bench_large.txt
gzip -f $O/*.log
