#!/usr/bin/env bash
# Session 24 device call 2: streaming probe (scripts/tma_stream_probe.cu, built here with nvcc into build-lead/):
# TMA ring vs 16-byte loads, bytes per row per burst, CTAs, bytes in flight; and the real kernels side by side.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
timeout 150 build-lead/tma_stream_probe 4096 14336 2>&1 | tee $O/probe_4096x14336.txt
timeout 150 build-lead/tma_stream_probe 28672 4096 2>&1 | tee $O/probe_28672x4096.txt
for m in 1 16; do
  GEMMTUNE_CACHE_DIR=/tmp/gtc_r timeout 100 build-lead/gemmtune tune --m $m --n 4096 --k 14336 --no-cache \
    --config 'gemv:vec=m,warps=4,rows=2,ksplit=4,unroll=4' \
    --config 'sm90:tile=64x16x64,stages=16,cluster=1x1,sched=pingpong,raster=m,group=6,swap=1' \
    --config 'gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4' --config cublaslt:default 2>&1 | grep -E "us  |runoff|winner" | tee -a $O/real.txt
done
