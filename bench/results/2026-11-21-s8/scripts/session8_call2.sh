#!/usr/bin/env bash
# session-8 device call 2: EXPERIMENT build-x/gpc (GPC-major cluster ids, map from call 1) with configs chosen for it:
# the operand that is NOT multicast is the one the coalescer merged in call 1 (2x1: A -> raster n; 1x2: B -> raster m).
# Interleaved times against build-lead (static blockIdx order) and cuBLAS, two repetitions; ncu merges for the new ones.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc GEMMTUNE_GPC_MAP=bench/results/2026-11-21-s8/call1_gpc_probe_order/gpc_map.txt
nvidia-smi -q -d CLOCK,POWER > $O/smi.txt 2>&1
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB112="cublaslt:algo=66,tile=112x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
S1=("$CB176" "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7"
    "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8"
    "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=4"
    "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=16"
    "tile=128x176x64,stages=5,cluster=1x2,sched=pingpong,raster=m,group=8")
S2=("cublaslt:default" "tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=m,group=7"
    "tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=8"
    "tile=128x192x64,stages=4,cluster=1x2,sched=pingpong,raster=m,group=8")
S3=("$CB112" "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6"
    "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8"
    "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=16"
    "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=n,group=16")
for rep in 1 2; do
  for b in lead gpc; do
    B=build-lead; [ $b = gpc ] && B=build-x/gpc
    TIMEOUT=120 scripts/sm90_dev/ab_configs.sh $O/ab.$b.$rep $B "8192,6144,4096" "${S1[@]}" > /dev/null 2>&1
    TIMEOUT=120 scripts/sm90_dev/ab_configs.sh $O/ab.$b.$rep $B "8192,8192,8192" "${S2[@]}" > /dev/null 2>&1
    TIMEOUT=120 scripts/sm90_dev/ab_configs.sh $O/ab.$b.$rep $B "4096,4096,4096" "${S3[@]}" > /dev/null 2>&1
  done
done
for f in $O/ab.lead.1/ab_*.txt; do
  b=$(basename $f); echo "== $b   (lead rep1, lead rep2, gpc rep1, gpc rep2; error column of gpc rep2)"
  paste <(grep -E "^\*? *(sm90|cublaslt) " $f | sed 's/^\* *//' | sort -k2 | awk '{print $2, $(NF-4)}') \
        <(grep -E "^\*? *(sm90|cublaslt) " $O/ab.lead.2/$b | sed 's/^\* *//' | sort -k2 | awk '{print $(NF-4)}') \
        <(grep -E "^\*? *(sm90|cublaslt) " $O/ab.gpc.1/$b | sed 's/^\* *//' | sort -k2 | awk '{print $(NF-4)}') \
        <(grep -E "^\*? *(sm90|cublaslt) " $O/ab.gpc.2/$b | sed 's/^\* *//' | sort -k2 | awk '{print $(NF-4), $(NF-1), $NF}')
done | tee $O/ab_table.txt
MET=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lrc__lrc2xbar_sectors_op_read.sum,lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,dram__bytes_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
ncu1() {  # build m n k config
  LD_LIBRARY_PATH=$1 timeout 60 ncu --clock-control none -k 'regex:^(?!gt_ref)' --launch-skip 3 --launch-count 1 --metrics $MET \
    $1/gemmtune tune --m $2 --n $3 --k $4 --config "sm90:$5" --in-process --no-cache --min-iters 3 --min-time-ms 0 \
    --warmup 1 --settle-ms 0 > $O/tmp_ncu.txt 2>&1
  echo "== $(basename $1) $2x$3x$4 $5 rc=$?"; grep -E "^    [a-z]+__|ERR|rror" $O/tmp_ncu.txt
}
{
for b in build-lead build-x/gpc; do
  ncu1 $b 8192 6144 4096 "${S1[3]}"; ncu1 $b 8192 6144 4096 "${S1[5]}"
  ncu1 $b 8192 8192 8192 "${S2[1]}"; ncu1 $b 8192 8192 8192 "${S2[2]}"; ncu1 $b 8192 8192 8192 "${S2[3]}"
  ncu1 $b 4096 4096 4096 "${S3[4]}"
done
} > $O/ncu.txt 2>&1
rm -f $O/tmp_ncu.txt
awk '/^==/{printf "\n%s %s %s ", $2, $3, $4} /hardware/{printf "hw=%s ", $3} /lrc2xbar/{printf "l2rd=%s ", $3} /dram__/{printf "dram=%s ", $3} /gpu__time/{printf "t=%s ", $3} /cycles_elapsed/{printf "clk=%s ", $3} /hmma/{printf "tc=%s ", $3}' $O/ncu.txt; echo
cd $O && tar czf logs.tgz ab.* && rm -rf ab.lead.* ab.gpc.*
