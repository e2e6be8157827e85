#!/usr/bin/env bash
# session-15 device call 1: tile K 32 (64-byte swizzled rows, twice the stages in the same shared memory).
# Hypothesis (bench/NOTES.md step 15): the ~1% per-tile excess at long K is loads arriving late while the epilogue's
# stores share the SM's memory path; a stage is refilled (STAGES - 2) k-blocks before it is needed, so 10 half-size
# stages give 8 x 352 = 2816 clocks of lead at 128x176 against 3 x 704 = 2112 for 5 full ones (+33%).
# 1) GPU test Sm90Gpu.TileK32; 2) side by side: tile K 64 vs 32 with cuBLASLt's kernel at the same tile, two reps.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_c1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 300 build-lead/tests/gemmtune_gpu_tests --gtest_filter='Sm90Gpu.TileK32' > $O/test_k32.txt 2>&1
echo "test rc=$?"; grep -E '^\[  (PASSED|FAILED) |FAILED|Failure' $O/test_k32.txt | head -20
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB168="cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
N=",raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  echo "#### rep $rep"
  TIMEOUT=120 scripts/sm90_dev/ab_configs.sh $O/k32_$rep build-lead "8192,6144,4096 8192,6144,512" \
    "$CB176" "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7" \
    "tile=128x176x32,stages=10,cluster=2x1,sched=pingpong,raster=m,group=7" \
    "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong$N" "tile=128x176x32,stages=10,cluster=2x1,sched=pingpong$N"
  TIMEOUT=120 scripts/sm90_dev/ab_configs.sh $O/k32_$rep build-lead "4096,10240,8192" \
    "$CB168" "tile=128x168x64,stages=5,cluster=2x1,sched=pingpong$N" "tile=128x168x32,stages=10,cluster=2x1,sched=pingpong$N" \
    "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong$N" "tile=128x176x32,stages=10,cluster=2x1,sched=pingpong$N"
  TIMEOUT=120 scripts/sm90_dev/ab_configs.sh $O/k32_$rep build-lead "4096,4096,4096 2048,4096,14336" \
    "$CB128" "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong$N" "tile=128x128x32,stages=12,cluster=2x1,sched=pingpong$N" \
    "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=16" "tile=128x256x32,stages=8,cluster=1x1,sched=coop,raster=m,group=16"
done
for f in $O/k32_*/*.log; do gzip -f $f; done
