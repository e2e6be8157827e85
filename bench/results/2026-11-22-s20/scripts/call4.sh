#!/usr/bin/env bash
# Session 20 device call 4: where decode-size GEMMs lose to cuBLASLt (experiment build: stages up to 16).
# A) fixed cost and streaming rate: 16 x 4096 x K for K = 256 ... 8192 (a line over K per config).
# B) cluster coupling: split and plain at 1x1 against 1x2 (A multicast couples the pair's rings).
# C) ncu, one launch each, launch shape and DRAM: cuBLASLt's GEMM kernel (nvjet) and ours at 16x4096x14336.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=build-lead
G="sched=pingpong,raster=m,group=1"
C=("tile=64x128x64,stages=7,cluster=1x2,$G,tiles=gpc" "tile=64x64x64,stages=12,cluster=1x2,$G,tiles=gpc"
   "tile=64x128x64,stages=7,cluster=1x2,$G,tiles=gpc,tail=sk" "tile=64x64x64,stages=12,cluster=1x1,$G" "cublaslt:default")
echo "#### A"
scripts/sm90_dev/ab_configs.sh $O/ab_A build-lead "16,4096,256 16,4096,512 16,4096,1024 16,4096,2048 16,4096,4096 16,4096,8192 16,128,64" \
  "${C[@]}" 2>&1 | cut -c1-110
C=()
for t in 64x128x64,stages=7 64x64x64,stages=12 64x192x64,stages=6; do
  C+=("tile=$t,cluster=1x1,$G,tail=sk" "tile=$t,cluster=1x2,$G,tail=sk")
done
C+=("tile=64x64x64,stages=12,cluster=1x1,$G" "tile=64x64x64,stages=12,cluster=1x2,$G" "cublaslt:default")
echo "#### B"
scripts/sm90_dev/ab_configs.sh $O/ab_B build-lead "16,4096,14336 16,6144,4096 16,4096,8192" "${C[@]}" 2>&1 | cut -c1-110
echo "#### C"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__registers_per_thread,launch__occupancy_limit_shared_mem,sm__warps_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second
for cfg in cublaslt:default "sm90:tile=64x128x64,stages=7,cluster=1x2,$G,tiles=gpc,tail=sk"; do
  K='regex:^(?!gt_ref|gt_sm90_smid_probe)'; [[ $cfg == cublaslt* ]] && K='regex:nvjet'
  timeout 120 ncu --clock-control none -k "$K" --launch-skip 3 --launch-count 1 --metrics $M \
    build-lead/gemmtune tune --m 16 --n 4096 --k 14336 --config "$cfg" --in-process --no-cache --min-iters 3 \
    --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/ncu_${cfg%%:*}.txt 2>&1
  echo "== $cfg rc=$?"; grep -E "__|\)x\(" $O/ncu_${cfg%%:*}.txt | head -24
done
tar czf $O/logs.tgz -C $O $(cd $O && ls -d ab_* ncu_*) && (cd $O && rm -rf ab_* ncu_*)
