#!/usr/bin/env bash
# session-11 device call 8 (HEAD build): what bounds our epilogue at short K? Side by side at 8192x6144xK (K = 64,
# 256) ping-pong 2x1 tiles whose epilogues differ in strip count and width: 128x128 (2 x 2 strips of 128 B),
# 128x192 (2 x 3 of 128 B), 128x160 (2 x 5 of 64 B), 128x144 (2 x 9 of 32 B), 128x176 (2 x 11 of 32 B), and
# cuBLASLt's 176x128 / 128x128. Per-tile time against strips per tile tells a per-strip cost from a per-byte one.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc8
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
G=",cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab_$rep build-lead "8192,6144,64 8192,6144,256" "$CB176" "$CB128" \
    "tile=128x128x64,stages=6$G" "tile=128x192x64,stages=4$G" "tile=128x160x64,stages=5$G" "tile=128x144x64,stages=6$G" \
    "tile=128x176x64,stages=5$G"
done
for f in $O/ab_*/*.log; do gzip -f $f; done
