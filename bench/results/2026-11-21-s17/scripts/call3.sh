#!/usr/bin/env bash
# Session 17 device call 3: rows 2000 bytes apart (K = 1000) slow our 128-row ping-pong tiles by 15-40% at
# 6000x6000x1000 and cuBLASLt's 176x128 kernel by ~1.5% (call 2). Which kernel does cuBLASLt run there, and where do
# our extra cycles go (L2 requests / sectors, TMA)? ncu, one launch each, clocks free, pitch 2000 vs 2048 bytes.
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex.sum,lts__t_requests_srcunit_tex.sum,lts__t_sectors.sum,lts__t_requests.sum,lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,lts__t_sectors_srcunit_ltcfabric.sum,dram__bytes_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum"
i=0
for ld in 1000 1024; do
  for cfg in "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp" \
             "sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6" \
             "cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0" \
             "cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"; do
    i=$((i+1))
    timeout 120 ncu --clock-control none -k 'regex:^(?!gt_ref|gt_sm90_smid_probe)' --launch-skip 3 --launch-count 1 \
      --metrics $M build-lead/gemmtune tune --m 6000 --n 6000 --k 1000 --lda $ld --ldb $ld --config "$cfg" --in-process \
      --no-cache --min-iters 3 --min-time-ms 0 --warmup 1 --settle-ms 0 < /dev/null > $O/ncu_$i.txt 2>&1
    echo "== $i lda=ldb=$ld $cfg rc=$?"
    grep -E "^  [a-zA-Z_0-9]+.*\(|gpu__time|cycles_elapsed|hmma|lts__|lrc__|dram__|inst_executed" $O/ncu_$i.txt | sed 's/  */ /g' | head -24
  done
done
tar czf $O/ncu.tgz -C $O $(cd $O && ls ncu_*.txt) && rm -f $O/ncu_*.txt
