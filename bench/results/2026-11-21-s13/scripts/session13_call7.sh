#!/usr/bin/env bash
# session-13 device call 7: cuBLASLt's nvjet_sm90_tst_176x128_64x5_1x2 has 384 threads and 5 stages: read as a
# cooperative kernel (two consumer warpgroups of 64 x 176, 88 accumulators each) whose epilogue is not overlapped.
# Our ping-pong loses ~250-500 clocks per tile at the consumer hand-off (call 6). Our cooperative 128x176 with 5
# stages has one strip buffer per warpgroup (its 2nd strip waits for the 1st store's read); with 4 stages both strips
# have their own buffer, so a tile's epilogue never waits for a store. Side by side (build-lead = HEAD).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_c7
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB168="cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
N=",raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  echo "#### rep $rep"
  TIMEOUT=90 scripts/sm90_dev/ab_configs.sh $O/coop_$rep build-lead "8192,6144,4096 8192,6144,1024 8192,6144,512 4096,10240,8192" \
    "$CB176" "$CB168" "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong$N" "tile=128x176x64,stages=4,cluster=2x1,sched=coop$N" \
    "tile=128x176x64,stages=4,cluster=1x2,sched=coop,raster=m,group=8,tiles=gpc" "tile=128x176x64,stages=5,cluster=2x1,sched=coop$N" \
    "tile=128x168x64,stages=4,cluster=2x1,sched=coop$N" "tile=128x192x64,stages=4,cluster=2x1,sched=coop$N"
  TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/coop_$rep build-lead "4096,4096,4096 2048,4096,4096" \
    "$CB128" "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong$N" "tile=128x128x64,stages=6,cluster=2x1,sched=coop$N" \
    "tile=128x128x64,stages=6,cluster=1x2,sched=coop,raster=m,group=8,tiles=gpc"
done
for f in $O/coop_*/*.log; do gzip -f $f; done
