#!/usr/bin/env bash
# ncu on a few sm90 configs of one problem (one profiled launch each, clocks left alone).
#   scripts/sm90_dev/ncu_probe.sh OUTDIR BUILD_DIR "m n k" CONFIG...
set -u
OUT=$1; B=$2; read -r m n k <<<"$3"; shift 3; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GEMMTUNE_CACHE_DIR=${GEMMTUNE_CACHE_DIR:-/tmp/gtcache}
i=0
for cfg in "$@"; do
  i=$((i+1))
  timeout 120 ncu --clock-control none -k regex:gt_sm90 --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,lts__t_bytes.sum,dram__bytes_read.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
    "$B/gemmtune" tune --m "$m" --n "$n" --k "$k" --config "sm90:$cfg" --in-process --no-cache --min-iters 3 \
    --min-time-ms 0 --warmup 1 --settle-ms 0 >"$OUT/ncu_$i.txt" 2>&1
  echo "== $i $cfg rc=$?"
  grep -E "Duration|SM Frequency|hmma_cycles_active|lts__t_bytes|dram__bytes_read|bank_conflicts|inst_executed.sum|Stall|Memory Throughput|L2 Cache Throughput|Compute \(SM\)|No Eligible|Issued Warp" "$OUT/ncu_$i.txt" | head -30
done
