#!/usr/bin/env bash
# Session 18 device call 1: sector-aligned warp strips (epi=warp: 128-byte strips + a tail strip through a second D
# map, as cuBLASLt's 64 + 64 + 48 columns) against the session-17 build (176-byte warp pieces), side by side with
# cuBLASLt's 176x128 in each process, old / new / old / new. Then ncu: D write sectors of the new 128x176.
set -u
O=$1
export GEMMTUNE_CACHE_DIR=/tmp/gtc
LD_LIBRARY_PATH=build-lead timeout 200 build-lead/tests/gemmtune_gpu_tests \
  --gtest_filter='Sm90Gpu.WarpStrips:Sm90EpilogueGpu.WarpStripChains' > $O/warp_tests.log 2>&1
echo "warp tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $O/warp_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|Which is|threw|spills|error" $O/warp_tests.log | head -20
CFG=(--config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7,epi=warp"
     --config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp"
     --config "cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0")
for p in "8192 6144 512" "16384 6144 512" "8192 6144 1024" "4096 14336 1024" "8192 6144 4096"; do
  set -- $p
  for rep in 1 2; do
    for b in old lead; do
      L=$O/t_${1}_${2}_${3}_${b}_$rep.log
      LD_LIBRARY_PATH=build-$b GEMMTUNE_CACHE_DIR=/tmp/gtc_$b timeout 60 build-$b/gemmtune tune --m $1 --n $2 --k $3 \
        "${CFG[@]}" --no-cache < /dev/null > /dev/null 2> $L
      echo "== ${1}x${2}x${3} $b rep$rep rc=$? $(grep -A4 'side by side' $L | grep ' us ' | awk '{printf "%s ", $2}')"
    done
  done
done
M="gpu__time_duration.sum,lts__t_requests_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
for b in lead old; do
  LD_LIBRARY_PATH=build-$b GEMMTUNE_CACHE_DIR=/tmp/gtc_$b timeout 100 ncu --clock-control none \
    -k 'regex:^(?!gt_ref|gt_sm90_smid_probe)' --launch-skip 3 --launch-count 1 --metrics $M \
    build-$b/gemmtune tune --m 8192 --n 6144 --k 512 \
    --config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=m,group=7,epi=warp" --in-process \
    --no-cache --min-iters 3 --min-time-ms 0 --warmup 1 --settle-ms 0 < /dev/null > $O/ncu_$b.txt 2>&1
  echo "== ncu $b rc=$?"
  grep -E "gpu__time|hmma|lts__|dram__" $O/ncu_$b.txt | sed 's/  */ /g'
done
tar czf $O/logs.tgz -C $O $(cd $O && ls t_* ncu_*) && (cd $O && rm -f t_* ncu_*)
gzip -f $O/warp_tests.log
