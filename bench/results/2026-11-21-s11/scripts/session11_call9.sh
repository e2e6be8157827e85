#!/usr/bin/env bash
# session-11 device call 9: wide unswizzled epilogue strips (176 / 144-byte strips where 32-byte ones were taken;
# build-lead) against HEAD 8806526 (build-prev). The sm90 GPU tests on the new build, memcheck + racecheck on
# ping-pong 128x176 2x1 (one 11 KB buffer per consumer) and coop 128x144, side by side at short and long K (builds
# alternating), then the large suite on the new build.
set -u
O=$1
LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 230 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='Sm90*:TunerGpu.*' > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 70 scripts/sanitize_sm90.sh $O/sanitize.log build-lead/gemmtune 30 \
  "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8" \
  "tile=128x144x64,stages=6,cluster=1x1,sched=coop,raster=m,group=8"
gzip -f $O/sanitize.log
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB144="cublaslt:algo=66,tile=144x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
P176="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
C176="tile=128x176x64,stages=5,cluster=2x1,sched=coop,raster=n,group=8,tiles=gpc"
P144="tile=128x144x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  for b in build-prev build-lead; do
    export GEMMTUNE_CACHE_DIR=/tmp/gtc_ab_$b
    echo "#### rep $rep $b"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "8192,6144,256 8192,6144,4096" "$CB176" "$P176" "$C176"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "4096,8192,512" "$CB144" "$P144"
  done
done
for f in $O/ab_*/*.log; do gzip -f $f; done
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_large timeout 115 build-lead/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json \
  > $O/bench_large.txt 2> $O/bench_large.log
echo "== large rc=$?"; cut -c1-175 $O/bench_large.txt
gzip -f $O/*.log
