#!/usr/bin/env bash
# Call 1: the timing probe (scripts/timing_probe.cpp) — per-slot medians under a flush before every launch and
# under the tuner's buffer-set rotation with 1-8 sets, at decode and large sizes.
set -x
OUT=$1
export LD_LIBRARY_PATH=$PWD/build-lead
export GEMMTUNE_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
P=build-lead/timing_probe
$P 1 28672 4096 "1 2 3 4 8" "gemv:vec=m,warps=8,rows=4,ksplit=8,unroll=2" "cublaslt:default" 2>&1 | tee $OUT/p1.txt
$P 1 4096 14336 "1 2 3 4 8" "gemv:vec=m,warps=4,rows=2,ksplit=4,unroll=4" "cublaslt:default" 2>&1 | tee $OUT/p2.txt
$P 1 4096 4096 "1 2 3 4 8" "gemv:vec=m,warps=8,rows=2,ksplit=8,unroll=2" "cublaslt:default" 2>&1 | tee $OUT/p3.txt
$P 16 4096 14336 "1 2 3 4 8" "gemv:vec=m,warps=4,rows=16,ksplit=4,unroll=2,mma=1" "sm90:tile=64x16x64,stages=16,cluster=1x1,sched=pingpong,raster=m,group=6,swap=1" 2>&1 | tee $OUT/p4.txt
SLOTS=4 ROUNDS=100 $P 4096 4096 4096 "1 2 3" "sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc" "cublaslt:default" 2>&1 | tee $OUT/p5.txt
SLOTS=4 ROUNDS=100 $P 2048 4096 4096 "1 2 3 4" "sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc" "cublaslt:default" 2>&1 | tee $OUT/p6.txt
