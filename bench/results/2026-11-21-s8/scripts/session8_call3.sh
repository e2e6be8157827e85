#!/usr/bin/env bash
# session-8 device call 3: EXPERIMENT build-x/gpc (GPC-major cluster ids) on the narrow, L2-bound tiles where cuBLAS
# leads (square_4096: its 112x128 1x2; o_proj_m2048). Builds alternated three times (lead, gpc, lead, gpc, ...), each
# run interleaving its configs with cuBLAS's kernel, so each row reads as a ratio to cuBLAS in the same process.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc GEMMTUNE_GPC_MAP=bench/results/2026-11-21-s8/call1_gpc_probe_order/gpc_map.txt
CB112="cublaslt:algo=66,tile=112x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
S1=("$CB112" "tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=m,group=5"
    "tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8"
    "tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=4"
    "tile=128x112x64,stages=7,cluster=1x2,sched=pingpong,raster=m,group=8"
    "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6"
    "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8")
S2=("$CB128" "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=m,group=8"
    "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8"
    "tile=128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=m,group=8"
    "tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=8")
for rep in 1 2 3; do
  for b in lead gpc; do
    B=build-lead; [ $b = gpc ] && B=build-x/gpc
    TIMEOUT=120 scripts/sm90_dev/ab_configs.sh $O/ab.$b.$rep $B "4096,4096,4096" "${S1[@]}" > /dev/null 2>&1
    TIMEOUT=120 scripts/sm90_dev/ab_configs.sh $O/ab.$b.$rep $B "2048,4096,4096" "${S2[@]}" > /dev/null 2>&1
  done
done
# ratio to cuBLAS per run: columns lead1 lead2 lead3 gpc1 gpc2 gpc3
for f in $O/ab.lead.1/ab_*.txt; do
  b=$(basename $f); echo "== $b   time / cuBLAS time in the same run: lead x3, gpc x3 (cuBLAS us in the header row)"
  for r in lead.1 lead.2 lead.3 gpc.1 gpc.2 gpc.3; do
    grep -E "^\*? *(sm90|cublaslt) " $O/ab.$r/$b | sed 's/^\* *//' | sort -k2 | awk '{print $2, $(NF-4), $NF}' > $O/tmp.$r
  done
  python3 - $O <<'P'
import sys
O=sys.argv[1]; runs=["lead.1","lead.2","lead.3","gpc.1","gpc.2","gpc.3"]
data={}
for r in runs:
    for l in open(f"{O}/tmp.{r}"):
        f=l.split()
        if len(f)>=2: data.setdefault(f[0],{})[r]=(float(f[1]), f[2] if len(f)>2 else "")
cb=[k for k in data if k.startswith("algo=")][0]
print("%-72s" % "cuBLAS us", " ".join("%7.1f" % data[cb][r][0] for r in runs if r in data[cb]))
for k in sorted(data):
    if k==cb: continue
    print("%-72s" % k, " ".join("%7.3f" % (data[k][r][0]/data[cb][r][0]) for r in runs if r in data[k] and r in data[cb]), data[k].get("gpc.3",(0,""))[1])
P
done | tee $O/ab_table.txt
rm -f $O/tmp.*
MET=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lrc__lrc2xbar_sectors_op_read.sum,lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,dram__bytes_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
ncu1() {  # build m n k config
  LD_LIBRARY_PATH=$1 timeout 60 ncu --clock-control none -k 'regex:^(?!gt_ref)' --launch-skip 3 --launch-count 1 --metrics $MET \
    $1/gemmtune tune --m $2 --n $3 --k $4 --config "$5" --in-process --no-cache --min-iters 3 --min-time-ms 0 \
    --warmup 1 --settle-ms 0 > $O/tmp_ncu.txt 2>&1
  echo "== $(basename $1) $2x$3x$4 $5 rc=$?"; grep -E "^    [a-z]+__|ERR|rror" $O/tmp_ncu.txt
}
{
for b in build-lead build-x/gpc; do
  ncu1 $b 4096 4096 4096 "sm90:${S1[2]}"; ncu1 $b 4096 4096 4096 "sm90:${S1[4]}"; ncu1 $b 4096 4096 4096 "sm90:${S1[6]}"
  ncu1 $b 2048 4096 4096 "sm90:${S2[2]}"
done
ncu1 build-lead 4096 4096 4096 "$CB112"
} > $O/ncu.txt 2>&1
rm -f $O/tmp_ncu.txt
awk '/^==/{printf "\n%s %s %s ", $2, $3, $4} /hardware/{printf "hw=%s ", $3} /lrc2xbar/{printf "l2rd=%s ", $3} /dram__/{printf "dram=%s ", $3} /gpu__time/{printf "t=%s ", $3} /cycles_elapsed/{printf "clk=%s ", $3} /hmma/{printf "tc=%s ", $3}' $O/ncu.txt; echo
cd $O && tar czf logs.tgz ab.* && rm -rf ab.lead.* ab.gpc.*
