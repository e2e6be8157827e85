#!/bin/bash
# Session 14 call 2: wgmma_switch with a producer (1-D bulk loads through full/empty barriers) and an epilogue with
# bulk stores: which part of the real kernel's surroundings costs the tensor pipe cycles per tile.
OUT=$1
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I kernels -o /tmp/wgmma_switch scripts/sm90_dev/wgmma_switch.cu 2>&1 | grep -v C7519
/tmp/wgmma_switch 16 64 | tee $OUT/switch_16x64.txt
/tmp/wgmma_switch 64 8 | tee $OUT/switch_64x8.txt
