#!/usr/bin/env bash
# Session 16 device call 2: epi=warp (each warp TMA-stores its own 8-row pieces from two buffers, no warpgroup
# barrier; cuBLASLt's nvjet epilogue form, bench/NOTES.md step 16).
# 1) GPU tests Sm90Gpu.WarpStrips, Sm90EpilogueGpu.WarpStripChains, Sm90Gpu.ShapesLayoutsDtypesConfigs (warpgroup path
#    after the refactor); 2) side by side: warpgroup vs warp strips with cuBLASLt's kernel at the same tile, two reps.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_c2
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 400 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='Sm90Gpu.WarpStrips:Sm90EpilogueGpu.WarpStripChains:Sm90Gpu.ShapesLayoutsDtypesConfigs' > $O/tests.txt 2>&1
echo "test rc=$?"; grep -E '^\[  (PASSED|FAILED) |FAILED|Failure|^\[       OK' $O/tests.txt | head -30
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB168="cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
G=",raster=n,group=8,tiles=gpc"
W=",epi=warp"
for rep in 1 2; do
  echo "#### rep $rep"
  TIMEOUT=150 scripts/sm90_dev/ab_configs.sh $O/ab_$rep build-lead "8192,6144,4096 8192,6144,512 8192,6144,1024" \
    "$CB176" "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong$G" "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong$G$W" \
    "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7" "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7$W" \
    "tile=128x192x64,stages=4,cluster=2x1,sched=pingpong$G" "tile=128x192x64,stages=4,cluster=2x1,sched=pingpong$G$W" \
    "tile=128x176x64,stages=5,cluster=2x1,sched=coop$G" "tile=128x176x64,stages=5,cluster=2x1,sched=coop$G$W"
  TIMEOUT=150 scripts/sm90_dev/ab_configs.sh $O/ab_$rep build-lead "4096,10240,8192" \
    "$CB168" "tile=128x168x64,stages=5,cluster=2x1,sched=pingpong$G" "tile=128x168x64,stages=5,cluster=2x1,sched=pingpong$G$W"
  TIMEOUT=150 scripts/sm90_dev/ab_configs.sh $O/ab_$rep build-lead "4096,4096,4096 2048,4096,14336 4096,4096,512" \
    "$CB128" "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong$G" "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong$G$W" \
    "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=16" "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=16$W"
done
tar czf $O/ab_logs.tgz $O/ab_*/ 2>/dev/null; rm -rf $O/ab_1 $O/ab_2
