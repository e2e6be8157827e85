#!/usr/bin/env bash
# session-13 device call 1: the whole GPU test suite on HEAD d86b2b0 (build-lead; the 3 ping-pong tail=sk kernels of
# the session-12 review mends were not run on the GPU), then the orientation question: does our ping-pong 128x176 /
# 128x168 run faster on the transposed problem (N x M: the 176-wide side on x's rows, as cuBLASLt's nvjet 176x128 1x2
# does), and the band width (group) of the gpc walk on 8192x6144x4096.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 330 build-lead/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB168="cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
P176="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P176M="tile=128x176x64,stages=5,cluster=1x2,sched=pingpong,raster=m,group=8,tiles=gpc"
P168="tile=128x168x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
export GEMMTUNE_CACHE_DIR=/tmp/gtc_ab
for rep in 1 2; do
  echo "#### rep $rep"
  TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/orient_$rep build-lead "8192,6144,4096 6144,8192,4096 4096,10240,8192 10240,4096,8192" \
    "$CB176" "$CB168" "$P176" "$P176M" "$P168"
  TIMEOUT=30 scripts/sm90_dev/ab_configs.sh $O/group_$rep build-lead "8192,6144,4096" "$CB176" "$P176" \
    "${P176/group=8/group=4}" "${P176/group=8/group=16}" "${P176/,tiles=gpc/}" "${P176/group=8,tiles=gpc/group=4}"
done
for f in $O/*_*/*.log; do gzip -f $f; done
