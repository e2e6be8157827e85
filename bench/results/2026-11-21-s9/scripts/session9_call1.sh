#!/usr/bin/env bash
# session-9 device call 1: run-time tile walk + stream-K tail (tail=sk). The new GPU tests (StreamKTail,
# StreamKTailChains), then interleaved A/B of sk vs plain on shapes whose last round is partial.
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
timeout 150 $B/tests/gemmtune_gpu_tests --gtest_filter='*StreamK*' > $O/gpu_sk.log 2>&1
echo "sk tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_sk.log | tr '\n' ' ')"
grep -E "Which is|Failure|FAILED|skip" $O/gpu_sk.log | head -30
PP="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
PPS="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6"
CO="tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=n,group=8"
CB="cublaslt:default"
TIMEOUT=75 scripts/sm90_dev/ab_configs.sh $O/ab1 $B "4096,4096,4096 2048,4096,4096" "$CB" "$PP" "$PP,tail=sk" "$PPS" "$PPS,tail=sk" "$CO" "$CO,tail=sk"
TIMEOUT=75 scripts/sm90_dev/ab_configs.sh $O/ab2 $B "2048,4096,14336 8192,8192,8192" "$CB" "$CO" "$CO,tail=sk" "$PP" "$PP,tail=sk"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader
gzip -f $O/*.log
