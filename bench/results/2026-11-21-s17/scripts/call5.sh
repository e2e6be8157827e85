#!/usr/bin/env bash
# Session 17 device call 5: L2 promotion of the operand tensor maps (promo.patch: GEMMTUNE_EXP_PROMO, experiment
# build build-exp) at rows 2000 / 2048 bytes apart. Hypothesis: a misaligned 128-byte row read straddles two lines,
# and 256-byte promotion turns each piece into a 256-byte L2 request.
set -u
O=$1
export LD_LIBRARY_PATH=build-exp GEMMTUNE_CACHE_DIR=/tmp/gtc
CFG=(--config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp"
     --config "sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6"
     --config "sm90:tile=128x192x64,stages=4,cluster=2x1,sched=pingpong,raster=m,group=7"
     --config "sm90:tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8"
     --config "cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0")
for ld in 1000 1024; do
  for pr in 256 none 128 64 256; do
    GEMMTUNE_EXP_PROMO=$pr timeout 60 build-exp/gemmtune tune --m 6000 --n 6000 --k 1000 --lda $ld --ldb $ld "${CFG[@]}" --no-cache < /dev/null > $O/t_${ld}_$pr.txt 2> $O/t_${ld}_$pr.log
    echo "== lda=ldb=$ld promo=$pr rc=$?"
    grep -A8 "side by side" $O/t_${ld}_$pr.log | grep " us " | sed 's/^ *//' | awk '{printf "%-100s %s\n", substr($1,1,100), $2}'
  done
done
M="gpu__time_duration.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
for pr in 256 none; do
  GEMMTUNE_EXP_PROMO=$pr timeout 100 ncu --clock-control none -k 'regex:^(?!gt_ref|gt_sm90_smid_probe)' --launch-skip 3 --launch-count 1 \
    --metrics $M build-exp/gemmtune tune --m 6000 --n 6000 --k 1000 --config "sm90:tile=128x176x64,stages=5,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp" --in-process \
    --no-cache --min-iters 3 --min-time-ms 0 --warmup 1 --settle-ms 0 < /dev/null > $O/ncu_$pr.txt 2>&1
  echo "== ncu promo=$pr rc=$?"; grep -E "gpu__time|hmma|lts__" $O/ncu_$pr.txt | sed 's/  */ /g'
done
tar czf $O/logs.tgz -C $O $(cd $O && ls t_* ncu_*) && (cd $O && rm -f t_* ncu_*)
