#!/bin/bash
# Session 14 call 4: wgmma_switch, epilogue copy-out through the LSU (epi 4) and bulk stores in 2 KB pieces (epi 5)
OUT=$1
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I kernels -o /tmp/wgmma_switch scripts/sm90_dev/wgmma_switch.cu 2>&1 | grep -v C7519
/tmp/wgmma_switch 16 64 | tee $OUT/switch_16x64.txt
/tmp/wgmma_switch 64 8 | tee $OUT/switch_64x8.txt
