#!/usr/bin/env bash
# session-7 device call 5: the final build (build-lead): every GPU test, compute-sanitizer memcheck + racecheck on
# the reworked dynamic tile order (ping-pong 2x1 and coop 1x2).
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
timeout 330 $B/tests/gemmtune_gpu_tests > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "FAILED|Which is" $O/gpu_tests.log | head -20
timeout 200 scripts/sanitize_sm90.sh $O/sanitize.log $B/gemmtune 45 \
  "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7,tiles=dynamic" \
  "tile=128x256x64,stages=4,cluster=1x2,sched=coop,raster=n,group=4,tiles=dynamic"
echo "sanitize rc=$?"
cd $O && gzip -f sanitize.log gpu_tests.log
