#!/usr/bin/env bash
# session-11 device call 5: the ping-pong hand-over right after the last stage's commit (build-lead) instead of after
# its wait_group 1 (build-prev = HEAD 8806526). Ping-pong GPU tests on the new build, then side by side with
# cuBLASLt's best in each run, builds alternating, and ncu at base clock (active cycles vs tensor-pipe busy cycles).
set -u
O=$1
LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc_t timeout 150 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='Sm90Gpu.ShapesLayoutsDtypesConfigs:Sm90Gpu.ManyTilesPerCta:Sm90Gpu.StreamKTail' > $O/gpu_tests.log 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/gpu_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|err=|spills" $O/gpu_tests.log | head -20
gzip -f $O/gpu_tests.log
CB176="cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
CB128="cublaslt:algo=66,tile=128x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=1,cluster=2x1x1,inner=0"
CB168="cublaslt:algo=66,tile=168x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"
P176="tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P128="tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
P168="tile=128x168x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc"
for rep in 1 2; do
  for b in build-prev build-lead; do
    export GEMMTUNE_CACHE_DIR=/tmp/gtc_ab_$b
    echo "#### rep $rep $b"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "8192,6144,4096" "$CB176" "$P176"
    TIMEOUT=40 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "4096,4096,4096" "$CB128" "$P128"
    TIMEOUT=60 scripts/sm90_dev/ab_configs.sh $O/ab_${b}_$rep $b "4096,10240,8192" "$CB168" "$P168"
  done
done
M="gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_active.avg,sm__pipe_tensor_op_hmma_cycles_active.avg,smsp__inst_executed.sum"
for b in build-prev build-lead build-prev build-lead; do
  LD_LIBRARY_PATH=$b GEMMTUNE_CACHE_DIR=/tmp/gtc_ab_$b timeout 60 ncu --clock-control base -k 'regex:^gt_sm90_pp' \
    --launch-skip 2 --launch-count 1 --metrics $M $b/gemmtune tune --m 8192 --n 6144 --k 4096 --config "sm90:$P176" \
    --in-process --no-cache --min-iters 5 --min-time-ms 0 --warmup 1 --settle-ms 0 > $O/ncu_$b.txt 2>&1
  echo "ncu $b: $(grep -E '^ +(gpu__|sm__|smsp__)' $O/ncu_$b.txt | awk '{print $1, $NF}' | tr '\n' ' ')"
done
for f in $O/ab_*/*.log; do gzip -f $f; done
