#!/bin/bash
# Session 16 call 1: wgmma_switch, the producer thread issues the epilogue's bulk stores (epi 8 whole slabs, epi 9
# quarter-slab pieces between its loads) against the consumer issuing them (epi 2); long K (16 tiles x 64 k-blocks)
# and short K (64 x 8). Binary built on the dev host from scripts/sm90_dev/wgmma_switch.cu, carried in build-lead.
OUT=$1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
build-lead/wgmma_switch 16 64 | tee $OUT/switch_16x64.txt
build-lead/wgmma_switch 64 8 | tee $OUT/switch_64x8.txt
