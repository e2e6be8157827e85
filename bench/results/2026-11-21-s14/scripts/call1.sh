#!/bin/bash
# Session 14 call 1: the wgmma hand-off microbenchmark (scripts/sm90_dev/wgmma_switch.cu), built on the device.
OUT=$1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I kernels -o /tmp/wgmma_switch scripts/sm90_dev/wgmma_switch.cu || exit 1
/tmp/wgmma_switch 16 64 | tee $OUT/switch_16x64.txt
/tmp/wgmma_switch 64 8 | tee $OUT/switch_64x8.txt
/tmp/wgmma_switch 128 2 | tee $OUT/switch_128x2.txt
