#!/usr/bin/env bash
# session-9 device call 7: stream-K shares in blockIdx order: the stream-K GPU tests, memcheck + racecheck on the gpc
# tail=sk config, a quick A/B of the 8192^3 tail twin, and the tuner GPU tests (runoff pick).
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
timeout 150 $B/tests/gemmtune_gpu_tests --gtest_filter='*StreamK*:*Tune*:*Tuner*' > $O/gpu_sk.log 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_sk.log | tr '\n' ' ')"
grep -E "Which is|FAILED" $O/gpu_sk.log | head -20
SAN_SHAPE="1536 1536 520" timeout 100 scripts/sanitize_sm90.sh $O/sanitize.log $B/gemmtune 45 \
  "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,tail=sk"
PG="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab $B "8192,8192,8192" cublaslt:default "$PG" "$PG,tail=sk"
gzip -f $O/*.log
