#!/usr/bin/env bash
# Session 22 device call 4: ncu on the gemv kernels (CUDA-core at M = 1, mma=1 at M = 4 / 16) and cuBLASLt at M = 16:
# DRAM and L2 traffic, L1 hit rate, stalls. Why does mma=1 stream at ~3.3 TB/s?
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=build-lead NOFLUSH=1 SLOTS=1 ROUNDS=20
P=build-lead/timing_probe
M="dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sector_hit_rate.pct,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,launch__block_size,launch__occupancy_limit_registers,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__inst_executed.sum"
run() {  # name m n k config
  local name=$1; shift
  timeout 120 ncu --metrics $M --launch-skip 40 --launch-count 1 -k 'regex:gt_gemv|gt_sm90|nvjet|gemm|Kernel' \
    $P "$@" > $O/ncu_$name.txt 2>&1
  echo "== $name rc=$?"; grep -E "^\s+(dram|lts|l1tex|gpu__time|sm__warps|launch__|smsp)" $O/ncu_$name.txt | awk '{print "   ",$1,$(NF-1),$NF}'
}
run A_m1_kmajor 1 4096 14336 "3" "gemv:vec=m,warps=4,rows=2,ksplit=4,unroll=4"
run E_m1_28672 1 28672 4096 "2" "gemv:vec=m,warps=8,rows=4,ksplit=8,unroll=2"
run B_m16_mma16 16 4096 14336 "3" "gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1"
run B2_m16_mma32 16 4096 14336 "3" "gemv:vec=m,warps=8,rows=32,ksplit=8,unroll=2,mma=1"
run C_m4_mma 4 4096 14336 "3" "gemv:vec=m,warps=8,rows=16,ksplit=8,unroll=2,mma=1"
run D_m16_cublaslt 16 4096 14336 "3" "cublaslt:default"
run F_m16_sm90 16 4096 14336 "3" "sm90:tile=64x16x64,stages=16,cluster=2x1,sched=pingpong,raster=m,group=3,swap=1"
