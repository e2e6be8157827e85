#!/usr/bin/env bash
# session-13 device call 2: short K (the epilogue-bound regime). Ping-pong tiles with one strip buffer per consumer
# (128x176 s5, 128x144 s6: 176/144-byte strips, two do not fit beside the ring) against the same tile with a stage
# less and two buffers (s4 / s5), 128x192 s4, 128x160 s5, 128x128 s6, and cuBLASLt's nvjet 176x128, side by side.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_ab
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
G=",cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  echo "#### rep $rep"
  TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/shortk_$rep build-lead "8192,6144,256 8192,6144,512 8192,6144,1024 4096,4096,256" \
    "$CB176" "tile=128x176x64,stages=5$G" "tile=128x176x64,stages=4$G" "tile=128x176x64,stages=3$G" \
    "tile=128x144x64,stages=6$G" "tile=128x144x64,stages=5$G" "tile=128x192x64,stages=4$G" "tile=128x160x64,stages=5$G" \
    "tile=128x128x64,stages=6$G"
done
for f in $O/*_*/*.log; do gzip -f $f; done
