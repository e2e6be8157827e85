#!/usr/bin/env bash
# session-7 device call 1: dynamic tile order taken by the producer at need (build-x/new: 2 k-blocks before the end
# of the current tile's loads; build-x/fa_start: at the start of the current tile's loads, one tile ahead).
# GPU tests + sanitizer on the new order, L2 request coalescer counters, side-by-side timing vs static and cuBLAS.
set -u
O=$1; B=build-x/new
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader > $O/smi.txt
timeout 200 $B/gemmtune_gpu_tests --gtest_filter='Sm90Gpu.*' > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "FAILED|Failure|Expected|Which is" $O/gpu_tests.log | head -20
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
PP="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong"
MET=lrc__request_sectors_op_read_coalescable.sum,lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,lrc__lrc2xbar_sectors_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum,dram__bytes_read.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
ncu1() {  # build config
  timeout 60 ncu --clock-control none -k 'regex:^(?!gt_ref)' --launch-skip 3 --launch-count 1 --metrics $MET \
    $1/gemmtune tune --m 8192 --n 6144 --k 4096 --config "$2" --in-process --no-cache --min-iters 3 --min-time-ms 0 \
    --warmup 1 --settle-ms 0 > $O/tmp_ncu.txt 2>&1
  echo "== $(basename $1) $2 rc=$?"; grep -E "^    [a-z]+__|ERR" $O/tmp_ncu.txt
}
{
ncu1 $B "$CB176"
ncu1 $B "sm90:$PP,raster=m,group=7"
for b in build-x/new build-x/fa_start; do
  for r in "m,group=7" "n,group=8" "n,group=4"; do ncu1 $b "sm90:$PP,raster=$r,tiles=dynamic"; done
done
} > $O/ncu_lrc.txt 2>&1
rm -f $O/tmp_ncu.txt
awk '/^==/{printf "\n%s %s ", $2, $3} /hardware/{printf "hw=%s ", $3} /lrc2xbar/{printf "l2rd=%s ", $3} /ltcfabric/{printf "fab=%s ", $3} /dram__/{printf "dram=%s ", $3} /gpu__time/{printf "t=%s ", $3} /cycles_elapsed/{printf "clk=%s ", $3}' $O/ncu_lrc.txt; echo
S="sm90:$PP"
for rep in 1 2; do
  TIMEOUT=100 scripts/sm90_dev/ab_configs.sh $O/ab.$rep $B "8192,6144,4096" "$CB176" "$S,raster=m,group=7" "$S,raster=m,group=7,tiles=dynamic" \
    "$S,raster=n,group=8,tiles=dynamic" "$S,raster=n,group=4,tiles=dynamic" > /dev/null 2>&1
  TIMEOUT=100 scripts/sm90_dev/ab_configs.sh $O/ab.$rep $B "8192,8192,8192" "$CB176" \
    "$PP,raster=m,group=8" "$PP,raster=m,group=8,tiles=dynamic" "$PP,raster=n,group=8,tiles=dynamic" > /dev/null 2>&1
  TIMEOUT=100 scripts/sm90_dev/ab_configs.sh $O/ab.$rep $B "4096,4096,4096" "cublaslt:default" \
    "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6" "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6,tiles=dynamic" \
    "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=6,tiles=dynamic" "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=4" \
    "tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=4,tiles=dynamic" > /dev/null 2>&1
done
for f in $O/ab.1/ab_*.txt; do
  b=$(basename $f); echo "== $b"
  paste <(grep -E "^\*? *(sm90|cublaslt) " $f | sed 's/^\* *//' | awk '{print $2, $(NF-4)}') <(grep -E "^\*? *(sm90|cublaslt) " $O/ab.2/$b | sed 's/^\* *//' | awk '{print $(NF-4)}')
done | tee $O/ab_table.txt
timeout 150 scripts/sanitize_sm90.sh $O/sanitize.log $B/gemmtune 45 \
  "tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7,tiles=dynamic" \
  "tile=128x256x64,stages=4,cluster=1x2,sched=coop,raster=n,group=4,tiles=dynamic"
echo "sanitize rc=$?"; grep -E "ERROR SUMMARY|rc=" $O/sanitize.log | head
cd $O && gzip -f sanitize.log; tar czf logs.tgz ab.1 ab.2 gpu_tests.log ncu_lrc.txt sanitize.log.gz && rm -rf ab.1 ab.2 gpu_tests.log sanitize.log.gz
