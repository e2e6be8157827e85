#!/usr/bin/env bash
# session-11 device call 2: ncu at base clock, the same ping-pong 128x176 2x1 kernel from the old build (session 10)
# and the new one (lean k loop + stmatrix epilogue) at 8192x6144x4096: duration, cycles, instructions, tensor-pipe
# activity, alternating builds; then the large and llama3_8b suites on the new build (fresh caches).
set -u
O=$1
P176="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
M="gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
for rep in 1 2; do
  for b in build-base build-lead; do
    LD_LIBRARY_PATH=$b GEMMTUNE_CACHE_DIR=/tmp/gtn_$b timeout 100 ncu --clock-control base -k 'regex:^gt_sm90_pp' \
      --launch-skip 2 --launch-count 2 --metrics $M $b/gemmtune tune --m 8192 --n 6144 --k 4096 \
      --config "sm90:$P176" --in-process --no-cache --min-iters 6 --min-time-ms 0 --warmup 1 --settle-ms 0 \
      > $O/ncu_${b}_$rep.txt 2>&1
    echo "ncu $b rep $rep: $(grep -E 'gpu__time_duration|sm__cycles_elapsed.avg |inst_executed|hmma_cycles' $O/ncu_${b}_$rep.txt | awk '{print $1, $NF}' | tr '\n' ' ')"
  done
done
export LD_LIBRARY_PATH=build-lead
GEMMTUNE_CACHE_DIR=/tmp/gtc_large timeout 170 build-lead/gemmtune bench --suite bench/suites/large.json --json $O/bench_large.json \
  > $O/bench_large.txt 2> $O/bench_large.log
echo "== large rc=$?"; cut -c1-175 $O/bench_large.txt
GEMMTUNE_CACHE_DIR=/tmp/gtc_llama timeout 150 build-lead/gemmtune bench --suite bench/suites/llama3_8b.json --json $O/bench_llama.json \
  > $O/bench_llama.txt 2> $O/bench_llama.log
echo "== llama rc=$?"; cut -c1-175 $O/bench_llama.txt
gzip -f $O/*.log
