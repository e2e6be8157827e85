#!/usr/bin/env bash
# session-11 device call 6: is the gap to cuBLASLt at the same tile a fixed cost per launch or per tile? The same
# pair (ours, nvjet) side by side at growing K: a fixed cost shows as a constant difference in us, a per-k-block
# cost as a constant ratio. Then ncu at base clock at the smallest K (elapsed vs active cycles).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc6
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
P176="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P128="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  echo "#### rep $rep"
  TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_$rep build-lead "8192,6144,64 8192,6144,256 8192,6144,1024" "$CB176" "$P176"
  TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_$rep build-lead "4096,4096,64 4096,4096,512" "$CB128" "$P128"
done
M="gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.max,sm__cycles_active.avg,sm__cycles_active.max,sm__pipe_tensor_op_hmma_cycles_active.avg"
one() {  # tag shape config kernel-regex
  read -r m n k <<<"$2"
  timeout 60 ncu --clock-control base -k "$4" --launch-skip 2 --launch-count 1 --metrics $M build-lead/gemmtune tune \
    --m $m --n $n --k $k --config "$3" --in-process --no-cache --min-iters 5 --min-time-ms 0 --warmup 1 --settle-ms 0 \
    > $O/ncu_$1.txt 2>&1
  echo "ncu $1: $(grep -E '^ +(gpu__|sm__)' $O/ncu_$1.txt | awk '{print $1, $NF}' | tr '\n' ' ')"
}
one cb176_k64 "8192 6144 64" "$CB176" 'regex:nvjet'
one pp176_k64 "8192 6144 64" "sm90:$P176" 'regex:^gt_sm90_pp'
one cb176_k256 "8192 6144 256" "$CB176" 'regex:nvjet'
one pp176_k256 "8192 6144 256" "sm90:$P176" 'regex:^gt_sm90_pp'
for f in $O/ab_*/*.log; do gzip -f $f; done
