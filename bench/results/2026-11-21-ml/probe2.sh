#!/usr/bin/env bash
# Device call 2 (2026-11-21-ml): raster-group A/B interleaved with cuBLAS default, ncu of ours, large suite (sm90 winner).
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
B=build-ml
export GEMMTUNE_CACHE_DIR=/tmp/c2
run() { timeout 40 $B/gemmtune tune $1 --config "$2" --no-cache --in-process -q 2>&1 | grep -E "^winner:|^error" | head -1 | cut -c1-140; }
for shape in "--m 8192 --n 8192 --k 8192" "--m 8192 --n 4096 --k 4096" "--m 4096 --n 10240 --k 8192"; do
  echo "== $shape"
  for cfg in "cublaslt:default" "sm90:tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8" \
             "sm90:tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=16" \
             "sm90:tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=n,group=8" \
             "cublaslt:default" "sm90:tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8" \
             "sm90:tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=4"; do
    echo "$(run "$shape" "$cfg")"
  done
done 2>&1 | tee $O/ab_group.txt
NCU="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats --metrics sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,lts__t_bytes.sum"
for g in 8 16; do
timeout 50 $NCU -k regex:gt_sm90 --launch-skip 3 -c 1 $B/gemmtune tune --m 8192 --n 8192 --k 8192 --config "sm90:tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=$g" --no-cache --in-process -q --min-iters 3 --min-time-ms 1 > $O/ncu_sm90_m$g.txt 2>&1
done
for f in $O/ncu_*.txt; do echo "## $f"; grep -E "SM Frequency|Duration|Compute \(SM\) Throughput|L2 Hit|DRAM Through|hmma|dram__bytes|lts__t_bytes|Warp Cycles Per Issued|No Eligible|rror" $f | head -14; done
timeout 170 $B/gemmtune bench --suite bench/suites/large.json --backends sm90 --top-k 3 --force -q --json $O/bench_large.json > $O/bench_large.txt 2>&1
tail -16 $O/bench_large.txt
