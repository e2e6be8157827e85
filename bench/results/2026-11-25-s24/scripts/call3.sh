#!/usr/bin/env bash
# Session 24 device call 3: the streaming probe, second form: TMA configs shaped like the sm90 decode tile (64 weight
# rows + a 16-row vector box per stage, 16 stages, 64 CTAs) with stages issued in groups of 2-4, 2-4 k-blocks per
# stage, K splits; LDG patterns against the warps that stream per SM. And the real kernels at 16 tokens.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
timeout 150 build-lead/tma_stream_probe 4096 14336 2>&1 | tee $O/probe_4096x14336.txt
timeout 150 build-lead/tma_stream_probe 28672 4096 2>&1 | tee $O/probe_28672x4096.txt
for shape in "16 4096 14336" "16 28672 4096"; do
  set -- $shape
  GEMMTUNE_CACHE_DIR=/tmp/gtc_r timeout 100 build-lead/gemmtune tune --m $1 --n $2 --k $3 --no-cache \
    --config 'sm90:tile=64x16x64,stages=16,cluster=1x1,sched=pingpong,raster=m,group=6,swap=1' \
    --config 'sm90:tile=128x16x64,stages=12,cluster=1x1,sched=pingpong,raster=m,group=4,swap=1' \
    --config 'gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1' \
    --config 'gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4' --config cublaslt:default 2>&1 \
    | grep -E "us  |runoff|winner|error" | tee -a $O/real.txt
done
