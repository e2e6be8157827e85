#!/usr/bin/env bash
# session-15 device call 2: the epilogue's TMA stores with an L2 evict_first policy (build-ev) against HEAD
# (build-lead), builds alternating, each row side by side with cuBLASLt's kernel at the same tile.
# Hypothesis: D (100-470 MB at the large shapes, above the 50 MB L2) pushes operand lines out of L2 that other CTAs
# still read (DRAM reads 474 MB for ours vs 424 MB for cuBLASLt at 8192x6144x4096, NOTES step 11); writing D with
# evict_first keeps them, so fewer DRAM reads, less power at the cap, and up to ~0.5% at long K.
set -u
O=$1
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB168="cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
N=",raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  for b in build-lead build-ev; do
    export GEMMTUNE_CACHE_DIR=/tmp/gtc_ab_$b
    echo "#### rep $rep $b"
    TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "8192,6144,4096 8192,6144,512" \
      "$CB176" "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7" "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong$N"
    TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "4096,10240,8192" "$CB168" "tile=128x168x64,stages=5,cluster=2x1,sched=pingpong$N"
    TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "4096,4096,4096 2048,4096,14336" "$CB128" \
      "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong$N" "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=16"
  done
done
# DRAM and L2 bytes of the two builds' 128x176 kernel at 8192x6144x4096 (one launch each under ncu).
for b in build-lead build-ev; do
  LD_LIBRARY_PATH=$b GEMMTUNE_CACHE_DIR=/tmp/gtc_ab_$b timeout 120 ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg \
    -k regex:gt_sm90 -c 1 $b/gemmtune tune --m 8192 --n 6144 --k 4096 --config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7" --no-cache \
    > $O/ncu_$b.txt 2>&1
  echo "== ncu $b rc=$?"; grep -E 'dram__|lts__|gpu__time|sm__cycles' $O/ncu_$b.txt
done
cd $O && tar czf ab.tgz ab_* && rm -rf ab_*
