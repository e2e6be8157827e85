#!/usr/bin/env bash
# session-9 device call 1: run-time tile walk + stream-K tail (tail=sk). GPU tests (new: StreamKTail,
# StreamKTailChains), sanitizers on two tail=sk configs, interleaved A/B of sk vs plain on the shapes whose last round
# is partial, then the suites with the new enumeration.
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
timeout 150 $B/tests/gemmtune_gpu_tests --gtest_filter='*StreamK*' > $O/gpu_sk.log 2>&1
echo "sk tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_sk.log | tr '\n' ' ')"
grep -E "Which is|Failure|FAILED|skip" $O/gpu_sk.log | head -30
timeout 240 $B/tests/gemmtune_gpu_tests --gtest_filter='-*StreamK*' > $O/gpu_rest.log 2>&1
echo "other gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_rest.log | tr '\n' ' ')"
grep -E "Which is|FAILED" $O/gpu_rest.log | head -20
SAN_SHAPE="1536 1536 520" timeout 200 scripts/sanitize_sm90.sh $O/sanitize.log $B/gemmtune 90 \
  "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,tail=sk" \
  "tile=128x128x64,stages=6,cluster=1x1,sched=coop,raster=m,group=4,tail=sk"
PP="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
PPS="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6"
CO="tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=n,group=8"
CB="cublaslt:default"
TIMEOUT=90 scripts/sm90_dev/ab_configs.sh $O/ab1 $B "4096,4096,4096 2048,4096,4096" "$CB" "$PP" "$PP,tail=sk" "$PPS" "$PPS,tail=sk" "$CO" "$CO,tail=sk"
TIMEOUT=90 scripts/sm90_dev/ab_configs.sh $O/ab2 $B "2048,4096,14336 8192,8192,8192" "$CB" "$CO" "$CO,tail=sk" "$PP" "$PP,tail=sk"
timeout 200 $B/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json > $O/bench_large.txt 2> $O/bench_large.log
echo "large rc=$?"; cat $O/bench_large.txt
timeout 150 $B/gemmtune bench --suite bench/suites/llama3_8b.json --json $O/bench_llama3_8b.json > $O/bench_llama3_8b.txt 2> $O/bench_llama3_8b.log
echo "llama rc=$?"; tail -3 $O/bench_llama3_8b.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
gzip -f $O/*.log
