#!/usr/bin/env bash
# session-6 device call 3: the L2 request coalescer (LRC) counters for cuBLAS's 176x128 vs our ping-pong 128x176.
set -u
O=$1; X=build-x
export GEMMTUNE_CACHE_DIR=/tmp/gtc
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
PP="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong"
MET=$(echo lrc__xbar2lrc_requests_op_read lrc__request_sectors_op_read_coalescable \
  lrc__request_sectors_op_read_coalescing_achieved_type_hardware lrc__request_sectors_op_read_coalescing_achieved_type_programmatic \
  lrc__request_sectors_op_read_coalescing_type_programmatic lrc__lrc2xbar_sectors_op_read lrc__xbar2gpc_sectors_op_read \
  lrc__lts2lrc_sectors_op_read lrc__xbar2lrc_requests_op_read_coalescing_type_programmatic lrc__xbar2lrc_requests_cmd_bypassed \
  lrc__lrc2xbar_sectors_op_read_coalescing_achieved_type_hardware lrc__lrc2xbar_sectors_op_read_coalescing_none \
  lts__t_sectors_srcunit_tex_op_read l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld \
  l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld_dest_multicast l1tex__m_l1tex2xbar_read_requests_mem_global_op_tma_ld_dest_multicast \
  gpu__time_duration sm__cycles_elapsed.avg.per_second | sed -E 's/ /.sum,/g; s/per_second.sum/per_second/')
MET=${MET/gpu__time_duration,/gpu__time_duration.sum,}
echo "$MET" > $O/met.txt
ncu1() {  # build config
  LD_LIBRARY_PATH=$X/$1 timeout 60 ncu --clock-control none -k 'regex:^(?!gt_ref)' --launch-skip 3 --launch-count 1 --metrics "$MET" \
    $X/$1/gemmtune tune --m ${SHAPE_M:-8192} --n ${SHAPE_N:-6144} --k ${SHAPE_K:-4096} --config "$2" --in-process --no-cache --min-iters 3 --min-time-ms 0 \
    --warmup 1 --settle-ms 0 > $O/tmp_ncu.txt 2>&1
  echo "== $1 $2 rc=$?"; grep -E "^    [a-z]+__|WARN|ERR" $O/tmp_ncu.txt
}
{
ncu1 lead "$CB176"
ncu1 lead "sm90:$PP,raster=m,group=7"
ncu1 pnone "sm90:$PP,raster=m,group=7"
ncu1 lead "sm90:tile=128x176x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=7"
ncu1 lead "sm90:$PP,raster=n,group=8"
ncu1 lead "cublaslt:default"
} > $O/ncu_lrc.txt 2>&1
rm -f $O/tmp_ncu.txt
cat $O/ncu_lrc.txt | head -150
