#!/usr/bin/env bash
# Device call 1 (2026-11-21-ml): GPU tests, raster-group A/B interleaved with cuBLAS default, ncu ours vs cuBLAS.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
B=build-ml
export GEMMTUNE_CACHE_DIR=/tmp/c1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $O/smi_before.txt 2>&1
timeout 100 $B/tests/gemmtune_gpu_tests --gtest_filter='Sm90Gpu.*' > $O/gpu_tests.log 2>&1; echo "tests rc=$?" >> $O/gpu_tests.log
tail -3 $O/gpu_tests.log
run() { # shape cfg
  timeout 40 $B/gemmtune tune $1 --config "$2" --no-cache --in-process -q 2>&1 | grep -E "^(sm90|cublaslt) " | head -1
}
S="tile=128x256x64,stages=4,sched=coop"
for shape in "--m 8192 --n 8192 --k 8192" "--m 8192 --n 4096 --k 4096" "--m 4096 --n 10240 --k 8192"; do
  echo "== $shape"
  for rep in 1 2; do
  for cfg in "cublaslt:default" "sm90:$S,cluster=1x1,raster=m,group=8" "sm90:$S,cluster=1x1,raster=m,group=16" \
             "sm90:$S,cluster=1x1,raster=n,group=8" "sm90:$S,cluster=2x1,raster=m,group=8" "sm90:$S,cluster=1x1,raster=m,group=4"; do
    echo "$rep $(run "$shape" "$cfg")"
  done; done
done 2>&1 | tee $O/ab_group.txt
NCU="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats --metrics sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,lts__t_bytes.sum"
timeout 60 $NCU -k regex:gt_sm90 --launch-skip 3 -c 1 $B/gemmtune tune --m 8192 --n 8192 --k 8192 --config "sm90:$S,cluster=1x1,raster=m,group=8" --no-cache --in-process -q --min-iters 3 --min-time-ms 1 > $O/ncu_sm90_m8.txt 2>&1
timeout 60 $NCU -k regex:gt_sm90 --launch-skip 3 -c 1 $B/gemmtune tune --m 8192 --n 8192 --k 8192 --config "sm90:$S,cluster=1x1,raster=m,group=16" --no-cache --in-process -q --min-iters 3 --min-time-ms 1 > $O/ncu_sm90_m16.txt 2>&1
timeout 60 $NCU -k regex:'nvjet|xmma|cutlass|gemm_kernel|sm90_' --launch-skip 3 -c 1 $B/gemmtune tune --m 8192 --n 8192 --k 8192 --config cublaslt:default --no-cache --in-process -q --min-iters 3 --min-time-ms 1 > $O/ncu_cublas.txt 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $O/smi_after.txt 2>&1
grep -E "rc=|PASSED|FAILED" $O/gpu_tests.log | tail -3
for f in $O/ncu_*.txt; do echo "## $f"; grep -E "gt_sm90|nvjet|SM Frequency|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Hit|DRAM Through|hmma|sector_hit|dram__bytes|lts__t_bytes|cycles_elapsed|Warp Cycles Per Issued|No Eligible|Issued Warp" $f | head -20; done
