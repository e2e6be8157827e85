#!/usr/bin/env bash
# session-10 device call 3: tile N = 168. (1) GPU tests (all: 168/216 configs in the correctness matrices, the fused
# chain test on them). (2) memcheck + racecheck on ping-pong 128x168 1x2 and coop 128x168 1x1 (unswizzled strips).
# (3) Interleaved side by side against cuBLASLt's 168x128 / 176x128 kernels at the shapes where cuBLASLt picks 168.
set -u
O=$1; B=build-lead; W=/tmp/c3; mkdir -p $W
export LD_LIBRARY_PATH=$B
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 300 $B/tests/gemmtune_gpu_tests --gtest_filter='Sm90*:TunerGpu.*:CublasLtGpuConfig.*' > $W/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $W/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=" $W/gpu_tests.log | head -20
GEMMTUNE_CACHE_DIR=/tmp/gtc_s timeout 200 scripts/sanitize_sm90.sh $W/sanitize.log $B/gemmtune 40 \
  "tile=128x168x64,stages=5,cluster=1x2,sched=pingpong,raster=m,group=8" \
  "tile=128x168x64,stages=5,cluster=1x1,sched=coop,raster=n,group=4"
CB168="cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
P168G="tile=128x168x64,stages=5,cluster=1x2,sched=pingpong,raster=m,group=8,tiles=gpc"
P168N="tile=128x168x64,stages=5,cluster=1x2,sched=pingpong,raster=n,group=5"
P168S="tile=128x168x64,stages=5,cluster=1x1,sched=pingpong,raster=n,group=10"
P192G="tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P176G="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
export GEMMTUNE_CACHE_DIR=/tmp/gtc_ab
TIMEOUT=120 scripts/sm90_dev/ab_configs.sh $W/ab build-lead "8192,28672,4096" "$CB168" "$CB176" "$P168G" "$P168N" "$P168S" "$P192G" "$P176G"
TIMEOUT=100 scripts/sm90_dev/ab_configs.sh $W/ab build-lead "4096,10240,8192" "$CB168" "$P168G" "$P168G,tail=sk" "$P168N" "$P168S" "${P192G},tail=sk" "${P176G},tail=sk"
TIMEOUT=100 scripts/sm90_dev/ab_configs.sh $W/ab build-lead "8192,8192,8192" "$CB168" "$P168G" "$P168G,tail=sk" "$P168S" "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,tail=sk"
TIMEOUT=100 scripts/sm90_dev/ab_configs.sh $W/ab build-lead "8192,6144,4096" "$CB176" "$CB168" "$P168G" "$P168S" "$P176G"
gzip -f $W/*.log
tar czf $O/call3.tgz -C $W .
