#!/usr/bin/env bash
# session-6 device call 1: where do cuBLAS's 176x128 kernel and our ping-pong 128x176 differ in L2 traffic?
# L2 traffic broken down by source unit (SM / L2 fabric / ...), the memory tables, and cuBLAS's SASS.
set -u
O=$1; B=build-lead
export GEMMTUNE_CACHE_DIR=/tmp/gtc LD_LIBRARY_PATH=$B
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv,noheader > $O/smi.txt
ncu --query-metrics --chip gh100 > $O/metrics_gh100.txt 2>&1
# every lts__t_{sectors,requests} split by source unit / node / op that this ncu knows
M=$(awk '{print $1}' $O/metrics_gh100.txt | grep -E '^lts__t_(sectors|requests)_(srcunit|srcnode)_[a-z0-9]+(_op_(read|write))?$' | sed 's/$/.sum/' | paste -sd, -)
M="$M,lts__t_bytes.sum,lts__t_sectors.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum"
echo "$M" > $O/metric_list.txt
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
PP2="sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7"
PP1="sm90:tile=128x176x64,stages=5,cluster=1x1,sched=pingpong,raster=m,group=7"
i=0
for cfg in "$CB176" "$PP2" "$PP1"; do
  i=$((i+1))
  timeout 150 ncu --clock-control none -k 'regex:^(?!gt_ref)' --launch-skip 3 --launch-count 1 \
    --section MemoryWorkloadAnalysis_Tables --metrics "$M" \
    $B/gemmtune tune --m 8192 --n 6144 --k 4096 --config "$cfg" --in-process --no-cache --min-iters 3 \
    --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/l2_$i.txt 2>&1
  echo "l2 $i $cfg rc=$?"
done
# cuBLAS's SASS (source page)
timeout 200 ncu --clock-control none -k 'regex:^nvjet' --launch-skip 3 --launch-count 1 --section SourceCounters \
  --page source --print-source sass $B/gemmtune tune --m 8192 --n 6144 --k 4096 --config "$CB176" --in-process \
  --no-cache --min-iters 3 --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/cublas_sass.txt 2>&1
echo "sass rc=$? $(wc -c < $O/cublas_sass.txt)"
cd $O && gzip -f cublas_sass.txt metrics_gh100.txt; ls -la
