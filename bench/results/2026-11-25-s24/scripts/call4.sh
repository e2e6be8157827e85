#!/usr/bin/env bash
# Session 24 device call 4: the mma gemv compiled for 3-4 CTAs per SM (new config key occ: __launch_bounds__'s minimum
# blocks, 64-80 registers) against the same configs at their default occupancy (2 CTAs of 8 warps: 100-128
# registers), side by side in one tune per problem, with cuBLASLt's default and the sm90 decode tile. Probe (calls
# 2-3): 16-byte loads of 128-byte row lines stream 4096x14336 at 3.3 / 3.55 / 3.8 / 4.1 TB/s with 16 / 24 / 32 / 62
# warps per SM.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
for shape in "16 4096 14336" "8 4096 14336" "4 4096 14336" "16 28672 4096" "8 28672 4096" "16 4096 4096"; do
  set -- $shape
  cfgs=(--config cublaslt:default
        --config 'sm90:tile=64x16x64,stages=16,cluster=1x1,sched=pingpong,raster=m,group=6,swap=1')
  for b in "warps=8,rows=16,ksplit=8,unroll=2,mma=1" "warps=8,rows=16,ksplit=8,unroll=1,mma=1" \
           "warps=8,rows=16,ksplit=1,unroll=2,mma=1" "warps=8,rows=16,ksplit=4,unroll=2,mma=1"; do
    for occ in "" ",occ=3" ",occ=4"; do cfgs+=(--config "gemv:vec=m,$b$occ"); done
  done
  for b in "warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=2" "warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=3" \
           "warps=8,rows=16,ksplit=8,unroll=1,mma=1,ring=4"; do
    for occ in "" ",occ=3"; do cfgs+=(--config "gemv:vec=m,$b$occ"); done
  done
  echo "== $1 x $2 x $3"
  GEMMTUNE_CACHE_DIR=/tmp/gtc_o timeout 150 build-lead/gemmtune tune --m $1 --n $2 --k $3 --no-cache "${cfgs[@]}" \
    > $O/occ_${1}x${2}x${3}.log 2>&1
  echo "rc=$?"; grep -E " us |winner|runoff|error" $O/occ_${1}x${2}x${3}.log | cut -c1-150
done
