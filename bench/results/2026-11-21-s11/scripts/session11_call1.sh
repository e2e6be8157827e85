#!/usr/bin/env bash
# session-11 device call 1: the lean k loop (64-bit descriptor steps, release address mapped once per tile) and the
# stmatrix epilogue. All GPU tests on the new build, memcheck + racecheck on three configs, then the old build
# (build-base, HEAD of session 10) against the new one side by side: each run times our config next to cuBLASLt's
# best algo for the shape, builds alternate base/new/base/new, and the ratio ours/cuBLASLt within a run is compared.
set -u
O=$1; B=build-lead
export LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $O/smi.txt 2>&1
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 300 $B/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 150 scripts/sanitize_sm90.sh $O/sanitize.log $B/gemmtune 45 \
  "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8" \
  "tile=128x168x64,stages=5,cluster=1x2,sched=pingpong,raster=m,group=8" \
  "tile=128x256x64,stages=4,cluster=1x2,sched=coop,raster=m,group=8"
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
P176="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P128="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
C256="tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8"
for rep in 1 2; do
  for b in build-base build-lead; do
    export GEMMTUNE_CACHE_DIR=/tmp/gtc_ab_$b
    echo "#### rep $rep $b"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "8192,6144,4096" "$CB176" "$P176"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "4096,4096,4096" "$CB128" "$P128"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "8192,4096,14336" "$CB128" "$C256"
  done
done
export LD_LIBRARY_PATH=$B
gzip -f $O/gpu_tests.log $O/sanitize.log 2>/dev/null
for f in $O/ab_*/*.log; do gzip -f $f; done
