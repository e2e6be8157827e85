#!/usr/bin/env bash
# session-13 device call 3: where mid-K time goes. ncu (one launch, base clocks) on 8192x6144x512 and x1024:
# cuBLASLt's nvjet 176x128 1x2 against our ping-pong 128x176 s5 (one 176-byte strip buffer per consumer), 128x160 s5
# (two 64-byte buffers) and 128x192 s4 (two 128-byte buffers): elapsed and active cycles, tensor-pipe busy, DRAM
# read/write bytes, L2 bytes, instructions, warp stall breakdown.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_ncu
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
G=",cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
M="sm__cycles_elapsed.max,sm__cycles_active.avg,sm__pipe_tensor_op_hmma_cycles_active.avg,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,smsp__inst_executed.sum,gpu__time_duration.sum"
for k in 512 1024; do
  i=0
  for cfg in "$CB176" "sm90:tile=128x176x64,stages=5$G" "sm90:tile=128x160x64,stages=5$G" "sm90:tile=128x192x64,stages=4$G"; do
    i=$((i+1))
    timeout 100 ncu --clock-control base -k 'regex:^(?!gt_ref|gt_sm90_smid_probe)' --launch-skip 3 --launch-count 1 \
      --section WarpStateStats --metrics $M \
      build-lead/gemmtune tune --m 8192 --n 6144 --k $k --config "$cfg" --in-process --no-cache --min-iters 3 \
      --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/ncu_k${k}_$i.txt 2>&1
    echo "== k=$k $i ${cfg:0:60} rc=$?"
    grep -E "sm__cycles|hmma|dram__bytes|lts__t_bytes|inst_executed|gpu__time|Stall|Warp Cycles Per" $O/ncu_k${k}_$i.txt | sed 's/  */ /g' | head -24
  done
done
