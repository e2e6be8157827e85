#!/usr/bin/env bash
# session-11 device call 4: our kernels move 27-45% more bytes through L2 than cuBLASLt's at the same tile (call 3).
# Does the TMA maps' L2 promotion (ours 256B) matter? GEMMTUNE_SM90_L2PROMO (experiment build) = 0 none, 1 64B,
# 2 128B, 3 256B: side by side against cuBLASLt in each run, then ncu at base clock (L2 bytes, DRAM bytes, cycles).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
P176="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P128="tile=128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=n,group=8,tiles=gpc"
M="gpu__time_duration.sum,sm__cycles_elapsed.avg,lts__t_bytes.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum"
for rep in 1 2; do
  for pr in 3 0 2 1; do
    export GEMMTUNE_SM90_L2PROMO=$pr GEMMTUNE_CACHE_DIR=/tmp/gtc4
    echo "#### rep $rep promo $pr"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${pr}_$rep build-lead "8192,6144,4096" "$CB176" "$P176"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${pr}_$rep build-lead "4096,4096,4096" "$CB128" "$P128"
    if [ $rep = 1 ]; then
      for s in "8192 6144 4096 $P176" "4096 4096 4096 $P128"; do
        read -r m n k c <<<"$s"
        timeout 60 ncu --clock-control base -k 'regex:^gt_sm90' --launch-skip 2 --launch-count 1 --metrics $M \
          build-lead/gemmtune tune --m $m --n $n --k $k --config "sm90:$c" --in-process --no-cache --min-iters 5 \
          --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/ncu_${pr}_$m.txt 2>&1
        echo "ncu promo $pr $m: $(grep -E '^ +(gpu__|sm__|lts__|dram__)' $O/ncu_${pr}_$m.txt | awk '{print $1, $NF}' | tr '\n' ' ')"
      done
    fi
  done
done
for f in $O/ab_*/*.log; do gzip -f $f; done
