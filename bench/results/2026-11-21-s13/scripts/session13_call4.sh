#!/usr/bin/env bash
# session-13 device call 4: the CTA's last tile stages its whole output in the freed stage ring and stores it without
# waiting for earlier strips (build-lead) against HEAD d86b2b0 (build-h13), builds alternating, side by side with
# cuBLASLt's best at the same tile; then the sm90 + epilogue GPU tests on the new build and compute-sanitizer memcheck
# + racecheck on one ping-pong and one cooperative config (the ring path runs in every CTA's last tile).
set -u
O=$1
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
G=",cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  for b in build-h13 build-lead; do
    export GEMMTUNE_CACHE_DIR=/tmp/gtc_ab_$b
    echo "#### rep $rep $b"
    TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "8192,6144,512 8192,6144,1024 8192,6144,4096" \
      "$CB176" "tile=128x176x64,stages=5$G" "tile=128x160x64,stages=5$G" "tile=128x192x64,stages=4$G"
    TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "4096,4096,4096 2048,4096,4096" \
      "$CB128" "tile=128x128x64,stages=6$G" "tile=128x256x64,stages=4,cluster=1x2,sched=coop,raster=m,group=16"
  done
done
for f in $O/ab_*/*.log; do gzip -f $f; done
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 240 build-lead/tests/gemmtune_gpu_tests --gtest_filter='Sm90*:Epilogue*:TunerGpu*' > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
GEMMTUNE_CACHE_DIR=/tmp/gtc_san scripts/sanitize_sm90.sh $O/sanitize.log build-lead/gemmtune 60 \
  "tile=128x176x64,stages=5$G" "tile=128x256x64,stages=4,cluster=1x2,sched=coop,raster=m,group=16"
gzip -f $O/sanitize.log
