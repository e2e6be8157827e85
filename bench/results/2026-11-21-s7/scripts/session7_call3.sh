#!/usr/bin/env bash
# session-7 device call 3: Sm90Gpu tests (dynamic order: consumer reads the slot with all lanes); narrow tiles that
# fill waves (4096^3 in 128x112: 8.97 waves) against cuBLAS's 112x128 1x2 kernel, side by side + ncu.
set -u
O=$1; B=build-x/new
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
timeout 200 $B/gemmtune_gpu_tests --gtest_filter='Sm90Gpu.*' > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "FAILED|Failure|Expected|Which is" $O/gpu_tests.log | head -20
CB112="cublaslt:algo=66,tile=112x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
for rep in 1 2; do
  TIMEOUT=120 scripts/sm90_dev/ab_configs.sh $O/ab.$rep $B "4096,4096,4096" "$CB112" "cublaslt:default" \
    "tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=m,group=5" "tile=128x112x64,stages=7,cluster=1x2,sched=pingpong,raster=m,group=11" \
    "tile=128x112x64,stages=7,cluster=1x1,sched=pingpong,raster=m,group=11" "tile=128x112x64,stages=7,cluster=2x1,sched=coop,raster=m,group=5" \
    "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6" "tile=256x128x64,stages=4,cluster=2x1,sched=coop,raster=m,group=4" \
    "tile=128x208x64,stages=5,cluster=2x1,sched=coop,raster=m,group=7" > /dev/null 2>&1
  TIMEOUT=120 scripts/sm90_dev/ab_configs.sh $O/ab.$rep $B "2048,4096,4096" "$CB128" "cublaslt:default" \
    "tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=11" "tile=128x128x64,stages=6,cluster=1x2,sched=pingpong,raster=n,group=6" \
    "tile=128x256x64,stages=4,cluster=1x1,sched=coop,raster=n,group=8" "tile=256x128x64,stages=4,cluster=1x1,sched=coop,raster=n,group=16" \
    "tile=128x128x64,stages=6,cluster=1x2,sched=coop,raster=n,group=6" "tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=n,group=5" > /dev/null 2>&1
done
for f in $O/ab.1/ab_*.txt; do
  b=$(basename $f); echo "== $b"
  paste <(grep -E "^\*? *(sm90|cublaslt) " $f | sed 's/^\* *//' | awk '{print $2, $(NF-4)}') <(grep -E "^\*? *(sm90|cublaslt) " $O/ab.2/$b | sed 's/^\* *//' | awk '{print $(NF-4)}')
done | tee $O/ab_table.txt
MET=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lrc__lrc2xbar_sectors_op_read.sum,lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,dram__bytes_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active
ncu1() {
  timeout 60 ncu --clock-control none -k 'regex:^(?!gt_ref)' --launch-skip 3 --launch-count 1 --metrics $MET \
    $B/gemmtune tune --m 4096 --n 4096 --k 4096 --config "$1" --in-process --no-cache --min-iters 3 --min-time-ms 0 \
    --warmup 1 --settle-ms 0 > $O/tmp_ncu.txt 2>&1
  echo "== $1 rc=$?"; grep -E "^    [a-z]+__|ERR|==PROF==" $O/tmp_ncu.txt | grep -v "Connected"
}
{ ncu1 "$CB112"; ncu1 "sm90:tile=128x112x64,stages=7,cluster=2x1,sched=pingpong,raster=m,group=5"; ncu1 "sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6"; } > $O/ncu.txt 2>&1
rm -f $O/tmp_ncu.txt; cat $O/ncu.txt | grep -E "^==|__" | awk '{print $1, $2, $NF}'
cd $O && tar czf logs.tgz ab.1 ab.2 gpu_tests.log && rm -rf ab.1 ab.2 gpu_tests.log
