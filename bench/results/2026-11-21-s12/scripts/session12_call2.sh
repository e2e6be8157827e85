#!/usr/bin/env bash
# session-12 device call 2: the per-warp epilogue (each warp stages and TMA-stores its own 16 rows of a strip, no
# warpgroup barriers; build-lead) against HEAD f5a4459 (build-head): the whole GPU test suite on the new build,
# memcheck + racecheck on ping-pong 128x176 2x1 (one buffer) and coop 128x128 1x2 (two buffers), then side by side
# at short and long K with the builds alternating.
set -u
O=$1
LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 320 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 80 scripts/sanitize_sm90.sh $O/sanitize.log build-lead/gemmtune 35 \
  "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8" \
  "tile=128x128x64,stages=6,cluster=1x2,sched=coop,raster=m,group=8"
gzip -f $O/sanitize.log
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB144="cublaslt:algo=66,tile=144x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
P176="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
C176="tile=128x176x64,stages=5,cluster=2x1,sched=coop,raster=n,group=8,tiles=gpc"
P128="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P144="tile=128x144x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  for b in build-head build-lead; do
    export GEMMTUNE_CACHE_DIR=/tmp/gtc_ab_$b
    echo "#### rep $rep $b"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "8192,6144,256 8192,6144,4096" "$CB176" "$P176" "$C176" "$P128"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "4096,8192,512" "$CB144" "$P144"
  done
done
for f in $O/ab_*/*.log; do gzip -f $f; done
