#!/usr/bin/env bash
# session-8 device call 5: final build (gpc twins for ping-pong 2x1 / 1x2 only): ncu merged L2 sectors static vs gpc
# twin through the product path (kernel filter fixed: call 4 profiled the placement probe), then both suites.
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader > $O/smi.txt
MET=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lrc__lrc2xbar_sectors_op_read.sum,lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,dram__bytes_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
ncu1() {  # m n k config
  timeout 60 ncu --clock-control none -k 'regex:^gt_sm90_(pp|coop)_' --launch-skip 3 --launch-count 1 --metrics $MET \
    $B/gemmtune tune --m $1 --n $2 --k $3 --config "sm90:$4" --in-process --no-cache --min-iters 3 --min-time-ms 0 \
    --warmup 1 --settle-ms 0 > $O/tmp_ncu.txt 2>&1
  echo "== $1x$2x$3 $4 rc=$?"; grep -E "^    [a-z]+__|ERR|rror" $O/tmp_ncu.txt
}
{
for t in "" ",tiles=gpc"; do
  ncu1 4096 4096 4096 "tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8$t"
  ncu1 2048 4096 4096 "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8$t"
  ncu1 8192 8192 8192 "tile=128x192x64,stages=4,cluster=1x2,sched=pingpong,raster=m,group=8$t"
  ncu1 4096 4096 4096 "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=n,group=8$t"
done
} > $O/ncu.txt 2>&1
rm -f $O/tmp_ncu.txt
awk '/^==/{printf "\n%s %s ", $2, $3} /hardware/{printf "hw=%s ", $3} /lrc2xbar/{printf "l2rd=%s ", $3} /dram__/{printf "dram=%s ", $3} /gpu__time/{printf "t=%s ", $3} /cycles_elapsed/{printf "clk=%s ", $3} /hmma/{printf "tc=%s ", $3}' $O/ncu.txt; echo
timeout 240 $B/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json > $O/bench_large.txt 2> $O/bench_large.log
echo "bench large rc=$?"; tail -15 $O/bench_large.txt
timeout 180 $B/gemmtune bench --suite bench/suites/llama3_8b.json --json $O/bench_llama3_8b.json > $O/bench_llama3_8b.txt 2> $O/bench_llama3_8b.log
echo "bench llama rc=$?"; tail -3 $O/bench_llama3_8b.txt
cd $O && tar czf logs.tgz bench_large.log bench_llama3_8b.log && rm -f bench_large.log bench_llama3_8b.log
