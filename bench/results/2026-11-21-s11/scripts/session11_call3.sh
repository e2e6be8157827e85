#!/usr/bin/env bash
# session-11 device call 3: where the cycles go, ours (new build) against cuBLASLt's nvjet at the same tile, ncu at
# base clock: elapsed / active cycles (avg, min, max over SMs), tensor-pipe busy cycles (absolute), instructions.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc3
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
P176="sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P128="sm90:tile=128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=n,group=8,tiles=gpc"
M="gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.max,sm__cycles_active.avg,sm__cycles_active.min,sm__cycles_active.max,sm__pipe_tensor_op_hmma_cycles_active.avg,sm__pipe_tensor_op_hmma_cycles_active.min,sm__pipe_tensor_op_hmma_cycles_active.max,smsp__inst_executed.sum,lts__t_bytes.sum,dram__bytes_read.sum"
one() {  # tag shape config kernel-regex
  read -r m n k <<<"$2"
  timeout 100 ncu --clock-control base -k "$4" --launch-skip 2 --launch-count 1 --metrics $M build-lead/gemmtune tune \
    --m $m --n $n --k $k --config "$3" --in-process --no-cache --min-iters 5 --min-time-ms 0 --warmup 1 --settle-ms 0 \
    > $O/ncu_$1.txt 2>&1
  echo "== $1 rc=$?"; grep -E "^ +(gpu__|sm__|smsp__|lts__|dram__)" $O/ncu_$1.txt | awk '{printf "   %-60s %s %s\n", $1, $2, $NF}'
}
for rep in 1 2; do
  one cb176_$rep "8192 6144 4096" "$CB176" 'regex:nvjet'
  one pp176_$rep "8192 6144 4096" "$P176" 'regex:^gt_sm90_pp'
done
one cb128 "4096 4096 4096" "$CB128" 'regex:nvjet'
one pp128 "4096 4096 4096" "$P128" 'regex:^gt_sm90_pp'
