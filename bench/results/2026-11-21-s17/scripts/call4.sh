#!/usr/bin/env bash
# Session 17 device call 4: at rows 2000 bytes apart both our ping-pong 128x176 and cuBLASLt's 176x128 read 2.3-2.7x
# the L2 requests and ~1.4x the sectors (call 3), but ours loses 27% and cuBLASLt's 11%. Is it imbalance between
# SMs (cuBLASLt takes tiles from a global counter; our static walk fixes 12.8 rounds per CTA)? Side by side: the
# dynamic tile order, other walks, clusters; ncu per-SM active cycles (min / avg / max).
set -u
O=$1
export LD_LIBRARY_PATH=build-lead GEMMTUNE_CACHE_DIR=/tmp/gtc
P="tile=128x176x64,stages=5"
CFG=(--config "sm90:$P,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp"
     --config "sm90:$P,cluster=2x1,sched=pingpong,raster=m,group=7,epi=warp"
     --config "sm90:$P,cluster=2x1,sched=pingpong,raster=m,group=7,tiles=dynamic,epi=warp"
     --config "sm90:$P,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=dynamic,epi=warp"
     --config "sm90:$P,cluster=1x1,sched=pingpong,raster=m,group=13,epi=warp"
     --config "sm90:$P,cluster=1x2,sched=pingpong,raster=m,group=8,tiles=gpc,epi=warp"
     --config "sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6"
     --config "sm90:tile=128x128x64,stages=6,cluster=2x1,sched=pingpong,raster=m,group=6,tiles=dynamic"
     --config "sm90:tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8"
     --config "sm90:tile=128x256x64,stages=4,cluster=2x1,sched=coop,raster=m,group=8,tiles=dynamic"
     --config "cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0")
for ld in 1000 1024 1000; do
  timeout 90 build-lead/gemmtune tune --m 6000 --n 6000 --k 1000 --lda $ld --ldb $ld "${CFG[@]}" --no-cache < /dev/null > $O/t_$ld.txt 2> $O/t_$ld.log
  echo "== 6000x6000x1000 lda=ldb=$ld rc=$?"
  grep -A14 "side by side" $O/t_$ld.log | grep " us " | sed 's/^ *//' | awk '{printf "%-100s %s\n", substr($1,1,100), $2}'
done
M="gpu__time_duration.sum,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.avg,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_requests_srcunit_tex_op_read.sum,lts__average_t_sector_hit_rate_realtime.pct"
i=0
for ld in 1000 1024; do
  for cfg in "sm90:$P,cluster=2x1,sched=pingpong,raster=n,group=8,tiles=gpc,epi=warp" "sm90:$P,cluster=2x1,sched=pingpong,raster=m,group=7,tiles=dynamic,epi=warp" \
             "cublaslt:algo=66,tile=176x128,stages=64xAUTO,splitk=1,red=0,swizzle=0,custom=2,cluster=1x2x1,inner=0"; do
    i=$((i+1))
    timeout 100 ncu --clock-control none -k 'regex:^(?!gt_ref|gt_sm90_smid_probe)' --launch-skip 3 --launch-count 1 \
      --metrics $M build-lead/gemmtune tune --m 6000 --n 6000 --k 1000 --lda $ld --ldb $ld --config "$cfg" --in-process \
      --no-cache --min-iters 3 --min-time-ms 0 --warmup 1 --settle-ms 0 < /dev/null > $O/ncu_$i.txt 2>&1
    echo "== ncu $i lda=ldb=$ld $cfg rc=$?"
    grep -E "gpu__time|cycles_active|cycles_elapsed|hmma|lts__" $O/ncu_$i.txt | sed 's/  */ /g' | head -12
  done
done
tar czf $O/logs.tgz -C $O $(cd $O && ls t_* ncu_*) && (cd $O && rm -f t_* ncu_*)
