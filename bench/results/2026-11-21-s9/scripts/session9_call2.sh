#!/usr/bin/env bash
# session-9 device call 2: every GPU test (ping-pong + fused + tail=sk now rejected), memcheck + racecheck on two
# tail=sk configs on a shape with a tail, and A/B of the shapes where the revised estimate emits (or nearly emits) a tail.
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
timeout 270 $B/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "Which is|FAILED" $O/gpu_tests.log | head -20
SAN_SHAPE="1536 1536 520" timeout 150 scripts/sanitize_sm90.sh $O/sanitize.log $B/gemmtune 70 \
  "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,tail=sk" \
  "tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=4,tail=sk"
P192="tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=9"
G192="tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab1 $B "2048,28672,4096" cublaslt:default "$P192" "$P192,tail=sk" "$G192" "$G192,tail=sk"
PM="tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=m,group=7"
PG="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab2 $B "8192,8192,8192" cublaslt:default "$PM" "$PM,tail=sk" "$PG" "$PG,tail=sk"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
gzip -f $O/*.log
