#!/usr/bin/env bash
# session-9 device call 6: where the last 0.5-2% to cuBLASLt's kernels of the same tile shape goes. (1) ncu with the
# clocks locked to base: cycles, instructions, tensor-pipe activity, L2/DRAM bytes, shared-memory wavefronts, for
# cuBLASLt 176x128 vs our 128x176 at 8192x6144x4096 and cuBLASLt 112x128 vs our 128x128 / 128x112 at 4096^3.
# (2) each kernel sustained ~4 s alone while nvidia-smi samples SM clock and power: the clock each holds at the power
# limit. Then the GPU tests once more (test refactor).
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB112="cublaslt:algo=66,tile=112x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
P176="sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P128="sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P112="sm90:tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
M="gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum,dram__bytes_read.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,smsp__warps_issue_stalled_barrier.avg,smsp__warps_issue_stalled_long_scoreboard.avg,smsp__warps_issue_stalled_wait.avg,smsp__warps_issue_stalled_sleeping.avg"
ncu_one() {  # tag shape config
  read -r m n k <<<"$2"
  timeout 100 ncu --clock-control base -k 'regex:^(?!gt_ref|gt_sm90_smid_probe)' --launch-skip 3 --launch-count 2 \
    --metrics $M $B/gemmtune tune --m $m --n $n --k $k --config "$3" --in-process --no-cache --min-iters 6 \
    --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/ncu_$1.txt 2>&1
  echo "== $1 rc=$?"
  grep -E "gpu__time_duration|sm__cycles_elapsed.avg |inst_executed|hmma_cycles|lts__t_bytes|dram__bytes|wavefronts|coalescing|stalled" $O/ncu_$1.txt | awk '{print $1, $(NF)}' | sort -u | head -24
}
ncu_one cb176 "8192 6144 4096" "$CB176"
ncu_one pp176 "8192 6144 4096" "$P176"
ncu_one cb112 "4096 4096 4096" "$CB112"
ncu_one pp128 "4096 4096 4096" "$P128"
ncu_one pp112 "4096 4096 4096" "$P112"
sustain() {  # tag shape config
  read -r m n k <<<"$2"
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 > $O/smi_$1.csv &
  sp=$!
  timeout 60 $B/gemmtune tune --m $m --n $n --k $k --config "$3" --in-process --no-cache --min-time-ms 4000 \
    --settle-ms 0 > $O/sustain_$1.txt 2>&1
  kill $sp; wait $sp 2>/dev/null
  # the last 2.5 s of samples: sustained
  echo "$1 $(grep -E '^winner' $O/sustain_$1.txt | grep -oE '[0-9.]+ us' | head -1) | $(tail -25 $O/smi_$1.csv | awk -F, '{c+=$1; p+=$2; n++} END {printf "%.0f MHz %.0f W", c/n, p/n}')"
}
for rep in 1 2; do
  sustain cb176.$rep "8192 6144 4096" "$CB176"
  sustain pp176.$rep "8192 6144 4096" "$P176"
  sustain cb112.$rep "4096 4096 4096" "$CB112"
  sustain pp128.$rep "4096 4096 4096" "$P128"
done
timeout 200 $B/tests/gemmtune_gpu_tests --gtest_filter='Sm90Gpu.*' > $O/gpu_sm90.log 2>&1
echo "sm90 gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_sm90.log | tr '\n' ' ')"
gzip -f $O/*.log
