#!/usr/bin/env bash
# session-6 device call 2: does the tile walk (raster, band, serpentine) or the TMA L2 promotion change the L2 sectors
# the SMs request (lts tex sectors), and the time? Builds: lead (HEAD), serp (serpentine bands), p128 / pnone
# (serpentine + L2 promotion 128B / none).
set -u
O=$1; X=build-x
export GEMMTUNE_CACHE_DIR=/tmp/gtc
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader > $O/smi.txt
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
PP="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong"
MET=lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum,dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
ncu1() {  # build label config
  LD_LIBRARY_PATH=$X/$1 timeout 60 ncu --clock-control none -k 'regex:^(?!gt_ref)' --launch-skip 3 --launch-count 1 --metrics $MET \
    $X/$1/gemmtune tune --m 8192 --n 6144 --k 4096 --config "$2" --in-process --no-cache --min-iters 3 --min-time-ms 0 \
    --warmup 1 --settle-ms 0 > $O/tmp_ncu.txt 2>&1
  echo "== $1 $2 rc=$?"; grep -E "lts__|dram__|gpu__time|cycles_elapsed|hmma" $O/tmp_ncu.txt
}
{
ncu1 lead "$CB176"
for g in 7 2 16; do ncu1 lead "sm90:$PP,raster=m,group=$g"; done
for g in 4 8; do ncu1 lead "sm90:$PP,raster=n,group=$g"; done
ncu1 serp "sm90:$PP,raster=m,group=7"
ncu1 serp "sm90:$PP,raster=n,group=4"
ncu1 p128 "sm90:$PP,raster=m,group=7"
ncu1 pnone "sm90:$PP,raster=m,group=7"
} > $O/ncu_l2.txt 2>&1
echo "ncu done"
export SHAPES="8192,6144,4096 8192,8192,8192 4096,4096,4096" EXTRA="$CB176" TIMEOUT=100
export PATTERNS="128x176x64,.*cluster=2x1,sched=pingpong 128x128x64,.*cluster=2x1,sched=pingpong 128x256x64,.*cluster=2x1,sched=coop"
for rep in 1 2; do
  for v in lead serp p128 pnone; do
    LIST_BUILD=$X/lead scripts/sm90_dev/side_by_side.sh $O/sbs/$v.$rep $X/$v > $O/sbs_$v.$rep.txt 2>&1
  done
done
echo "sbs done"
python3 scripts/sm90_dev/sbs_table.py $O/sbs/lead.1 $O/sbs/serp.1 $O/sbs/p128.1 $O/sbs/pnone.1 $O/sbs/lead.2 $O/sbs/serp.2 $O/sbs/p128.2 $O/sbs/pnone.2 > $O/table.txt
cat $O/table.txt
rm -f $O/tmp_ncu.txt
