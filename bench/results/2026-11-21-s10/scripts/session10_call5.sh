#!/usr/bin/env bash
# session-10 device call 5: tile N = 168 on 2 CTAs along M (B in two 88-row parts, 8 rows of padding per stage), now
# enumerated for 2x1 clusters and ranked first at 4096x10240x8192 / 8192x28672x4096. GPU tests that run 168 configs,
# memcheck + racecheck on ping-pong 128x168 2x1 gpc, side by side against cuBLASLt's 168x128, then the large suite.
# Results go to $OUT as they come (the device budget is nearly spent).
set -u
O=$1; B=build-lead
export LD_LIBRARY_PATH=$B
GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 170 $B/tests/gemmtune_gpu_tests \
  --gtest_filter='Sm90Gpu.ShapesLayoutsDtypesConfigs:Sm90Gpu.ManyTilesPerCta:Sm90Gpu.TileOrdersRepeatedLaunches:Sm90Gpu.StreamKTail:Sm90EpilogueGpu.TileN168Chains' \
  > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
GEMMTUNE_CACHE_DIR=/tmp/gtc_s SAN_SHAPE="1536 1536 520" timeout 90 scripts/sanitize_sm90.sh $O/sanitize.log $B/gemmtune 40 \
  "tile=128x168x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,tail=sk"
gzip -f $O/gpu_tests.log $O/sanitize.log
CB168="cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
P168G="tile=128x168x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P168N="tile=128x168x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=10"
P192G="tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
export GEMMTUNE_CACHE_DIR=/tmp/gtc_ab
TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab build-lead "4096,10240,8192" "$CB168" "$P168G" "$P168G,tail=sk" "$P168N" "$P192G,tail=sk"
TIMEOUT=70 scripts/sm90_dev/ab_configs.sh $O/ab build-lead "8192,28672,4096" "$CB168" "$P168G" "$P168N" "$P192G"
GEMMTUNE_CACHE_DIR=/tmp/gtc_large timeout 120 $B/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json \
  > $O/bench_large.txt 2> $O/bench_large.log
echo "== large rc=$?"; cut -c1-175 $O/bench_large.txt
gzip -f $O/*.log $O/ab/*.log 2>/dev/null
