#!/usr/bin/env bash
# ncu on a few configs of one problem (one profiled launch each, clocks left alone): sm90 configs without their
# "sm90:" prefix, cuBLASLt ones as "cublaslt:...". Every kernel but gemmtune's reference kernels and the tiles=gpc
# placement probe is a match.
#   scripts/sm90_dev/ncu_probe.sh OUTDIR BUILD_DIR "m n k" CONFIG...
set -u
OUT=$1; B=$2; read -r m n k <<<"$3"; shift 3; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GEMMTUNE_CACHE_DIR=${GEMMTUNE_CACHE_DIR:-/tmp/gtcache}
i=0
for cfg in "$@"; do
  i=$((i+1))
  [[ $cfg == cublaslt:* ]] || cfg="sm90:$cfg"
  timeout 120 ncu --clock-control none -k 'regex:^(?!gt_ref|gt_sm90_smid_probe)' --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,lts__t_bytes.sum,dram__bytes_read.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_sector_hit_rate.pct \
    "$B/gemmtune" tune --m "$m" --n "$n" --k "$k" --config "$cfg" --in-process --no-cache --min-iters 3 \
    --min-time-ms 0 --warmup 1 --settle-ms 0 >"$OUT/ncu_$i.txt" 2>&1
  echo "== $i $cfg rc=$?"
  grep -E "Duration|SM Frequency|hmma_cycles_active|lts__t_bytes|dram__bytes_read|bank_conflicts|inst_executed.sum|Stall|Memory Throughput|L2 Cache Throughput|Compute \(SM\)|No Eligible|Issued Warp|wavefronts_mem_shared|hit_rate|^  [a-zA-Z_0-9]+ \(" "$OUT/ncu_$i.txt" | head -40
done
