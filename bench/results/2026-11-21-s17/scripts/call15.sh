#!/usr/bin/env bash
# Session 17 device call 15: a lead for next time. Our 128x176 epi=warp stores 176-byte pieces (each 352-byte tile row
# split mid-sector between two stores); nvjet's 176x128 stores 128 / 128 / 96-byte pieces, every one sector-aligned.
# Do the D writes cost ours more L2 write requests / sectors, or DRAM reads (partial sectors merged from DRAM)?
# ncu, one launch, clocks free; 128x192 (128-byte strips, aligned) alongside.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
M="gpu__time_duration.sum,lts__t_requests_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
i=0
for k in 512 4096; do
  for cfg in "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp" \
             "cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0" \
             "sm90:tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"; do
    i=$((i+1))
    timeout 100 ncu --clock-control none -k 'regex:^(?!gt_ref|gt_sm90_smid_probe)' --launch-skip 3 --launch-count 1 \
      --metrics $M build-lead/gemmtune tune --m 8192 --n 6144 --k $k --config "$cfg" --in-process \
      --no-cache --min-iters 3 --min-time-ms 0 --warmup 1 --settle-ms 0 < /dev/null > $O/ncu_$i.txt 2>&1
    echo "== $i K=$k $cfg rc=$?"
    grep -E "gpu__time|hmma|lts__|dram__" $O/ncu_$i.txt | sed 's/  */ /g'
  done
done
tar czf $O/ncu.tgz -C $O $(cd $O && ls ncu_*) && rm -f $O/ncu_*
